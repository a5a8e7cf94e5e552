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
use crate::format::DType;

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

/// The plain dense kernels for BF16, F16 and F32 (the math of `shaders/lib/act.wgsl` for each; ranges
/// a multiple of 16 bytes: element counts a multiple of 8, or of 4 for F32).
#[derive(Debug, Clone)]
pub struct DenseAct {
    device: wgpu::Device,
    /// `(forward, backward)` of BF16, F16, F32.
    kernels: [(Kernel, Kernel); 3],
    dummy: wgpu::Buffer,
    max_wg: u32,
}

impl DenseAct {
    /// Builds the pipelines.
    pub fn new(device: &wgpu::Device) -> Result<DenseAct> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let build = |defines: &[&str]| {
            let program = Program::new(device, "plain_act.wgsl", defines, Trust::Checked);
            (program.kernel(device, "forward", &[]), program.kernel(device, "backward", &[]))
        };
        let kernels = [build(&[]), build(&["ACT_F16"]), build(&["BITS32"])];
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
        Ok(DenseAct { device: device.clone(), kernels, dummy, max_wg })
    }

    fn check(r: &BufferRange<'_>, bytes: u64) -> Result<()> {
        if r.size != bytes || bytes % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "dense activation ranges must be {bytes} bytes, a multiple of 16"
            )));
        }
        Ok(())
    }

    /// The `(forward, backward)` kernels of `dtype`; FP8 is a typed error.
    fn kernels(&self, dtype: DType) -> Result<&(Kernel, Kernel)> {
        match dtype {
            DType::Bf16 => Ok(&self.kernels[0]),
            DType::F16 => Ok(&self.kernels[1]),
            DType::F32 => Ok(&self.kernels[2]),
            _ => {
                Err(Error::InvalidArgument(format!("the dense activation kernels take BF16, F16 or F32, not {dtype}")))
            }
        }
    }

    /// Records `kernel` over `bytes` bytes (one vec4 per thread): `in0`, `in1` (the dummy when not
    /// given) and `out0`.
    fn run<'a>(
        &'a self,
        encoder: &mut wgpu::CommandEncoder,
        kernel: &Kernel,
        bytes: u64,
        act: Activation,
        [in0, in1, out0]: [Option<BufferRange<'a>>; 3],
    ) -> Result<()> {
        let vecs = bytes / 16;
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
        self.forward_dtype(encoder, DType::Bf16, z, a, n, act)
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
        self.backward_dtype(encoder, DType::Bf16, r, g, dz, n, act)
    }

    /// a = act(relu(z)) for `n` elements of `dtype` (BF16, F16 or F32; FP8 is `Error::InvalidArgument`).
    /// F32 and F16: a = r * r rounded once (docs/FUSED.md).
    pub fn forward_dtype(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dtype: DType,
        z: BufferRange<'_>,
        a: BufferRange<'_>,
        n: u64,
        act: Activation,
    ) -> Result<()> {
        let (forward, _) = self.kernels(dtype)?;
        let bytes = n * dtype.bytes();
        Self::check(&z, bytes)?;
        Self::check(&a, bytes)?;
        self.run(encoder, forward, bytes, act, [Some(z), None, Some(a)])
    }

    /// dL/dz from r = relu(z) and g = dL/da for `n` elements of `dtype` (BF16, F16 or F32). F32 and
    /// F16: t = g * r, dr = t + t, dL/dz = dr where r > 0, else +0 (docs/FUSED.md).
    #[allow(clippy::too_many_arguments)] // backward's arguments plus the dtype
    pub fn backward_dtype(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dtype: DType,
        r: BufferRange<'_>,
        g: BufferRange<'_>,
        dz: BufferRange<'_>,
        n: u64,
        act: Activation,
    ) -> Result<()> {
        let (_, backward) = self.kernels(dtype)?;
        let bytes = n * dtype.bytes();
        Self::check(&r, bytes)?;
        Self::check(&g, bytes)?;
        Self::check(&dz, bytes)?;
        self.run(encoder, backward, bytes, act, [Some(r), Some(g), Some(dz)])
    }
}
