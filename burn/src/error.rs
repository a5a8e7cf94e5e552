//! The integration's typed errors.

/// What can go wrong in the Burn integration.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A compressed activation did not fit the arena: this step's gradients are wrong. Grow the arena
    /// ([`crate::BitSparse::grow`]) and re-run the step.
    #[error(
        "the bitsparse arena overflowed ({needed} bytes needed, {capacity} available): grow it and re-run the step"
    )]
    ArenaOverflow {
        /// Bytes the step needed (a lower bound when the overflow cut the step short).
        needed: u64,
        /// The arena's capacity.
        capacity: u64,
    },
    /// The arena cannot grow: it is already the largest one storage binding allows.
    #[error("the bitsparse arena is already at the device's storage-binding limit ({capacity} bytes)")]
    ArenaAtLimit {
        /// The capacity.
        capacity: u64,
    },
    /// A tensor the op cannot take: its dtype, its device or its layout.
    #[error("unsupported tensor: {0}")]
    Unsupported(String),
    /// A backward ran without the compressed tensor of its forward (the step was reset between them,
    /// or the graph's backward ran twice).
    #[error("the compressed activation of this MLP block is gone (was the step reset between forward and backward?)")]
    MissingSlot,
    /// Burn or CubeCL refused something (flushing, the buffer behind a tensor).
    #[error("burn: {0}")]
    Burn(String),
    /// The codec's error.
    #[error(transparent)]
    Codec(#[from] CodecError),
}

/// The core library's error, shareable.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CodecError(pub String);

impl From<bitsparse::Error> for Error {
    fn from(e: bitsparse::Error) -> Self {
        match e {
            bitsparse::Error::ArenaOverflow { needed, capacity } => Error::ArenaOverflow { needed, capacity },
            e => Error::Codec(CodecError(e.to_string())),
        }
    }
}

/// The integration's result.
pub type Result<T> = std::result::Result<T, Error>;
