//! The dense caches: the autograd baseline (x, r and a kept) and the minimal one (x and r kept).

use bitsparse::Result;

use super::super::config::{CacheMode, Config};
use super::super::gpu::{record, Dispatch, Gpu};
use super::{act_backward, act_forward, hidden_elems, CacheBytes, HiddenCache, LayerBytes, StepBuffers};

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
    pub(super) fn new(gpu: &mut Gpu, bufs: &StepBuffers, cfg: &Config, keep_a: bool) -> Result<DenseCache> {
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
    fn dense_r(&self, l: usize) -> Option<&wgpu::Buffer> {
        self.r.get(l)
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
