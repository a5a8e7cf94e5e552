//! The plain (unfused) dense activation kernels: [`DenseAct`], the dense ReLU/ReLU² forward (z → a)
//! and backward (r, g → dL/dz) with the same math as the fused kernels — the baseline of the benchmarks
//! and of a trainer that keeps its activation cache dense.
//!
//! The fused kernels live on the [`crate::arena::Arena`] (`fused_forward`, `fused_backward`), since
//! what they compress or rebuild is an arena slot.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

pub use crate::activation::Activation;
use crate::codec::BufferRange;
use crate::dispatch::{begin_pass, Kernel, KernelDispatch, Program, Trust};
use crate::error::{Error, Result};
use crate::format::DType;
use crate::kernels::Sharing;
use crate::overlap::{self, Use};

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

/// The `(forward, backward)` kernels of one dtype.
type Pair = (Kernel, Kernel);

/// The plain dense kernels for BF16, F16 and F32 (the math of `shaders/lib/act.wgsl` for each; ranges
/// a multiple of 16 bytes: element counts a multiple of 8, or of 4 for F32).
#[derive(Debug, Clone)]
pub struct DenseAct {
    device: wgpu::Device,
    /// `(forward, backward)` of BF16, F16, F32.
    kernels: [Pair; 3],
    /// The same with `SHARED_IO` (an input in the output's buffer: inputs bound `read_write`), built on
    /// first use.
    shared: Arc<Mutex<[Option<Pair>; 3]>>,
    dummy: wgpu::Buffer,
    max_wg: u32,
    /// The forward's override constants: the square's form (`SQUARE_NAN_FLAGS`).
    forward_consts: Vec<(&'static str, f64)>,
}

/// The defines of BF16's, F16's and F32's kernels.
const DEFINES: [&[&str]; 3] = [&[], &["ACT_F16"], &["BITS32"]];

/// Builds the `(forward, backward)` kernels of `plain_act.wgsl` with `defines`, the forward with the
/// override constants `forward` (`Program::kernel` passes those the variant declares).
fn build(device: &wgpu::Device, defines: &[&str], forward: &[(&'static str, f64)]) -> Result<Pair> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let program = Program::new(device, "plain_act.wgsl", defines, Trust::Checked);
    let kernels = (program.kernel(device, "forward", forward), program.kernel(device, "backward", &[]));
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(Error::Wgpu(format!("building the dense activation pipelines {defines:?} failed: {e}")));
    }
    Ok(kernels)
}

impl DenseAct {
    /// Builds the pipelines (those for an input in the output's buffer on first use).
    pub fn new(device: &wgpu::Device) -> Result<DenseAct> {
        DenseAct::with_kernel_constants(device, None)
    }

    /// [`DenseAct::new`] with kernel tuning constants (`CodecConfig::kernel_constants` syntax; items of
    /// other kernels are checked and left to them): `forward.SQUARE_NAN_FLAGS`, the BF16 ReLU²
    /// square's form, which the adapter chooses otherwise (shaders/lib/act.wgsl). For A/B measurements.
    pub fn with_kernel_constants(device: &wgpu::Device, spec: Option<&str>) -> Result<DenseAct> {
        let square = crate::kernels::square_nan_flags(&device.adapter_info());
        let mut forward_consts = vec![("SQUARE_NAN_FLAGS", square as u32 as f64)];
        if let Some(spec) = spec {
            crate::kernels::apply_tuning(spec, "forward", &mut forward_consts)?;
        }
        let c = &forward_consts;
        let kernels = [build(device, DEFINES[0], c)?, build(device, DEFINES[1], c)?, build(device, DEFINES[2], c)?];
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.plain_act.dummy"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let max_wg = device.limits().max_compute_workgroups_per_dimension;
        Ok(DenseAct { device: device.clone(), kernels, shared: Arc::default(), dummy, max_wg, forward_consts })
    }

    fn check(r: &BufferRange<'_>, bytes: u64) -> Result<()> {
        if r.size != bytes || bytes % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "dense activation ranges must be {bytes} bytes, a multiple of 16"
            )));
        }
        Ok(())
    }

    /// The index of `dtype`'s kernels; FP8 is a typed error.
    fn index(dtype: DType) -> Result<usize> {
        match dtype {
            DType::Bf16 => Ok(0),
            DType::F16 => Ok(1),
            DType::F32 => Ok(2),
            _ => {
                Err(Error::InvalidArgument(format!("the dense activation kernels take BF16, F16 or F32, not {dtype}")))
            }
        }
    }

    /// The `(forward, backward)` kernels of index `i` for `sharing` (a shared pair is built on first use).
    fn kernels(&self, i: usize, sharing: Sharing) -> Result<Cow<'_, Pair>> {
        if sharing == Sharing::Separate {
            return Ok(Cow::Borrowed(&self.kernels[i]));
        }
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if shared[i].is_none() {
            let defines: Vec<&str> = DEFINES[i].iter().copied().chain(["SHARED_IO"]).collect();
            shared[i] = Some(build(&self.device, &defines, &self.forward_consts)?);
        }
        Ok(Cow::Owned(shared[i].clone().expect("built above")))
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
    /// F32 and F16: a = r * r rounded once (docs/FUSED.md). `z` and `a` may be ranges of one pool buffer
    /// that do not overlap (`Error::OverlappingRanges`: the kernel would read what it writes).
    pub fn forward_dtype(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dtype: DType,
        z: BufferRange<'_>,
        a: BufferRange<'_>,
        n: u64,
        act: Activation,
    ) -> Result<()> {
        let i = Self::index(dtype)?;
        let bytes = n * dtype.bytes();
        Self::check(&z, bytes)?;
        Self::check(&a, bytes)?;
        let sharing = overlap::check(&[Use::read("dense forward z", &z), Use::write("dense forward a", &a)])?;
        let kernels = self.kernels(i, sharing)?;
        self.run(encoder, &kernels.0, bytes, act, [Some(z), None, Some(a)])
    }

    /// dL/dz from r = relu(z) and g = dL/da for `n` elements of `dtype` (BF16, F16 or F32). F32 and
    /// F16: t = g * r, dr = t + t, dL/dz = dr where r > 0, else +0 (docs/FUSED.md). `r`, `g` and `dz` may be
    /// ranges of one pool buffer if `dz` overlaps neither input (`Error::OverlappingRanges`).
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
        let i = Self::index(dtype)?;
        let bytes = n * dtype.bytes();
        Self::check(&r, bytes)?;
        Self::check(&g, bytes)?;
        Self::check(&dz, bytes)?;
        let uses = [
            Use::read("dense backward r", &r),
            Use::read("dense backward g", &g),
            Use::write("dense backward dL/dz", &dz),
        ];
        let sharing = overlap::check(&uses)?;
        let kernels = self.kernels(i, sharing)?;
        self.run(encoder, &kernels.1, bytes, act, [Some(r), Some(g), Some(dz)])
    }
}
