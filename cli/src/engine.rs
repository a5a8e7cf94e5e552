//! The device the CLI works on and the codec calls it makes: the one place that decides whether a
//! stream is made on the GPU or by the CPU reference.

use bitsparse::host::context::{backend_name, AdapterChoice, GpuContext};
use bitsparse::{Codec, CodecPath, DType, FormatVersion, Options, Result};

/// An opened adapter, its codec (pipelines built once) and what the commands report about it.
pub struct Engine {
    ctx: GpuContext,
    codec: Codec,
    version: FormatVersion,
}

impl Engine {
    /// Opens the adapter `choice` selects (flags, then environment, then the default adapter).
    pub fn open(choice: &AdapterChoice) -> Result<Engine> {
        let ctx = GpuContext::new(choice)?;
        // The A/B knobs (BITSPARSE_STAGING, …) are the environment's; the library reads none itself.
        let codec = Codec::with_config(&ctx.device, bitsparse_bench::codec_config_from_env()?)?;
        Ok(Engine { ctx, codec, version: FormatVersion::default() })
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

    /// The codec path in use.
    pub fn path_name(&self) -> &'static str {
        match self.codec.path() {
            CodecPath::Subgroup => "subgroup",
            CodecPath::Portable => "portable",
        }
    }

    /// The format version [`Engine::compress`] writes (version 2 unless told).
    pub fn with_version(mut self, version: FormatVersion) -> Engine {
        self.version = version;
        self
    }

    /// Compresses `data` into one compact tensor stream on the GPU: version 1 (`host::compress_to_vec`),
    /// or version 2 (`host::compress_v2_to_vec`: the GPU picks each tile's encoding, the host lays the
    /// tiles out in the canonical order), byte-identical to the CPU reference either way.
    pub fn compress(&self, data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
        let (codec, dev, q) = (&self.codec, &self.ctx.device, &self.ctx.queue);
        match self.version {
            FormatVersion::V1 => bitsparse::host::compress_to_vec(codec, dev, q, data, dtype, options),
            FormatVersion::V2 => bitsparse::host::compress_v2_to_vec(codec, dev, q, data, dtype, options),
        }
    }

    /// The version-1 stream the GPU writes and its version-2 transcode (`analyze` reports both).
    pub fn compress_both(&self, data: &[u8], dtype: DType, options: Options) -> Result<(Vec<u8>, Vec<u8>)> {
        let v1 =
            bitsparse::host::compress_to_vec(&self.codec, &self.ctx.device, &self.ctx.queue, data, dtype, options)?;
        let v2 = bitsparse::cpu::transcode_v1(&v1)?;
        Ok((v1, v2))
    }

    /// Decompresses one tensor stream of either version, on the GPU (the host validates it first).
    pub fn decompress(&self, stream: &[u8]) -> Result<Vec<u8>> {
        bitsparse::host::decompress_to_vec(&self.codec, &self.ctx.device, &self.ctx.queue, stream)
    }
}
