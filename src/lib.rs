//! # bitsparse
//!
//! Lossless GPU compression of sparse ReLU / ReLU² activations on wgpu: a 1-bit-per-element mask plus the
//! nonzeros compacted in element order, rebuilt bit-exactly. See `docs/FORMAT.md` for the bytes and
//! `README.md` for the tour.
//!
//! The library never owns a device: [`Codec`] borrows the caller's `wgpu::Device`, records into the caller's
//! `CommandEncoder` and takes `(buffer, offset, size)` ranges. Helpers that submit, read back and
//! open devices live in [`host`] (with [`host::sync`], the one place the library waits on the GPU, and
//! [`host::context`]) and are for tests, tools and the CLI, not for the training path.

#![warn(missing_docs)]

pub mod activation;
pub mod arena;
pub mod conformance;
pub mod cpu;
pub mod dense_act;
pub mod dispatch;
pub mod error;
pub mod format;
pub mod host;
pub mod kernels;
pub mod shaders;
pub mod update;

mod codec;
mod overlap;

pub use activation::Activation;
pub use codec::{BufferRange, Codec, CodecConfig, CodecPath, Compressed, Placement, Staging};
pub use error::{Error, Result};
pub use format::{DType, FormatVersion, Layout, Options, StreamInfo};
pub use kernels::TileOrder;
