//! The device the CLI works on and the codec calls it makes: the one place that decides whether a
//! stream is made on the GPU or by the CPU reference.

use bitsparse::context::{backend_name, AdapterChoice, GpuContext};
use bitsparse::{DType, Options, Result};

/// An opened adapter and what the commands report about it.
pub struct Engine {
    ctx: GpuContext,
}

impl Engine {
    /// Opens the adapter `choice` selects (flags, then environment, then the default adapter).
    pub fn open(choice: &AdapterChoice) -> Result<Engine> {
        Ok(Engine { ctx: GpuContext::new(choice)? })
    }

    /// `{name, backend, driver, path}` for JSON output.
    pub fn describe_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.ctx.info.name,
            "backend": backend_name(self.ctx.info.backend),
            "driver": self.ctx.info.driver,
            "path": self.path_name(),
        })
    }

    /// `name (backend, path)` for human output.
    pub fn describe(&self) -> String {
        format!("{} ({}, {} path)", self.ctx.info.name, backend_name(self.ctx.info.backend), self.path_name())
    }

    /// The codec path the device supports: the same rule as `bitsparse::Codec::new`.
    pub fn path_name(&self) -> &'static str {
        if self.ctx.device.features().contains(wgpu::Features::SUBGROUP) {
            "subgroup"
        } else {
            "portable"
        }
    }

    /// Compresses `data` into one compact tensor stream.
    ///
    /// STUB until `bitsparse::host::compress_to_vec` lands: this is the CPU reference codec. Switching to
    /// the GPU is this one call.
    pub fn compress(&self, data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
        bitsparse::cpu::compress(data, dtype, options)
    }

    /// Decompresses one tensor stream.
    ///
    /// STUB until `bitsparse::host::decompress_to_vec` lands: this is the CPU reference codec.
    pub fn decompress(&self, stream: &[u8]) -> Result<Vec<u8>> {
        bitsparse::cpu::decompress(stream)
    }
}
