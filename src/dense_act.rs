//! The plain (unfused) dense activation kernels: [`DenseAct`], the dense ReLU/ReLU² forward (z → a)
//! and backward (r, g → dL/dz) with the same math as the fused kernels — the baseline of the benchmarks
//! and of a trainer that keeps its activation cache dense.
//!
//! The fused kernels live on the [`crate::arena::Arena`] (`fused_forward`, `fused_backward`), since
//! what they compress or rebuild is an arena slot.

pub use crate::activation::Activation;
use crate::codec::BufferRange;
use crate::dispatch::{begin_pass, Kernel, KernelDispatch, Program, Trust};
use crate::error::{Error, Result};

crate::shader_params! {
    /// The uniform of `plain_act.wgsl`.
    struct Params: "plain_act.wgsl" Params {
        /// vec4s to process.
        vecs: u32,
        act: u32,
        /// Threads per grid row (workgroups in x × workgroup size).
        grid_x: u32,
        _pad: u32,
    }
}

/// The plain dense kernels (BF16; element counts a multiple of 8, ranges 16-byte sized).
#[derive(Debug, Clone)]
pub struct DenseAct {
    device: wgpu::Device,
    forward: Kernel,
    backward: Kernel,
    dummy: wgpu::Buffer,
    max_wg: u32,
}

impl DenseAct {
    /// Builds the pipelines.
    pub fn new(device: &wgpu::Device) -> Result<DenseAct> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let program = Program::new(device, "plain_act.wgsl", &[], Trust::Checked);
        let forward = program.kernel(device, "forward", &[]);
        let backward = program.kernel(device, "backward", &[]);
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
        Ok(DenseAct { device: device.clone(), forward, backward, dummy, max_wg })
    }

    fn check(r: &BufferRange<'_>, bytes: u64) -> Result<()> {
        if r.size != bytes || bytes % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "dense activation ranges must be {bytes} bytes, a multiple of 16"
            )));
        }
        Ok(())
    }

    /// Records `kernel` over `n` elements (one vec4 of 8 per thread): `in0`, `in1` (the dummy when not
    /// given) and `out0`.
    fn run<'a>(
        &'a self,
        encoder: &mut wgpu::CommandEncoder,
        kernel: &Kernel,
        n: u64,
        act: Activation,
        [in0, in1, out0]: [Option<BufferRange<'a>>; 3],
    ) -> Result<()> {
        let vecs = n / 8;
        if vecs == 0 {
            return Ok(());
        }
        let wg = kernel.workgroup_size()[0] as u64;
        let groups = vecs.div_ceil(wg);
        let x = groups.min(self.max_wg as u64);
        let y = groups.div_ceil(x);
        let p = Params { vecs: vecs as u32, act: act.code(), grid_x: (x * wg) as u32, _pad: 0 };
        let b = |r: Option<BufferRange<'a>>| r.map_or(self.dummy.as_entire_buffer_binding(), |r| r.binding());
        let mut pass = begin_pass(encoder, "bitsparse.plain_act");
        KernelDispatch::new(&self.device, &mut pass, kernel)
            .bind([("in0", b(in0)), ("in1", b(in1)), ("out0", b(out0))])
            .params(&p)
            .dispatch([x as u32, y as u32, 1]);
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
