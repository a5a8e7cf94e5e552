//! The copy shader (`shaders/copy.wgsl`): the bandwidth every other op is compared with.

use wgpu::util::DeviceExt;

use bitsparse::error::{Error, Result};
use bitsparse::kernels;

/// Invocations per workgroup of `copy.wgsl`.
const WG: u64 = 256;
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

/// The copy pipelines of a device.
pub struct CopyKernel {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
    fill: wgpu::ComputePipeline,
    read: wgpu::ComputePipeline,
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
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bitsparse.bench.copy"),
            entries: &[kernels::storage(0, true), kernels::storage(1, false), kernels::uniform(2)],
        });
        let pipeline = kernels::pipeline(device, "copy.wgsl", "copy", &[], &layout, &[]);
        let fill = kernels::pipeline(device, "copy.wgsl", "fill_only", &[], &layout, &[]);
        let read = kernels::pipeline(device, "copy.wgsl", "read_only", &[], &layout, &[]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("copy shader: {e}")));
        }
        let limits = device.limits();
        let align = (limits.min_storage_buffer_offset_alignment as u64).max(16);
        // Whole workgroups of vec4 per chunk, and chunk starts aligned for binding offsets.
        let unit = (WG * 16).max(align);
        let max_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / unit * unit;
        if max_binding == 0 {
            return Err(Error::Unsupported("storage bindings too small for the copy shader".into()));
        }
        Ok(CopyKernel {
            layout,
            pipeline,
            fill,
            read,
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
            let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("bitsparse.bench.copy.params"),
                contents: bytemuck::cast_slice(&[words4 as u32, FILL_SEED, 0, 0]),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bitsparse.bench.copy"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(binding(src, start, len)),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Buffer(binding(dst, start, len)),
                    },
                    wgpu::BindGroupEntry { binding: 2, resource: params.as_entire_binding() },
                ],
            });
            let wgs = words4.div_ceil(WG).min(GRID_CAP);
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
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("bitsparse.bench.copy"),
            timestamp_writes: None,
        });
        pass.set_pipeline(match traffic {
            Traffic::Copy => &self.pipeline,
            Traffic::Fill => &self.fill,
            Traffic::Read => &self.read,
        });
        for (g, x, y) in &copy.groups {
            pass.set_bind_group(0, g, &[]);
            pass.dispatch_workgroups(*x, *y, 1);
        }
    }
}

fn binding(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BufferBinding<'_> {
    wgpu::BufferBinding { buffer, offset, size: wgpu::BufferSize::new(size) }
}
