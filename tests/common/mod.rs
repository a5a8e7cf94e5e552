//! Shared test set-up: the harness of the GPU test binaries (`harness`), opening lavapipe (Vulkan) or
//! llvmpipe (GL), and round-trip helpers. Included by the core's test binaries and, through `#[path]`, by
//! the CLI's, the demos' and the bench harness's.
#![allow(dead_code, unused_imports, unused_macros)]

pub mod harness;

use bitsparse::host::context::{self, GpuContext};

use harness::Absent;

/// True when running in CI, where a missing backend is a failure, not a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
}

/// The first adapter of `backend` that opens (lavapipe on Vulkan, llvmpipe on GL here). None enumerated:
/// [`Absent::Missing`]; some enumerated but none opens: [`Absent::Broken`].
pub fn try_open(backend: wgpu::Backends) -> Result<GpuContext, Absent> {
    let adapters = context::enumerate(backend);
    if adapters.is_empty() {
        return Err(Absent::Missing("wgpu finds none".into()));
    }
    let mut errors = Vec::new();
    for a in adapters {
        match GpuContext::from_adapter(a, wgpu::Features::empty()) {
            Ok(c) => return Ok(c),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(Absent::Broken(format!("wgpu finds {} but none opens: {}", errors.len(), errors.join("; "))))
}

/// [`try_open`], for a [`harness::Requirement`]'s probe.
pub fn probe(backend: wgpu::Backends) -> Result<(), Absent> {
    try_open(backend).map(drop)
}

/// Opens `backend`; panics when it cannot (the harness has already checked that it can).
pub fn open(backend: wgpu::Backends) -> GpuContext {
    try_open(backend).unwrap_or_else(|e| panic!("opening a {backend:?} device: {e:?}"))
}

/// Vulkan (lavapipe here).
pub fn vulkan() -> GpuContext {
    open(wgpu::Backends::VULKAN)
}

/// GL (llvmpipe here).
pub fn gl() -> GpuContext {
    open(wgpu::Backends::GL)
}

/// Random bit patterns (sign bits included) at `density`; sign bits cleared for sign packing (a value
/// that was only its sign bit, e.g. -0.0, becomes zero: still a valid case).
pub fn data(n: usize, density: f64, dtype: bitsparse::DType, sign_pack: bool, seed: u64) -> Vec<u8> {
    let mut d = bitsparse::cpu::synthetic_bits(n, density, dtype, seed);
    if sign_pack {
        let eb = dtype.bytes() as usize;
        for e in d.chunks_mut(eb) {
            e[eb - 1] &= 0x7f;
        }
    }
    d
}

/// One case: GPU bytes equal CPU bytes, and each side decodes the other's stream bit-exactly.
pub fn round_trip(
    ctx: &GpuContext,
    codec: &bitsparse::Codec,
    bytes: &[u8],
    dtype: bitsparse::DType,
    options: bitsparse::Options,
    what: &str,
) {
    use bitsparse::{cpu, host};
    let cpu_stream = cpu::compress(bytes, dtype, options).unwrap_or_else(|e| panic!("{what}: cpu compress: {e}"));
    let gpu_stream = host::compress_to_vec(codec, &ctx.device, &ctx.queue, bytes, dtype, options)
        .unwrap_or_else(|e| panic!("{what}: gpu compress: {e}"));
    if gpu_stream != cpu_stream {
        let first = gpu_stream.iter().zip(&cpu_stream).position(|(a, b)| a != b);
        panic!(
            "{what}: GPU stream differs from CPU stream (lengths {} vs {}, first differing byte {first:?})",
            gpu_stream.len(),
            cpu_stream.len()
        );
    }
    let back = cpu::decompress(&gpu_stream).unwrap_or_else(|e| panic!("{what}: cpu decompress of gpu stream: {e}"));
    assert!(back == bytes, "{what}: CPU decode of GPU stream differs");
    let back = host::decompress_to_vec(codec, &ctx.device, &ctx.queue, &cpu_stream)
        .unwrap_or_else(|e| panic!("{what}: gpu decompress: {e}"));
    assert!(back == bytes, "{what}: GPU decode of CPU stream differs");
}

/// A storage buffer holding `data`, padded with zeros to whole 16-byte words plus 16 bytes.
pub fn buf(ctx: &GpuContext, data: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let mut d = data.to_vec();
    d.resize(data.len().div_ceil(16) * 16 + 16, 0);
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.input"),
        contents: &d,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    })
}

/// A buffer pre-filled with a canary byte, to see what a kernel wrote.
pub fn canary(ctx: &GpuContext, bytes: u64) -> wgpu::Buffer {
    buf(ctx, &vec![0xA5u8; bytes as usize])
}

/// Reads `len` bytes at `offset` of `b` back to the host (a counted host sync).
pub fn read_at(ctx: &GpuContext, b: &wgpu::Buffer, offset: u64, len: u64) -> Vec<u8> {
    bitsparse::host::sync::read_buffer(&ctx.device, &ctx.queue, b, offset, len).expect("readback")
}

/// Reads the first `len` bytes of `b`.
pub fn read(ctx: &GpuContext, b: &wgpu::Buffer, len: u64) -> Vec<u8> {
    read_at(ctx, b, 0, len)
}

/// BF16 pre-activations for the fused-kernel tests: every 97th element in turn −0.0, a NaN of each
/// sign and (with `inf`) +∞ and −∞; of the rest about 60 % zeros, and values of either sign with a
/// biased exponent in `exp_min .. exp_min + exp_span`. The callers keep that range where r² and 2·r·g
/// stay normal in f32 (GPUs may flush subnormals; docs/FUSED.md).
pub fn preact(n: usize, seed: u64, exp_min: u16, exp_span: u64, inf: bool) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut out = Vec::with_capacity(n * 2);
    for i in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let v: u16 = match i % 97 {
            0 => 0x8000,
            1 => 0x7fc1,
            2 => 0xffc1,
            3 if inf => 0x7f80,
            4 if inf => 0xff80,
            _ => {
                let sign = (s & 1) as u16;
                let exp = exp_min + ((s >> 8) % exp_span) as u16;
                let man = ((s >> 20) & 0x7f) as u16;
                if (s >> 40) % 5 < 3 {
                    0
                } else {
                    sign << 15 | exp << 7 | man
                }
            }
        };
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}
