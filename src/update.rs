//! A gated weight update: SGD dispatched indirectly through [`crate::arena::Arena::gate`], so a step
//! whose activations overflowed the arena changes no weights. Trainers with their own optimizer do
//! the same: dispatch it with `dispatch_workgroups_indirect(&gate.buffer, gate.offset)`.

use crate::arena::GateArgs;
use crate::codec::BufferRange;
use crate::error::{Error, Result};
use crate::kernels::{pipeline, storage, uniform};

#[derive(Copy, Clone, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Params {
    n: u32,
    lr: f32,
    _pad: [u32; 2],
}

/// SGD on f32 weights.
#[derive(Debug, Clone)]
pub struct GatedSgd {
    device: wgpu::Device,
    layout: wgpu::BindGroupLayout,
    pipe: wgpu::ComputePipeline,
}

impl GatedSgd {
    /// The grid to pass to [`crate::arena::Arena::gate`] for `n` weights.
    pub fn grid(n: u64) -> [u32; 3] {
        [(n.div_ceil(256)).clamp(1, 65535) as u32, 1, 1]
    }

    /// Builds the pipeline.
    pub fn new(device: &wgpu::Device) -> Result<GatedSgd> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bitsparse.sgd"),
            entries: &[storage(0, false), storage(1, true), uniform(2)],
        });
        let pipe = pipeline(device, "sgd.wgsl", "sgd", &[], &layout, &[]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building the SGD pipeline failed: {e}")));
        }
        Ok(GatedSgd { device: device.clone(), layout, pipe })
    }

    /// Records `w -= lr · g` (`n` f32 each), dispatched through `gate`.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        gate: &GateArgs,
        w: BufferRange<'_>,
        g: BufferRange<'_>,
        n: u64,
        lr: f32,
    ) -> Result<()> {
        if w.size != n * 4 || g.size != n * 4 {
            return Err(Error::InvalidArgument("SGD ranges must hold n f32 values".into()));
        }
        let pbuf = crate::kernels::params_buffer(
            &self.device,
            "bitsparse.sgd.params",
            &Params { n: n as u32, lr, _pad: [0; 2] },
        );
        let bind = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("bitsparse.sgd"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: w.buffer,
                        offset: w.offset,
                        size: wgpu::BufferSize::new(w.size),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: g.buffer,
                        offset: g.offset,
                        size: wgpu::BufferSize::new(g.size),
                    }),
                },
                wgpu::BindGroupEntry { binding: 2, resource: pbuf.as_entire_binding() },
            ],
        });
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("bitsparse.sgd"), timestamp_writes: None });
        pass.set_pipeline(&self.pipe);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups_indirect(&gate.buffer, gate.offset);
        Ok(())
    }
}
