//! BitSparse through the library's plain codec (worst-case slots per layer).

use bitsparse::{BufferRange, Codec, Compressed, DType, Layout, Options, Result};

use super::super::config::{CacheMode, Config};
use super::super::gpu::{record, Dispatch, Gpu};
use super::{act_backward, act_forward, hidden_elems, CacheBytes, HiddenCache, LayerBytes, StepBuffers};

/// BitSparse through the library's plain codec: the forward writes r to a scratch buffer and compresses
/// it into a per-layer slot sized for the worst case; the backward decompresses it and recomputes a and
/// dz with the trainer's own activation kernels. A cross-check of the arena path: the *stored* bytes are
/// what an arena holds, the *reserved* bytes are the worst-case slots.
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
    pub(super) fn new(gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config) -> Result<CodecCache> {
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
        Ok(CodecCache {
            codec,
            r_scratch,
            a_scratch,
            slots,
            compressed: vec![None; cfg.layers as usize],
            layout,
            options,
            fwd,
            bwd,
        })
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
        let c = self.codec.compress(
            enc,
            input,
            DType::Bf16,
            self.layout.n,
            self.options,
            BufferRange::whole(&self.slots[l]),
        )?;
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
