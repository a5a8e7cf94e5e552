//! The CPU reference codec: format versions 1 and 2 (`docs/FORMAT.md`) in plain Rust.
//!
//! It is the spec in code: the GPU kernels are tested against it, and it decodes on the host what the
//! GPU wrote. It mirrors the WGSL one tile at a time so the two can be read side by side:
//! `compress.rs` is the CPU port of `shaders/compress.wgsl` (its `compress` entry point's mask and count,
//! chained scan and compaction become `tile_mask`, a prefix sum and `tile_compact`; its `finish` entry
//! point is the header write), and `decompress.rs` of `shaders/decompress.wgsl` (`tile_expand` is one
//! workgroup's tile).
//!
//! * [`compress()`] writes the compact canonical stream (tiles in order, no gaps).
//! * [`decompress()`], [`validate`], [`decompress_range`] and [`compact`] accept any valid placement (a
//!   chunked GPU compress leaves gaps, a GPU variant may order tiles differently) and reject everything
//!   else with an error, never a panic.
//! * [`synthetic_relu2`] / [`synthetic_bits`] make deterministic test and demo data.

pub mod act;
mod compress;
mod decompress;
pub mod fp8;
mod place;
mod synth;
pub mod v2;
mod validate;
mod words;

pub use compress::{compress, count_nonzeros};
pub use decompress::{decompress, decompress_range, validate, validate_any};
pub use place::{compact, place_chunked, place_shuffled};
pub use synth::{synthetic_bits, synthetic_relu2, SplitMix64, SPECIAL32};
pub use v2::{compress_v2, transcode_v1};

/// Compresses `data` into the compact canonical stream of `version`.
pub fn compress_version(
    data: &[u8],
    dtype: crate::DType,
    options: crate::Options,
    version: crate::FormatVersion,
) -> crate::Result<Vec<u8>> {
    match version {
        crate::FormatVersion::V1 => compress(data, dtype, options),
        crate::FormatVersion::V2 => compress_v2(data, dtype, options),
    }
}
