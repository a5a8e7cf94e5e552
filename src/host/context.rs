//! Creating an instance, choosing an adapter and opening a device: for the CLI, tests, demos and
//! benchmarks. The library proper never owns a device ([`crate::Codec`] borrows one); this module is the
//! convenience for programs that have none yet.

use crate::error::{Error, Result};

/// Which adapter to use: a case-insensitive substring of the adapter name and/or a backend.
/// Empty fields fall back to `WGPU_ADAPTER_NAME` / `WGPU_BACKEND`.
#[derive(Clone, Debug, Default)]
pub struct AdapterChoice {
    /// Case-insensitive substring of the adapter name.
    pub adapter: Option<String>,
    /// `vulkan`, `gl`, `metal` or `dx12`.
    pub backend: Option<String>,
}

impl AdapterChoice {
    /// The choice with environment variables applied where fields are empty.
    pub fn with_env(&self) -> AdapterChoice {
        AdapterChoice {
            adapter: self.adapter.clone().or_else(|| std::env::var("WGPU_ADAPTER_NAME").ok().filter(|s| !s.is_empty())),
            backend: self.backend.clone().or_else(|| std::env::var("WGPU_BACKEND").ok().filter(|s| !s.is_empty())),
        }
    }

    /// The backends to enumerate.
    pub fn backends(&self) -> Result<wgpu::Backends> {
        match self.backend.as_deref() {
            None => Ok(wgpu::Backends::all()),
            Some(b) => parse_backend(b),
        }
    }
}

/// Parses a backend name, or a comma-separated list of them (as `WGPU_BACKEND` allows).
pub fn parse_backend(s: &str) -> Result<wgpu::Backends> {
    if s.contains(',') {
        let mut all = wgpu::Backends::empty();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            all |= parse_backend(part)?;
        }
        return Ok(all);
    }
    match s.trim().to_ascii_lowercase().as_str() {
        "vulkan" | "vk" => Ok(wgpu::Backends::VULKAN),
        "gl" | "gles" | "opengl" => Ok(wgpu::Backends::GL),
        "metal" | "mtl" => Ok(wgpu::Backends::METAL),
        "dx12" | "d3d12" => Ok(wgpu::Backends::DX12),
        other => Err(Error::InvalidArgument(format!("unknown backend `{other}` (expected vulkan, gl, metal or dx12)"))),
    }
}

/// Lower-case backend name as used on the command line.
pub fn backend_name(b: wgpu::Backend) -> &'static str {
    match b {
        wgpu::Backend::Vulkan => "vulkan",
        wgpu::Backend::Gl => "gl",
        wgpu::Backend::Metal => "metal",
        wgpu::Backend::Dx12 => "dx12",
        wgpu::Backend::BrowserWebGpu => "webgpu",
        _ => "noop",
    }
}

/// An instance for `backends`.
pub fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// All adapters for `backends`, in enumeration order.
pub fn enumerate(backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    let inst = instance(backends);
    pollster::block_on(inst.enumerate_adapters(backends))
}

/// An opened device and what it came from.
#[derive(Clone, Debug)]
pub struct GpuContext {
    /// The adapter.
    pub adapter: wgpu::Adapter,
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// `adapter.get_info()`.
    pub info: wgpu::AdapterInfo,
}

/// Optional features the codec, fused kernels and benchmarks use when present.
pub fn wanted_features() -> wgpu::Features {
    wgpu::Features::SUBGROUP
        | wgpu::Features::SUBGROUP_BARRIER
        | wgpu::Features::SHADER_I16
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::IMMEDIATES
}

impl GpuContext {
    /// Chooses an adapter as `choice` says (environment applied) and opens it.
    pub fn new(choice: &AdapterChoice) -> Result<GpuContext> {
        let choice = choice.with_env();
        let backends = choice.backends()?;
        let adapters = enumerate(backends);
        let adapter = match &choice.adapter {
            Some(sub) => {
                let sub = sub.to_ascii_lowercase();
                adapters.into_iter().find(|a| a.get_info().name.to_ascii_lowercase().contains(&sub)).ok_or_else(
                    || Error::NoAdapter(format!("no adapter whose name contains `{sub}` (see `bitsparse info`)")),
                )?
            }
            None => {
                let inst = instance(backends);
                pollster::block_on(inst.request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::HighPerformance,
                    force_fallback_adapter: false,
                    compatible_surface: None,
                    apply_limit_buckets: false,
                }))
                .map_err(|e| Error::NoAdapter(e.to_string()))?
            }
        };
        Self::from_adapter(adapter, wgpu::Features::empty())
    }

    /// Opens `adapter` with its own limits and every feature of [`wanted_features`] it has, minus `exclude`.
    pub fn from_adapter(adapter: wgpu::Adapter, exclude: wgpu::Features) -> Result<GpuContext> {
        let features = adapter.features() & wanted_features() & !exclude;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("bitsparse"),
            required_features: features,
            required_limits: limits,
            ..Default::default()
        }))
        .map_err(|e| Error::NoAdapter(format!("request_device failed on {}: {e}", adapter.get_info().name)))?;
        let info = adapter.get_info();
        Ok(GpuContext { adapter, device, queue, info })
    }

    /// A one-line description: name and backend.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.info.name, backend_name(self.info.backend))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_lists() {
        assert_eq!(parse_backend("vulkan").unwrap(), wgpu::Backends::VULKAN);
        assert_eq!(parse_backend("vulkan,gl").unwrap(), wgpu::Backends::VULKAN | wgpu::Backends::GL);
        assert!(parse_backend("vulkan,nope").is_err());
    }
}
