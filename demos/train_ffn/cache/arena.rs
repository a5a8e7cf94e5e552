//! BitSparse through the library's GPU arena and fused kernels.

use bitsparse::arena::{Arena, ArenaConfig, ArenaSizer, ArenaStatus, Fp8Scale, GateArgs, Slot};
use bitsparse::Activation;
use bitsparse::{BufferRange, Codec, DType, Layout, Options, Result};

use super::super::config::{CacheMode, Config};
use super::super::gpu::Gpu;
use super::{hidden_elems, CacheBytes, HiddenCache, LayerBytes, StepBuffers};

/// BitSparse through the library's GPU arena and fused kernels: the forward's one pass over z writes the
/// dense a for the W₂ GEMM and pushes the compressed r into the arena; the backward's one pass over the
/// compressed r and g writes dz and the a the dW₂ GEMM needs. The arena is reset at the start of each
/// step (whole-step release) and the weight update is gated on it, so an overflowing step changes no
/// weights; [`HiddenCache::verify`] finds that at the next logging point, grows the arena with the
/// library's [`ArenaSizer`] and asks the trainer to re-run from its checkpoint. When the same policy
/// says half the capacity would do (the density fell), the arena is shrunk before the next step.
///
/// With `fp8`, the fused forward stores r as FP8 with the library's delayed per-tensor scale (the amax
/// its previous compress of the same slot saw: slot ids repeat every step because the arena is reset,
/// so slot l is always layer l; a recreated arena starts again from scale 1). The backward's r is then
/// bf16(q / scale): lossy, by design.
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
    /// FP8 storage format (lossy), or `None` for lossless BF16.
    fp8: Option<DType>,
    /// The tile order of every arena this cache makes.
    tile_order: bitsparse::TileOrder,
    /// A smaller capacity chosen at a logging point, applied at the next step's start (so the last
    /// step's slots stay readable until then).
    pending_capacity: Option<u64>,
    /// Times the arena was shrunk to follow the falling density.
    pub shrinks: u32,
}

/// The arena capacity the trainer starts with: the compressed size of every layer at density `rho`,
/// plus the sizing policy's headroom, rounded to 16 bytes.
pub fn initial_arena_bytes(cfg: &Config, rho: f64, dtype: DType) -> Result<u64> {
    let n = hidden_elems(cfg);
    let layout = Layout::new(dtype, n, Options { sign_pack: cfg.sign_pack })?;
    let values = (n as f64 * rho * layout.value_width() as f64 / 32.0).ceil() as u64 + layout.tiles;
    let per_layer = layout.compact_bytes(values) + 256;
    let total = (per_layer * cfg.layers as u64) as f64 * (1.0 + ArenaSizer::HEADROOM);
    Ok((total.ceil() as u64).div_ceil(16) * 16)
}

impl ArenaCache {
    pub(super) fn new(gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config, fp8: Option<DType>) -> Result<ArenaCache> {
        let codec = Codec::new(&gpu.device)?;
        let n = hidden_elems(cfg);
        let capacity = match cfg.arena_bytes {
            Some(b) => b.div_ceil(16) * 16,
            None => initial_arena_bytes(cfg, cfg.arena_density, fp8.unwrap_or(DType::Bf16))?,
        };
        let arena = Arena::new(&codec, ArenaConfig { tile_order: cfg.tile_order, ..ArenaConfig::new(capacity) })?;
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
            fp8,
            tile_order: cfg.tile_order,
            pending_capacity: None,
            shrinks: 0,
        })
    }
}

impl HiddenCache for ArenaCache {
    fn name(&self) -> &'static str {
        match self.fp8 {
            Some(f) => CacheMode::BitSparseFp8(f).name(),
            None => CacheMode::BitSparse.name(),
        }
    }
    fn forward_a(&self, _l: usize) -> &wgpu::Buffer {
        &self.a_scratch
    }
    fn backward_a(&self, _l: usize) -> &wgpu::Buffer {
        &self.a_scratch
    }
    fn begin_step(&mut self, enc: &mut wgpu::CommandEncoder) -> Result<()> {
        if let Some(c) = self.pending_capacity.take() {
            self.arena = Arena::new(&self.codec, ArenaConfig { tile_order: self.tile_order, ..ArenaConfig::new(c) })?;
            self.shrinks += 1;
        }
        self.arena.reset(enc);
        self.slots.iter_mut().for_each(|s| *s = None);
        Ok(())
    }
    fn forward(&mut self, enc: &mut wgpu::CommandEncoder, l: usize) -> Result<()> {
        let bytes = self.n * 2;
        let (z, a) = (BufferRange::new(&self.z, 0, bytes), BufferRange::new(&self.a_scratch, 0, bytes));
        let slot = match self.fp8 {
            None => self.arena.fused_forward(enc, z, self.n, Activation::Relu2, self.options, a)?,
            Some(format) => self.arena.fused_forward_fp8(
                enc,
                z,
                self.n,
                Activation::Relu2,
                format,
                Fp8Scale::Delayed,
                self.options,
                a,
            )?,
        };
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
                self.arena = Arena::new(
                    &self.codec,
                    ArenaConfig {
                        tile_order: self.tile_order,
                        ..ArenaConfig::new(want.max(status.capacity_bytes * 2))
                    },
                )?;
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
