//! The plain (unfused) dense activation kernels: [`DenseAct`], the dense ReLU/ReLU² forward (z → a)
//! and backward (r, g → dL/dz) with the same math as the fused kernels — the baseline of the benchmarks
//! and of a trainer that keeps its activation cache dense.
//!
//! The fused kernels live on the [`crate::arena::Arena`] (`fused_forward`, `fused_backward`), since
//! what they compress or rebuild is an arena slot.

pub use crate::activation::Activation;
use crate::codec::BufferRange;
use crate::error::{Error, Result};
use crate::kernels::{pipeline, storage, uniform};

#[derive(Copy, Clone, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Params {
    vecs: u32,
    act: u32,
    grid_x: u32,
    _pad: u32,
}

/// The plain dense kernels (BF16; element counts a multiple of 8, ranges 16-byte sized).
#[derive(Debug, Clone)]
pub struct DenseAct {
    device: wgpu::Device,
    layout: wgpu::BindGroupLayout,
    forward: wgpu::ComputePipeline,
    backward: wgpu::ComputePipeline,
    dummy: wgpu::Buffer,
    max_wg: u32,
}

impl DenseAct {
    /// Builds the pipelines.
    pub fn new(device: &wgpu::Device) -> Result<DenseAct> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bitsparse.plain_act"),
            entries: &[storage(0, true), storage(1, true), storage(2, false), uniform(3)],
        });
        let forward = pipeline(device, "plain_act.wgsl", "forward", &[], &layout, &[]);
        let backward = pipeline(device, "plain_act.wgsl", "backward", &[], &layout, &[]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building the dense activation pipelines failed: {e}")));
        }
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.plain_act.dummy"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let max_wg = device.limits().max_compute_workgroups_per_dimension;
        Ok(DenseAct { device: device.clone(), layout, forward, backward, dummy, max_wg })
    }

    fn check(r: &BufferRange<'_>, bytes: u64) -> Result<()> {
        if r.size != bytes || bytes % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "dense activation ranges must be {bytes} bytes, a multiple of 16"
            )));
        }
        Ok(())
    }

    fn run<'a>(
        &'a self,
        encoder: &mut wgpu::CommandEncoder,
        pipe: &wgpu::ComputePipeline,
        n: u64,
        act: Activation,
        ranges: [Option<BufferRange<'a>>; 3],
    ) -> Result<()> {
        let vecs = n / 8;
        if vecs == 0 {
            return Ok(());
        }
        let groups = vecs.div_ceil(256);
        let x = groups.min(self.max_wg as u64);
        let y = groups.div_ceil(x);
        let p = Params { vecs: vecs as u32, act: act.code(), grid_x: (x * 256) as u32, _pad: 0 };
        let pbuf = crate::kernels::params_buffer(&self.device, "bitsparse.plain_act.params", &p);
        let b = |r: &Option<BufferRange<'a>>| -> wgpu::BindingResource<'a> {
            match r {
                Some(r) => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: r.buffer,
                    offset: r.offset,
                    size: wgpu::BufferSize::new(r.size),
                }),
                None => self.dummy.as_entire_binding(),
            }
        };
        let bind = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("bitsparse.plain_act"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: b(&ranges[0]) },
                wgpu::BindGroupEntry { binding: 1, resource: b(&ranges[1]) },
                wgpu::BindGroupEntry { binding: 2, resource: b(&ranges[2]) },
                wgpu::BindGroupEntry { binding: 3, resource: pbuf.as_entire_binding() },
            ],
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("bitsparse.plain_act"),
            timestamp_writes: None,
        });
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(x as u32, y as u32, 1);
        Ok(())
    }

    /// a = act(relu(z)) for `n` BF16 elements.
    pub fn forward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        z: BufferRange<'_>,
        a: BufferRange<'_>,
        n: u64,
        act: Activation,
    ) -> Result<()> {
        Self::check(&z, n * 2)?;
        Self::check(&a, n * 2)?;
        self.run(encoder, &self.forward, n, act, [Some(z), None, Some(a)])
    }

    /// dL/dz from r = relu(z) and g = dL/da for `n` BF16 elements.
    pub fn backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        r: BufferRange<'_>,
        g: BufferRange<'_>,
        dz: BufferRange<'_>,
        n: u64,
        act: Activation,
    ) -> Result<()> {
        Self::check(&r, n * 2)?;
        Self::check(&g, n * 2)?;
        Self::check(&dz, n * 2)?;
        self.run(encoder, &self.backward, n, act, [Some(r), Some(g), Some(dz)])
    }
}
