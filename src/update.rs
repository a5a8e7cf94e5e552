//! A gated weight update: SGD dispatched indirectly through [`crate::arena::Arena::gate`], so a step
//! whose activations overflowed the arena changes no weights. Trainers with their own optimizer do
//! the same: dispatch it with `dispatch_workgroups_indirect(&gate.buffer, gate.offset)`.

use crate::arena::GateArgs;
use crate::codec::BufferRange;
use crate::dispatch::{begin_pass, Kernel, KernelDispatch, Program, Trust};
use crate::error::{Error, Result};

crate::shader_params! {
    /// The uniform of `sgd.wgsl`.
    struct Params: "sgd.wgsl" Params {
        n: u32,
        lr: f32,
        _pad0: u32,
        _pad1: u32,
    }
}

/// SGD on f32 weights.
#[derive(Debug, Clone)]
pub struct GatedSgd {
    device: wgpu::Device,
    kernel: Kernel,
}

impl GatedSgd {
    /// The grid to pass to [`crate::arena::Arena::gate`] for `n` weights.
    pub fn grid(n: u64) -> [u32; 3] {
        [(n.div_ceil(256)).clamp(1, 65535) as u32, 1, 1]
    }

    /// Builds the pipeline.
    pub fn new(device: &wgpu::Device) -> Result<GatedSgd> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let kernel = Program::new(device, "sgd.wgsl", &[], Trust::Checked).kernel(device, "sgd", &[]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building the SGD pipeline failed: {e}")));
        }
        Ok(GatedSgd { device: device.clone(), kernel })
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
        let mut pass = begin_pass(encoder, "bitsparse.sgd");
        KernelDispatch::new(&self.device, &mut pass, &self.kernel)
            .bind([("w", w.binding()), ("g", g.binding())])
            .params(&Params { n: n as u32, lr, _pad0: 0, _pad1: 0 })
            .dispatch_indirect(&gate.buffer, gate.offset);
        Ok(())
    }
}
