//! Rows for the fused training kernels (issue 3, `bitsparse::fused`) and the plain dense ReLU² kernels
//! they are compared with.
//!
//! Each op is one function returning its [`Case`] for a batch, or `None` while the kernel does not exist
//! or does not apply (the fused kernels take BF16 pre-activations, so an FP8 batch has none). To add an
//! op: implement [`Case`] for it here (inputs from [`super::data::pre_activation_bf16`] and the batch's
//! data, buffers from [`super::gpu`]), return it from its function and list it in [`implemented`].
//! Bytes that must move (CONVENTIONS.md, issue 4):
//! - fused forward: read z; write a, mask, values;
//! - fused backward: read mask, values, g; write dL/dz (and a when asked);
//! - plain forward: read z, write a;
//! - plain backward: read r and g, write dL/dz.

use crate::error::Result;

use super::case::{BatchCtx, Case};
use super::op::Op;

/// Whether `op`'s case exists yet.
pub fn implemented(op: Op) -> bool {
    let _ = op;
    false
}

/// Fused forward: z → (a, compressed relu(z)). Waiting on `bitsparse::fused`.
pub fn fused_forward<'a>(ctx: &BatchCtx<'a>, sign_pack: bool) -> Result<Option<Box<dyn Case + 'a>>> {
    let _ = (ctx, sign_pack);
    Ok(None)
}

/// Fused backward: (compressed r, g) → dL/dz. Waiting on `bitsparse::fused`.
pub fn fused_backward<'a>(ctx: &BatchCtx<'a>, sign_pack: bool) -> Result<Option<Box<dyn Case + 'a>>> {
    let _ = (ctx, sign_pack);
    Ok(None)
}

/// Plain dense forward: z → a = relu(z)². Waiting on the dense kernels of `bitsparse::fused`.
pub fn plain_forward<'a>(ctx: &BatchCtx<'a>) -> Result<Option<Box<dyn Case + 'a>>> {
    let _ = ctx;
    Ok(None)
}

/// Plain dense backward: (r, g) → dL/dz = 2·r·g. Waiting on the dense kernels of `bitsparse::fused`.
pub fn plain_backward<'a>(ctx: &BatchCtx<'a>) -> Result<Option<Box<dyn Case + 'a>>> {
    let _ = ctx;
    Ok(None)
}
