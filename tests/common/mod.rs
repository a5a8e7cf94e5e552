//! Shared test set-up: opening lavapipe (Vulkan) or llvmpipe (GL) and round-trip helpers.
#![allow(dead_code)]

use bitsparse::context::{self, GpuContext};

/// True when running in CI, where a missing backend is a failure, not a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
}

/// Opens the first adapter of `backend` (lavapipe on Vulkan, llvmpipe on GL here). Missing: panics in CI,
/// returns None (the test prints why and returns) elsewhere.
pub fn open(backend: wgpu::Backends) -> Option<GpuContext> {
    std::env::set_var("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()));
    let adapters = context::enumerate(backend);
    let found = adapters.into_iter().find_map(|a| {
        let name = a.get_info().name;
        GpuContext::from_adapter(a, wgpu::Features::empty()).ok().map(|c| (name, c))
    });
    match found {
        Some((_, c)) => Some(c),
        None => {
            let msg = format!("no usable {backend:?} adapter (install mesa-vulkan-drivers / libegl1 libegl-mesa0 libgl1-mesa-dri: bash scripts/test.sh does)");
            if in_ci() {
                panic!("{msg}");
            }
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

/// Vulkan (lavapipe here).
pub fn vulkan() -> Option<GpuContext> {
    open(wgpu::Backends::VULKAN)
}

/// GL (llvmpipe here).
pub fn gl() -> Option<GpuContext> {
    open(wgpu::Backends::GL)
}
