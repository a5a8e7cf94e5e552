//! # bitsparse-burn
//!
//! BitSparse inside Burn's autodiff: [`BitSparseMlp`] is the MLP block `Linear → ReLU² (or ReLU) →
//! Linear` whose backward state is the block's input and relu(z) compressed losslessly on the GPU (a
//! 1-bit mask + the nonzeros), in an arena on Burn's own wgpu device. Its outputs and gradients are
//! bit-identical to Burn's dense block wherever Burn runs the same matmul kernels for both (its
//! autotune picks them by timing, per fused graph: `docs/FUSED.md`); the block keeps about 5 KB per
//! token at d = 768 instead of Burn's 40 KB.
//!
//! ```no_run
//! use bitsparse_burn::{BitSparse, BitSparseConfig, BitSparseMlpConfig};
//! use burn::tensor::{Device, Tensor};
//!
//! // Burn opens the device; BitSparse borrows its handles.
//! let (device, setup) = Device::wgpu_options().init_with_setup().unwrap();
//! let device = device.autodiff();
//! let ctx = BitSparse::new(&device, &setup.device, &setup.queue, BitSparseConfig::default()).unwrap();
//! let mlp = BitSparseMlpConfig::new(768, 3072).init(&device, &ctx);
//!
//! ctx.begin_step(&device).unwrap();
//! let x = Tensor::<3>::ones([4, 256, 768], &device);
//! let loss = mlp.forward(x).sum();
//! let grads = loss.backward();
//! ctx.request_status(&device).unwrap(); // the step's one status read starts here, unwaited
//! // ... record the optimizer step on a copy of the model here ...
//! ctx.finish_step(&device).unwrap(); // and is collected here: an overflow is an error, drop that update
//! # let _ = grads;
//! ```
//!
//! The step protocol, the memory it saves and its limits: `README.md`, "Use with Burn".

#![warn(missing_docs)]

mod context;
mod error;
mod module;
mod ops;

/// How the fused forward places its tiles ([`BitSparseConfig::tile_order`]).
pub use bitsparse::TileOrder;
pub use context::{BitSparse, BitSparseConfig, StepReport};
pub use error::{CodecError, Error, Result};
pub use module::{BitSparseMlp, BitSparseMlpConfig, MlpActivation};
pub use ops::{BitSparseBackend, Stash};
