//! Compute pipelines of the codec, built once per device, with explicit bind-group layouts.
//!
//! Variants are chosen textually (see [`crate::shaders`]): `BITS8` for 8-bit element types and
//! `SUBGROUP` for the fast path where the device has `Features::SUBGROUP`.

use crate::error::{Error, Result};
use crate::shaders;

/// Which scan implementation the kernels use.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Path {
    /// Subgroup operations (`Features::SUBGROUP`).
    Subgroup,
    /// Workgroup shared-memory scans only: runs everywhere (e.g. wgpu's GL backend).
    Portable,
}

impl Path {
    /// `"subgroup"` or `"portable"`.
    pub fn name(self) -> &'static str {
        match self {
            Path::Subgroup => "subgroup",
            Path::Portable => "portable",
        }
    }
}

/// A storage binding entry.
pub fn storage(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A uniform binding entry.
pub fn uniform(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Uniform, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    }
}

/// Builds a compute pipeline from `shaders/<file>` with `defines`, an explicit layout and `constants`.
pub fn pipeline(
    device: &wgpu::Device,
    file: &str,
    entry: &str,
    defines: &[&str],
    layout: &wgpu::BindGroupLayout,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    let label = format!("bitsparse.{file}:{entry}{defines:?}");
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(&label),
        source: wgpu::ShaderSource::Wgsl(shaders::source(file, defines).into()),
    });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(&label),
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(&label),
        layout: Some(&pl),
        module: &module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            // Every workgroup variable is written before it is read; wgpu's zeroing would cost occupancy time.
            zero_initialize_workgroup_memory: false,
        },
        cache: None,
    })
}

/// Pipelines for one element width.
#[derive(Debug)]
pub struct WidthKernels {
    /// `compress.wgsl:compress`.
    pub compress: wgpu::ComputePipeline,
    /// `compress.wgsl:finish`.
    pub finish: wgpu::ComputePipeline,
    /// `decompress.wgsl:decompress`.
    pub decompress: wgpu::ComputePipeline,
}

/// All codec pipelines of a device.
#[derive(Debug)]
pub struct Kernels {
    /// The path they were built for.
    pub path: Path,
    /// Layout of `compress` and `finish`.
    pub compress_layout: wgpu::BindGroupLayout,
    /// Layout of `decompress`.
    pub decompress_layout: wgpu::BindGroupLayout,
    /// 16-bit element pipelines.
    pub w16: WidthKernels,
    /// 8-bit element pipelines.
    pub w8: WidthKernels,
}

impl Kernels {
    /// Builds every pipeline, catching validation errors as [`Error::Wgpu`].
    pub fn new(device: &wgpu::Device, path: Path, spin_limit: Option<u32>) -> Result<Kernels> {
        if path == Path::Subgroup && !device.features().contains(wgpu::Features::SUBGROUP) {
            return Err(Error::Unsupported("the subgroup path needs Features::SUBGROUP".into()));
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let compress_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bitsparse.compress"),
            entries: &[
                storage(0, true),
                storage(1, true),
                storage(2, false),
                storage(3, false),
                storage(4, false),
                storage(5, false),
                uniform(6),
            ],
        });
        let decompress_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bitsparse.decompress"),
            entries: &[storage(0, true), storage(1, true), storage(2, true), storage(3, false), storage(4, false), uniform(5)],
        });
        let spin = [("SPIN_LIMIT", spin_limit.unwrap_or(64) as f64)];
        let build = |bits8: bool| {
            let mut defs = Vec::new();
            if bits8 {
                defs.push("BITS8");
            }
            if path == Path::Subgroup {
                defs.push("SUBGROUP");
            }
            WidthKernels {
                compress: pipeline(device, "compress.wgsl", "compress", &defs, &compress_layout, &spin),
                finish: pipeline(device, "compress.wgsl", "finish", &defs, &compress_layout, &[]),
                decompress: pipeline(device, "decompress.wgsl", "decompress", &defs, &decompress_layout, &[]),
            }
        };
        let w16 = build(false);
        let w8 = build(true);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building the codec pipelines failed: {e}")));
        }
        Ok(Kernels { path, compress_layout, decompress_layout, w16, w8 })
    }

    /// The pipelines for elements of `bits` bits.
    pub fn width(&self, bits: u32) -> &WidthKernels {
        if bits == 8 {
            &self.w8
        } else {
            &self.w16
        }
    }
}
