//! [`BitSparseMlp`]: the MLP block a Burn model swaps in for its dense one.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use burn::backend::Dispatch;

use crate::context::BitSparse;
use crate::ops::{BitSparseBackend, Stash};

/// The activation between the two projections.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum MlpActivation {
    /// a = relu(z).
    Relu,
    /// a = relu(z)² (Modded-NanoGPT, Nemotron-H).
    Relu2,
}

impl MlpActivation {
    fn core(self) -> bitsparse::Activation {
        match self {
            MlpActivation::Relu => bitsparse::Activation::Relu,
            MlpActivation::Relu2 => bitsparse::Activation::Relu2,
        }
    }
}

/// Configuration of a [`BitSparseMlp`]: `Linear(d_model → d_ff) → act → Linear(d_ff → d_model)`.
#[derive(Config, Debug)]
pub struct BitSparseMlpConfig {
    /// Model width.
    pub d_model: usize,
    /// Hidden width (usually 4 · d_model).
    pub d_ff: usize,
    /// The activation.
    #[config(default = "MlpActivation::Relu2")]
    pub activation: MlpActivation,
    /// Biases on both projections.
    #[config(default = true)]
    pub bias: bool,
}

impl BitSparseMlpConfig {
    /// A block on `device` whose training forward keeps relu(z) compressed in `ctx`'s arena. The
    /// parameters are two Burn `Linear`s, `fc1` and `fc2`, initialised exactly as
    /// `LinearConfig::new(..).with_bias(..).init(device)` would be (for another initialisation, build the
    /// `Linear`s and use [`BitSparseMlp::from_linears`]).
    pub fn init(&self, device: &Device, ctx: &BitSparse) -> BitSparseMlp {
        let linear = |i, o| LinearConfig::new(i, o).with_bias(self.bias).init(device);
        BitSparseMlp {
            fc1: linear(self.d_model, self.d_ff),
            fc2: linear(self.d_ff, self.d_model),
            activation: self.activation,
            ctx: Some(ctx.clone()),
        }
    }
}

/// `Linear → ReLU² (or ReLU) → Linear` whose autodiff state is the block's input and the BitSparse
/// stream of relu(z) instead of Burn's 13·d floats per token (x, h, r and r²). Its parameters are
/// those of a dense block with fields `fc1` and `fc2` (records load either way), and its output,
/// loss and gradients are bit-identical to [`BitSparseMlp::forward_dense`]'s where Burn's matmuls run
/// the same kernels in both (Burn's fusion folds the dense activation into the matmuls around it, and
/// autotune picks a fused matmul's kernel apart from a plain one's, by timing: `docs/FUSED.md`).
#[derive(Module, Debug)]
pub struct BitSparseMlp {
    /// The first projection.
    pub fc1: Linear,
    /// The second projection.
    pub fc2: Linear,
    /// The activation.
    #[module(skip)]
    pub activation: MlpActivation,
    /// The device's BitSparse context; `None` runs the dense block.
    #[module(skip)]
    pub ctx: Option<BitSparse>,
}

impl BitSparseMlp {
    /// A block from two existing projections (e.g. a dense model's), keeping its activations in `ctx`.
    pub fn from_linears(fc1: Linear, fc2: Linear, activation: MlpActivation, ctx: Option<&BitSparse>) -> Self {
        BitSparseMlp { fc1, fc2, activation, ctx: ctx.cloned() }
    }

    /// The forward: with a context, the BitSparse op (compressed state under autodiff, Burn's dense
    /// math without); without one, [`BitSparseMlp::forward_dense`].
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let Some(ctx) = &self.ctx else { return self.forward_dense(x) };
        let stash = Stash::new(ctx, self.activation.core());
        let w1 = self.fc1.weight.val().into_dispatch();
        let w2 = self.fc2.weight.val().into_dispatch();
        let y = match (&self.fc1.bias, &self.fc2.bias) {
            (Some(b1), Some(b2)) => <Dispatch as BitSparseBackend>::bitsparse_mlp(
                x.into_dispatch(),
                w1,
                b1.val().into_dispatch(),
                w2,
                b2.val().into_dispatch(),
                stash,
            ),
            (None, None) => <Dispatch as BitSparseBackend>::bitsparse_mlp_no_bias(x.into_dispatch(), w1, w2, stash),
            // One bias without the other is not a block Burn's MLPs build: Burn's dense math.
            _ => return self.forward_dense(x),
        };
        Tensor::from_dispatch(y)
    }

    /// Burn's own dense block, op for op: `fc1.forward`, `relu`, `r * r`, `fc2.forward` (the reference
    /// the BitSparse forward is bit-identical to, given the same matmul kernels).
    pub fn forward_dense<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let r = burn::tensor::activation::relu(self.fc1.forward(x));
        let a = match self.activation {
            MlpActivation::Relu => r,
            MlpActivation::Relu2 => r.clone() * r,
        };
        self.fc2.forward(a)
    }
}
