//! The dense reference the BitSparse block is compared with: Burn's own dense block, op for op
//! (`fc1.forward`, `relu`, `r * r`, `fc2.forward`, and Burn's autodiff of them), with a fusion barrier
//! on each side of the activation, forward and backward.
//!
//! Why the barriers: Burn's fusion folds a dense activation into the GEMMs around it (a = r·r into
//! fc2's matmul, the ReLU² backward into dL/da's), and a fused matmul is autotuned under another key
//! than the plain matmul the BitSparse block runs there (its activation is an op of its own, which
//! fusion does not enter). Autotune picks by timing, so the two twins could run kernels of different
//! summation orders, and which ones changed from run to run: CI's run of 2026-12-07 failed
//! `train_bit_identical_burn_f32_relu2` at its 15-row step (forward output), where on this machine
//! fc2's plain 16×32×256 matmul key was won by `matmul_simple_unit_min_tile_size` by 0.76 against
//! 1.25–1.61 ms for `gemm_None` and `matmul_simple_unit_max_tile_size`, and its dL/dx key by
//! `gemm_None` in 8 runs of 9 (cubecl's autotune log). Behind the barriers every GEMM of the
//! reference has the same neighbours, hence the same autotune key and the same kernel, as the
//! BitSparse block's, and the comparison checks what bitsparse-burn computes: the activation, its
//! compressed state and its backward, bit for bit.

use bitsparse_burn::{BitSparseMlp, MlpActivation};
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{unary, Backward, Ops};
use burn::backend::autodiff::Autodiff;
use burn::backend::{backend_extension, tensor::FloatTensor, Backend, Dispatch};
use burn::tensor::Tensor;
use burn_cubecl::CubeBackend;

/// An exact copy that fusion treats as an op of its own (a custom op), so nothing fuses across it.
#[backend_extension(Cube, Autodiff, Fusion)]
pub trait BarrierBackend: Backend {
    /// A copy of `x`, bit for bit; under autodiff its gradient is the same copy of the incoming one.
    #[fusion(meta = |x| x.clone())]
    fn fusion_barrier(x: FloatTensor<Self>) -> FloatTensor<Self>;
}

impl BarrierBackend for CubeBackend {
    fn fusion_barrier(x: FloatTensor<Self>) -> FloatTensor<Self> {
        // A new buffer: the output must not alias an input that Burn may still read or reuse.
        x.copy()
    }
}

#[derive(Debug)]
struct BarrierGrad;

impl<B: BarrierBackend> Backward<B, 1> for BarrierGrad {
    type State = ();

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        unary::<B, _>(ops.parents, ops.node, grads, B::fusion_barrier);
    }
}

impl<B: BarrierBackend, C: CheckpointStrategy> BarrierBackend for Autodiff<B, C> {
    fn fusion_barrier(x: FloatTensor<Self>) -> FloatTensor<Self> {
        BarrierGrad.prepare::<C>([x.node()]).compute_bound().stateless(B::fusion_barrier(x.into_primitive()))
    }
}

fn barrier<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as BarrierBackend>::fusion_barrier(x.into_dispatch()))
}

/// `m`'s forward: the BitSparse op when `m` has a context, else [`dense`].
pub fn forward<const D: usize>(m: &BitSparseMlp, x: Tensor<D>) -> Tensor<D> {
    if m.ctx.is_some() {
        m.forward(x)
    } else {
        dense(m, x)
    }
}

/// Burn's dense block on `m`'s weights with the activation fenced off from both projections (see the
/// module's documentation).
pub fn dense<const D: usize>(m: &BitSparseMlp, x: Tensor<D>) -> Tensor<D> {
    let r = burn::tensor::activation::relu(barrier(m.fc1.forward(x)));
    let a = match m.activation {
        MlpActivation::Relu => r,
        MlpActivation::Relu2 => r.clone() * r,
    };
    m.fc2.forward(barrier(a))
}
