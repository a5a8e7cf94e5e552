//! The activation the fused and dense kernels apply after the ReLU. A GPU-facing enum (it was
//! `cpu::act::Activation`): the kernels, the arena and the CPU port (`cpu::act`) all take it, and it
//! stays an enum until it is written into a kernel's uniform ([`Activation::code`]).

/// The activation applied after the ReLU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// a = relu(z).
    Relu,
    /// a = relu(z)².
    Relu2,
}

impl Activation {
    /// Code passed to the kernels.
    pub fn code(self) -> u32 {
        match self {
            Activation::Relu => 0,
            Activation::Relu2 => 1,
        }
    }
}
