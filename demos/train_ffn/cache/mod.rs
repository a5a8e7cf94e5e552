//! Where the FFN hidden activation lives between forward and backward: the one thing that differs
//! between the trainer's modes.
//!
//! The model hands every cache the same three step buffers: `z` (the BF16 pre-activation of the layer
//! being run forward), `g` (dL/da of the layer being run backward, BF16) and `dz` (where dL/dz goes).
//! A cache's `forward` must leave a = bf16(relu(z)²) in `forward_a(l)` and keep what its `backward`
//! needs; `backward` must write dz = bf16(2·r·g) and leave a in `backward_a(l)` for the dW₂ GEMM.
//! Because every mode computes those with the same formulas (docs/CONVENTIONS.md), the modes are
//! bit-identical — which the trainer checks at every step.
//!
//! Modes: [`DenseCache`] (autograd baseline x + r + a, or minimal x + r), [`ArenaCache`] (BitSparse:
//! the library's GPU arena with its fused forward/backward kernels; the weight update is gated on the
//! arena's "step ok") and [`CodecCache`] (BitSparse through the plain codec into worst-case slots,
//! kept as a cross-check of the arena path).

pub mod arena;
mod codec;
mod dense;

use bitsparse::arena::GateArgs;
use bitsparse::Result;

use super::config::{CacheMode, Config};
use super::gpu::{grid_1d, Bind, Dispatch, Gpu, Kernel};
pub use arena::ArenaCache;
pub use codec::CodecCache;
pub use dense::DenseCache;

/// The per-step buffers every cache works on (owned by the model).
pub struct StepBuffers<'a> {
    pub z: &'a wgpu::Buffer,
    pub g: &'a wgpu::Buffer,
    pub dz: &'a wgpu::Buffer,
}

/// What a cache holds for the hidden activation of one layer, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerBytes {
    /// Bytes of the kept form (dense tensors, or the compressed stream: header, tile offsets, mask,
    /// values and padding).
    pub stored: u64,
    /// Bytes the trainer reserved for it (the worst case for a compressed form without an arena).
    pub reserved: u64,
}

/// What a cache holds, from its own (or the library's) accounting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheBytes {
    /// Per layer.
    pub layers: Vec<LayerBytes>,
    /// Bytes held beyond the layers' streams (arena alignment slack between tensors).
    pub slack: u64,
    /// Bytes reserved in all (arena capacity, or the sum of the per-layer reservations).
    pub reserved: u64,
}

impl CacheBytes {
    /// Everything held: streams plus slack.
    pub fn stored(&self) -> u64 {
        self.layers.iter().map(|l| l.stored).sum::<u64>() + self.slack
    }
}

/// The hook a cache mode implements.
pub trait HiddenCache {
    /// Name for reports.
    fn name(&self) -> &'static str;
    /// Where `forward(l)` leaves a (read by the W₂ GEMM).
    fn forward_a(&self, l: usize) -> &wgpu::Buffer;
    /// Where `backward(l)` leaves a (read by the dW₂ GEMM).
    fn backward_a(&self, l: usize) -> &wgpu::Buffer;
    /// Start of a step (before layer 0's forward).
    fn begin_step(&mut self, _enc: &mut wgpu::CommandEncoder) -> Result<()> {
        Ok(())
    }
    /// Forward of layer `l`: z → a, keep r.
    fn forward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()>;
    /// Backward of layer `l`: (kept r, g) → dz and a.
    fn backward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()>;
    /// Records the gate of the weight update, after the step's last push: indirect dispatch arguments
    /// that become (0, 0, 0) when the step failed. `None`: the update is not gated.
    fn gate(&mut self, _enc: &mut wgpu::CommandEncoder, _grid: (u32, u32, u32)) -> Result<Option<GateArgs>> {
        Ok(None)
    }
    /// At a logging point (synchronises): did every step since the last check succeed? On `Ok(false)`
    /// the cache has already grown itself and the caller must restore its checkpoint and re-run the
    /// steps since then (the failed steps changed no weights). Other failures are errors.
    fn verify(&mut self, _gpu: &Gpu) -> Result<bool> {
        Ok(true)
    }
    /// The dense r of layer `l` after its forward, where the mode keeps one (BF16).
    fn dense_r(&self, _l: usize) -> Option<&wgpu::Buffer> {
        None
    }
    /// Times the cache shrank its reservation to follow the data (arena).
    fn resizes(&self) -> u32 {
        0
    }
    /// Bytes held after the last forward. Compressed modes read sizes back from the GPU, so call this
    /// only at logging points (it synchronises).
    fn bytes(&self, gpu: &Gpu) -> Result<CacheBytes>;
}

/// Builds the cache of `mode`.
pub fn build(mode: CacheMode, gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config) -> Result<Box<dyn HiddenCache>> {
    Ok(match mode {
        CacheMode::DenseBaseline => Box::new(DenseCache::new(gpu, bufs, cfg, true)?),
        CacheMode::DenseMinimal => Box::new(DenseCache::new(gpu, bufs, cfg, false)?),
        CacheMode::BitSparse => Box::new(ArenaCache::new(gpu, bufs, cfg, None)?),
        CacheMode::BitSparseFp8(format) => Box::new(ArenaCache::new(gpu, bufs, cfg, Some(format))?),
        CacheMode::BitSparseCodec => Box::new(CodecCache::new(gpu, bufs, cfg)?),
    })
}

/// Elements of one layer's hidden activation, T × 4d.
pub(super) fn hidden_elems(cfg: &Config) -> u64 {
    cfg.tokens as u64 * cfg.hidden() as u64
}

/// The trainer's dense forward activation kernel: z → r (kept) and a.
pub(super) fn act_forward(
    gpu: &mut Gpu,
    z: &wgpu::Buffer,
    r: &wgpu::Buffer,
    a: &wgpu::Buffer,
    words: u64,
) -> Result<Dispatch> {
    gpu.dispatch(
        "act_forward",
        Kernel::ActForward,
        [words as u32, 1, 0, 0, 0, 0, 0, 0],
        &[Bind::whole(z), Bind::whole(r), Bind::whole(a)],
        grid_1d(words),
    )
}

/// The trainer's dense backward activation kernel: (r, g) → dz, and a when asked.
pub(super) fn act_backward(
    gpu: &mut Gpu,
    r: &wgpu::Buffer,
    g: &wgpu::Buffer,
    dz: &wgpu::Buffer,
    a: Option<&wgpu::Buffer>,
    words: u64,
) -> Result<Dispatch> {
    let mut binds = vec![Bind::whole(r), Bind::whole(g), Bind::whole(dz)];
    if let Some(a) = a {
        binds.push(Bind::whole(a));
    }
    gpu.dispatch(
        "act_backward",
        Kernel::ActBackward,
        [words as u32, a.is_some() as u32, 0, 0, 0, 0, 0, 0],
        &binds,
        grid_1d(words),
    )
}
