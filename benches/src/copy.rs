//! The copy shader (`shaders/copy.wgsl`): the bandwidth every other op is compared with.

use bitsparse::dispatch::{begin_pass, Bindings, Kernel, KernelDispatch, Program, Trust};
use bitsparse::error::{Error, Result};

bitsparse::shader_params! {
    /// The uniform of `copy.wgsl`.
    struct CopyParams: "copy.wgsl" Params {
        words4: u32,
        seed: u32,
        _pad1: u32,
        _pad2: u32,
    }
}

/// Most workgroups per dispatch; the shader's grid-stride loop covers the rest. On the H200 this cap
/// copied 201M BF16 elements at 4.01 TB/s against 3.74 TB/s for a grid covering every word
/// (2-D past 65535 workgroups), and 1 GiB at 4.10 against 3.93 TB/s; 8448 or 16896 were in between.
const GRID_CAP: u64 = 32768;

/// The `seed` parameter of `copy.wgsl`: `fill_only` writes `(i, i ^ seed, i + seed, seed)` at vec4 `i`.
pub const FILL_SEED: u32 = 0x9e37_79b9;

/// What a prepared copy's dispatches do: the entry points of `copy.wgsl`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// Read `src`, write `dst` (the codec's reference).
    Copy,
    /// Write `dst` only.
    Fill,
    /// Read `src` only.
    Read,
}

/// The copy pipelines of a device (one program: the three entry points share its bind groups).
pub struct CopyKernel {
    device: wgpu::Device,
    copy: Kernel,
    fill: Kernel,
    read: Kernel,
    /// Invocations per workgroup (`@workgroup_size` of `copy.wgsl`, the same for its three entry points).
    wg: u64,
    max_binding: u64,
    max_wg_dim: u64,
}

/// A copy of `bytes` bytes from one buffer to another, ready to record: chunked so each binding fits the
/// device's storage-binding limit.
pub struct PreparedCopy {
    groups: Vec<(wgpu::BindGroup, u32, u32)>,
    /// Bytes copied (a multiple of 16).
    pub bytes: u64,
}

impl CopyKernel {
    /// Builds the pipeline, catching validation errors.
    pub fn new(device: &wgpu::Device) -> Result<CopyKernel> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let program = Program::new(device, "copy.wgsl", &[], Trust::Checked);
        let copy = program.kernel(device, "copy", &[]);
        let fill = program.kernel(device, "fill_only", &[]);
        let read = program.kernel(device, "read_only", &[]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("copy shader: {e}")));
        }
        let wg = copy.workgroup_size()[0] as u64;
        let limits = device.limits();
        let align = (limits.min_storage_buffer_offset_alignment as u64).max(16);
        // Whole workgroups of vec4 per chunk, and chunk starts aligned for binding offsets.
        let unit = (wg * 16).max(align);
        let max_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / unit * unit;
        if max_binding == 0 {
            return Err(Error::Unsupported("storage bindings too small for the copy shader".into()));
        }
        Ok(CopyKernel {
            device: device.clone(),
            copy,
            fill,
            read,
            wg,
            max_binding,
            max_wg_dim: limits.max_compute_workgroups_per_dimension.max(1) as u64,
        })
    }

    /// Prepares a copy of the first `bytes` bytes (rounded up to 16) of `src` into `dst`; both buffers must
    /// hold the rounded size.
    pub fn prepare(
        &self,
        device: &wgpu::Device,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<PreparedCopy> {
        let bytes = bytes.div_ceil(16) * 16;
        if bytes > src.size() || bytes > dst.size() {
            return Err(Error::RangeTooSmall { what: "copy buffers", need: bytes, got: src.size().min(dst.size()) });
        }
        let mut groups = Vec::new();
        let mut start = 0;
        while start < bytes {
            let len = (bytes - start).min(self.max_binding);
            let words4 = len / 16;
            let params = CopyParams { words4: words4 as u32, seed: FILL_SEED, _pad1: 0, _pad2: 0 };
            let group = Bindings::new(&self.copy)
                .bind([("src", binding(src, start, len)), ("dst", binding(dst, start, len))])
                .params(device, &params)
                .build(device);
            let wgs = words4.div_ceil(self.wg).min(GRID_CAP);
            let x = wgs.min(self.max_wg_dim);
            let y = wgs.div_ceil(x).min(self.max_wg_dim);
            groups.push((group, x as u32, y as u32));
            start += len;
        }
        Ok(PreparedCopy { groups, bytes })
    }

    /// Records a prepared copy: one compute pass, one dispatch per chunk.
    pub fn record(&self, encoder: &mut wgpu::CommandEncoder, copy: &PreparedCopy) {
        self.record_traffic(encoder, copy, Traffic::Copy);
    }

    /// Records the prepared ranges with `traffic`'s entry point (same grid as the copy).
    pub fn record_traffic(&self, encoder: &mut wgpu::CommandEncoder, copy: &PreparedCopy, traffic: Traffic) {
        let kernel = match traffic {
            Traffic::Copy => &self.copy,
            Traffic::Fill => &self.fill,
            Traffic::Read => &self.read,
        };
        let mut pass = begin_pass(encoder, "bitsparse.bench.copy");
        let mut d = KernelDispatch::new(&self.device, &mut pass, kernel);
        for (g, x, y) in &copy.groups {
            d.dispatch_group(g, [*x, *y, 1]);
        }
    }
}

fn binding(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BufferBinding<'_> {
    wgpu::BufferBinding { buffer, offset, size: wgpu::BufferSize::new(size) }
}
