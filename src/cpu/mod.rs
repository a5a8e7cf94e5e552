//! The CPU reference codec: format version 1 (`docs/FORMAT.md`) in plain Rust.
//!
//! It is the spec in code: the GPU kernels are tested against it, and it decodes on the host what the
//! GPU wrote. Each stage is a port of the WGSL stage of the same name (`tile_mask` / `tile_compact` in
//! [`compress`], `tile_expand` in [`decompress`]), processing one tile at a time so that a reader can put
//! the two side by side.
//!
//! * [`compress`] writes the compact canonical stream (tiles in order, no gaps).
//! * [`decompress`], [`validate`], [`decompress_range`] and [`compact`] accept any valid placement (a
//!   chunked GPU compress leaves gaps, a GPU variant may order tiles differently) and reject everything
//!   else with an error, never a panic.
//! * [`synthetic_relu2`] / [`synthetic_bits`] make deterministic test and demo data.

mod compress;
mod decompress;
mod place;
mod synth;
mod validate;
mod words;

pub use compress::{compress, count_nonzeros};
pub use decompress::{decompress, decompress_range, validate};
pub use place::{compact, place_chunked};
pub use synth::{synthetic_bits, synthetic_relu2};
