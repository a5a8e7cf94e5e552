//! Where the FFN hidden activation lives between forward and backward: the one thing that differs
//! between the trainer's modes.
//!
//! The model hands every cache the same three step buffers: `z` (the BF16 pre-activation of the layer
//! being run forward), `g` (dL/da of the layer being run backward, BF16) and `dz` (where dL/dz goes).
//! A cache's `forward` must leave a = bf16(relu(z)²) in `forward_a(l)` and keep what its `backward`
//! needs; `backward` must write dz = bf16(2·r·g) and leave a in `backward_a(l)` for the dW₂ GEMM.
//! Because every mode computes those with the same formulas (CONVENTIONS.md), the modes are
//! bit-identical — which the trainer checks at every step.
//!
//! Modes: [`DenseCache`] (autograd baseline x + r + a, or minimal x + r), [`ArenaCache`] (BitSparse:
//! the library's GPU arena with its fused forward/backward kernels; the weight update is gated on the
//! arena's "step ok") and [`CodecCache`] (BitSparse through the plain codec into worst-case slots,
//! kept as a cross-check of the arena path).

use bitsparse::arena::{Arena, ArenaConfig, ArenaSizer, ArenaStatus, GateArgs, Slot};
use bitsparse::fused::Activation;
use bitsparse::{BufferRange, Codec, Compressed, DType, Layout, Options, Result};

use super::config::{CacheMode, Config};
use super::gpu::{grid_1d, record, Bind, Dispatch, Gpu, Kernel};

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
    /// values and padding, plus any arena slack).
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
        CacheMode::BitSparse => Box::new(ArenaCache::new(gpu, bufs, cfg)?),
        CacheMode::BitSparseCodec => Box::new(CodecCache::new(gpu, bufs, cfg)?),
    })
}

fn hidden_elems(cfg: &Config) -> u64 {
    cfg.tokens as u64 * cfg.hidden() as u64
}

fn act_forward(gpu: &mut Gpu, z: &wgpu::Buffer, r: &wgpu::Buffer, a: &wgpu::Buffer, words: u64) -> Result<Dispatch> {
    gpu.dispatch(
        "act_forward",
        Kernel::ActForward,
        [words as u32, 1, 0, 0, 0, 0, 0, 0],
        &[Bind::whole(z), Bind::whole(r), Bind::whole(a)],
        grid_1d(words),
    )
}

fn act_backward(gpu: &mut Gpu, r: &wgpu::Buffer, g: &wgpu::Buffer, dz: &wgpu::Buffer, a: Option<&wgpu::Buffer>, words: u64) -> Result<Dispatch> {
    let mut binds = vec![Bind::whole(r), Bind::whole(g), Bind::whole(dz)];
    if let Some(a) = a {
        binds.push(Bind::whole(a));
    }
    gpu.dispatch("act_backward", Kernel::ActBackward, [words as u32, a.is_some() as u32, 0, 0, 0, 0, 0, 0], &binds, grid_1d(words))
}

/// Dense r (and a, for the autograd baseline) per layer.
pub struct DenseCache {
    keep_a: bool,
    r: Vec<wgpu::Buffer>,
    /// Per layer when `keep_a`, else one scratch buffer.
    a: Vec<wgpu::Buffer>,
    fwd: Vec<Dispatch>,
    bwd: Vec<Dispatch>,
    bytes: u64,
}

impl DenseCache {
    fn new(gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config, keep_a: bool) -> Result<DenseCache> {
        let n = hidden_elems(cfg);
        let bytes = n * 2;
        let layers = cfg.layers as usize;
        let r: Vec<_> = (0..layers).map(|_| gpu.buffer("cache.r", bytes)).collect();
        let a: Vec<_> = (0..if keep_a { layers } else { 1 }).map(|_| gpu.buffer("cache.a", bytes)).collect();
        let mut fwd = Vec::new();
        let mut bwd = Vec::new();
        for l in 0..layers {
            let al = &a[if keep_a { l } else { 0 }];
            fwd.push(act_forward(gpu, bufs.z, &r[l], al, n / 2)?);
            bwd.push(act_backward(gpu, &r[l], bufs.g, bufs.dz, if keep_a { None } else { Some(al) }, n / 2)?);
        }
        Ok(DenseCache { keep_a, r, a, fwd, bwd, bytes })
    }
}

impl HiddenCache for DenseCache {
    fn name(&self) -> &'static str {
        if self.keep_a {
            CacheMode::DenseBaseline.name()
        } else {
            CacheMode::DenseMinimal.name()
        }
    }
    fn forward_a(&self, l: usize) -> &wgpu::Buffer {
        &self.a[if self.keep_a { l } else { 0 }]
    }
    fn backward_a(&self, l: usize) -> &wgpu::Buffer {
        self.forward_a(l)
    }
    fn forward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        record(enc, "cache.forward", std::slice::from_ref(&self.fwd[l]));
        Ok(())
    }
    fn backward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        record(enc, "cache.backward", std::slice::from_ref(&self.bwd[l]));
        Ok(())
    }
    fn bytes(&self, _gpu: &Gpu) -> Result<CacheBytes> {
        let per = if self.keep_a { 2 * self.bytes } else { self.bytes };
        let layers: Vec<_> = self.r.iter().map(|_| LayerBytes { stored: per, reserved: per }).collect();
        Ok(CacheBytes { reserved: per * layers.len() as u64, layers, slack: 0 })
    }
}

/// BitSparse through the library's plain codec: the forward writes r to a scratch buffer and compresses
/// it into a per-layer slot sized for the worst case; the backward decompresses it and recomputes a and
/// dz with the trainer's own activation kernels. Stand-in until the arena and fused kernels land: the
/// *stored* bytes are what an arena would hold, the *reserved* bytes are the worst-case slots.
pub struct CodecCache {
    codec: Codec,
    r_scratch: wgpu::Buffer,
    a_scratch: wgpu::Buffer,
    slots: Vec<wgpu::Buffer>,
    compressed: Vec<Option<Compressed>>,
    layout: Layout,
    options: Options,
    fwd: Dispatch,
    bwd: Dispatch,
}

impl CodecCache {
    fn new(gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config) -> Result<CodecCache> {
        let codec = Codec::new(&gpu.device)?;
        let n = hidden_elems(cfg);
        let options = Options { sign_pack: cfg.sign_pack };
        let layout = Layout::new(DType::Bf16, n, options)?;
        let cap = codec.output_capacity(DType::Bf16, n, options)?;
        let r_scratch = gpu.buffer("cache.r_scratch", n * 2);
        let a_scratch = gpu.buffer("cache.a_scratch", n * 2);
        let slots = (0..cfg.layers).map(|_| gpu.buffer("cache.slot", cap)).collect();
        let fwd = act_forward(gpu, bufs.z, &r_scratch, &a_scratch, n / 2)?;
        let bwd = act_backward(gpu, &r_scratch, bufs.g, bufs.dz, Some(&a_scratch), n / 2)?;
        Ok(CodecCache { codec, r_scratch, a_scratch, slots, compressed: vec![None; cfg.layers as usize], layout, options, fwd, bwd })
    }
}

impl HiddenCache for CodecCache {
    fn name(&self) -> &'static str {
        CacheMode::BitSparseCodec.name()
    }
    fn forward_a(&self, _l: usize) -> &wgpu::Buffer {
        &self.a_scratch
    }
    fn backward_a(&self, _l: usize) -> &wgpu::Buffer {
        &self.a_scratch
    }
    fn forward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        record(enc, "cache.forward", std::slice::from_ref(&self.fwd));
        let input = BufferRange::new(&self.r_scratch, 0, self.layout.dense_bytes());
        let c = self.codec.compress(enc, input, DType::Bf16, self.layout.n, self.options, BufferRange::whole(&self.slots[l]))?;
        self.compressed[l] = Some(c);
        Ok(())
    }
    fn backward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        let c = self.compressed[l]
            .as_ref()
            .ok_or_else(|| bitsparse::Error::InvalidArgument(format!("backward of layer {l} before its forward")))?;
        self.codec.decompress(enc, c, BufferRange::new(&self.r_scratch, 0, self.layout.dense_bytes()))?;
        record(enc, "cache.backward", std::slice::from_ref(&self.bwd));
        Ok(())
    }
    fn bytes(&self, gpu: &Gpu) -> Result<CacheBytes> {
        let mut layers = Vec::new();
        for c in &self.compressed {
            let c = c.as_ref().ok_or_else(|| bitsparse::Error::InvalidArgument("no forward recorded yet".into()))?;
            let h = bitsparse::host::read_header(&gpu.device, &gpu.queue, c)?;
            bitsparse::host::check_status(&h, &c.layout)?;
            layers.push(LayerBytes { stored: c.layout.compact_bytes(h.value_words as u64), reserved: c.size });
        }
        Ok(CacheBytes { reserved: layers.iter().map(|l| l.reserved).sum(), layers, slack: 0 })
    }
}

/// BitSparse through the library's GPU arena and fused kernels: the forward's one pass over z writes the
/// dense a for the W₂ GEMM and pushes the compressed r into the arena; the backward's one pass over the
/// compressed r and g writes dz and the a the dW₂ GEMM needs. The arena is reset at the start of each
/// step (whole-step release) and the weight update is gated on it, so an overflowing step changes no
/// weights; [`HiddenCache::verify`] finds that at the next logging point, grows the arena with the
/// library's [`ArenaSizer`] and asks the trainer to re-run from its checkpoint. When the same policy
/// says half the capacity would do (the density fell), the arena is shrunk before the next step.
pub struct ArenaCache {
    codec: Codec,
    arena: Arena,
    slots: Vec<Option<Slot>>,
    z: wgpu::Buffer,
    g: wgpu::Buffer,
    dz: wgpu::Buffer,
    a_scratch: wgpu::Buffer,
    n: u64,
    options: Options,
    /// A smaller capacity chosen at a logging point, applied at the next step's start (so the last
    /// step's slots stay readable until then).
    pending_capacity: Option<u64>,
    /// Times the arena was shrunk to follow the falling density.
    pub shrinks: u32,
}

/// The arena capacity the trainer starts with: the compressed size of every layer at density `rho`,
/// plus the sizing policy's headroom, rounded to 16 bytes.
pub fn initial_arena_bytes(cfg: &Config, rho: f64) -> Result<u64> {
    let n = hidden_elems(cfg);
    let layout = Layout::new(DType::Bf16, n, Options { sign_pack: cfg.sign_pack })?;
    let values = (n as f64 * rho * layout.value_width() as f64 / 32.0).ceil() as u64 + layout.tiles;
    let per_layer = layout.compact_bytes(values) + 256;
    let total = (per_layer * cfg.layers as u64) as f64 * (1.0 + ArenaSizer::HEADROOM);
    Ok((total.ceil() as u64).div_ceil(16) * 16)
}

impl ArenaCache {
    fn new(gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config) -> Result<ArenaCache> {
        let codec = Codec::new(&gpu.device)?;
        let n = hidden_elems(cfg);
        let capacity = match cfg.arena_bytes {
            Some(b) => b.div_ceil(16) * 16,
            None => initial_arena_bytes(cfg, cfg.arena_density)?,
        };
        let arena = Arena::new(&codec, ArenaConfig::new(capacity))?;
        Ok(ArenaCache {
            codec,
            arena,
            slots: vec![None; cfg.layers as usize],
            z: bufs.z.clone(),
            g: bufs.g.clone(),
            dz: bufs.dz.clone(),
            a_scratch: gpu.buffer("cache.a_scratch", n * 2),
            n,
            options: Options { sign_pack: cfg.sign_pack },
            pending_capacity: None,
            shrinks: 0,
        })
    }
}

impl HiddenCache for ArenaCache {
    fn name(&self) -> &'static str {
        CacheMode::BitSparse.name()
    }
    fn forward_a(&self, _l: usize) -> &wgpu::Buffer {
        &self.a_scratch
    }
    fn backward_a(&self, _l: usize) -> &wgpu::Buffer {
        &self.a_scratch
    }
    fn begin_step(&mut self, enc: &mut wgpu::CommandEncoder) -> Result<()> {
        if let Some(c) = self.pending_capacity.take() {
            self.arena = Arena::new(&self.codec, ArenaConfig::new(c))?;
            self.shrinks += 1;
        }
        self.arena.reset(enc);
        self.slots.iter_mut().for_each(|s| *s = None);
        Ok(())
    }
    fn forward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        let bytes = self.n * 2;
        let slot = self.arena.fused_forward(
            enc,
            BufferRange::new(&self.z, 0, bytes),
            self.n,
            Activation::Relu2,
            self.options,
            BufferRange::new(&self.a_scratch, 0, bytes),
        )?;
        self.slots[l] = Some(slot);
        Ok(())
    }
    fn backward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        let bytes = self.n * 2;
        let slot = self.slots[l]
            .as_ref()
            .ok_or_else(|| bitsparse::Error::InvalidArgument(format!("backward of layer {l} before its forward")))?;
        self.arena.fused_backward(
            enc,
            slot,
            Activation::Relu2,
            BufferRange::new(&self.g, 0, bytes),
            BufferRange::new(&self.dz, 0, bytes),
            Some(BufferRange::new(&self.a_scratch, 0, bytes)),
        )
    }
    fn gate(&mut self, enc: &mut wgpu::CommandEncoder, grid: (u32, u32, u32)) -> Result<Option<GateArgs>> {
        Ok(Some(self.arena.gate(enc, [grid.0, grid.1, grid.2])?))
    }
    fn verify(&mut self, gpu: &Gpu) -> Result<bool> {
        let status = self.arena.read_status(&gpu.queue)?;
        match status.check() {
            Ok(()) => {
                // Shrink with the library's sizing policy applied to the last step's use (the head after
                // it: the arena is reset at each step's start and not popped). The arena's own high-water
                // mark would remember the denser early steps for ever. Halving at most keeps resizes rare;
                // a later, denser step overflows safely and regrows below.
                let mut sizer = ArenaSizer::default();
                sizer.observe(&ArenaStatus { high_water_bytes: status.used_bytes, ..status });
                let want = sizer.recommended_bytes();
                if want * 2 <= status.capacity_bytes {
                    self.pending_capacity = Some(want);
                }
                Ok(true)
            }
            Err(bitsparse::Error::ArenaOverflow { .. }) => {
                let mut sizer = ArenaSizer::default();
                sizer.observe(&status);
                let want = sizer.recommended_bytes();
                self.arena = Arena::new(&self.codec, ArenaConfig::new(want.max(status.capacity_bytes * 2)))?;
                self.pending_capacity = None;
                self.slots.iter_mut().for_each(|s| *s = None);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
    fn resizes(&self) -> u32 {
        self.shrinks
    }
    fn bytes(&self, gpu: &Gpu) -> Result<CacheBytes> {
        let status = self.arena.read_status(&gpu.queue)?;
        status.check()?;
        let mut layers = Vec::new();
        for s in &self.slots {
            let s = s.as_ref().ok_or_else(|| bitsparse::Error::InvalidArgument("no forward recorded yet".into()))?;
            let (st, compact) = self.arena.read_slot(&gpu.queue, s)?;
            if st != 0 {
                return Err(bitsparse::Error::InvalidArgument(format!("arena slot status {st:#x}")));
            }
            layers.push(LayerBytes { stored: compact, reserved: compact });
        }
        let streams: u64 = layers.iter().map(|l| l.stored).sum();
        Ok(CacheBytes { slack: status.used_bytes.saturating_sub(streams), reserved: status.capacity_bytes, layers })
    }
}
