//! The activation the fused and dense kernels apply after the ReLU. A GPU-facing enum (it was
//! `cpu::act::Activation`): the kernels, the arena and the CPU port (`cpu::act`) all take it, and it
//! stays an enum until it is written into a kernel's uniform ([`Activation::code`]).

/// The activation applied after the ReLU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// a = relu(z).
    Relu,
    /// a = relu(z)². F16's backward rounds 2·g·r **once** (dr = f16(2·g·r)): what Burn 0.22.1's fused
    /// backward computes where its F16 arithmetic runs in f32 registers (lavapipe).
    Relu2,
    /// a = relu(z)², with F16's backward rounded **operation by operation** as IEEE F16 arithmetic does:
    /// t = f16(g·r), dr = t + t — what Burn's fused backward computes on GPUs with native F16 arithmetic
    /// (the H200: docs/FUSED.md). The two differ only where g·r is an F16 subnormal (|g·r| < 2⁻¹⁴);
    /// BF16 and F32 compute the same bits as [`Activation::Relu2`], and so does every forward.
    Relu2Stepwise,
}

impl Activation {
    /// Code passed to the kernels.
    pub fn code(self) -> u32 {
        match self {
            Activation::Relu => 0,
            Activation::Relu2 => 1,
            Activation::Relu2Stepwise => 2,
        }
    }

    /// Whether a = r² (either ReLU² variant).
    pub fn squares(self) -> bool {
        !matches!(self, Activation::Relu)
    }
}
