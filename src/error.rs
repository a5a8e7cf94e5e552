//! The library's error type. Every failure the host can see is one of these: no panics on bad input.

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, typed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A buffer range is smaller than what the operation needs.
    #[error("{what}: range of {got} bytes is too small, {need} bytes are needed")]
    RangeTooSmall {
        /// Which range (the argument's name).
        what: &'static str,
        /// Bytes needed.
        need: u64,
        /// Bytes given.
        got: u64,
    },
    /// A range offset does not respect the device's `min_storage_buffer_offset_alignment`, or a size is not
    /// whole 32-bit words where the kernels need that.
    #[error("{what}: offset {offset} is not a multiple of {align} bytes")]
    Misaligned {
        /// Which range.
        what: &'static str,
        /// The offending offset (or size), in bytes.
        offset: u64,
        /// The alignment required, in bytes.
        align: u64,
    },
    /// A range lies (partly) outside its buffer.
    #[error("{what}: range {offset}+{size} is outside the buffer of {buffer_size} bytes")]
    OutOfBounds {
        /// Which range.
        what: &'static str,
        /// Its offset in bytes.
        offset: u64,
        /// Its size in bytes.
        size: u64,
        /// The buffer's size in bytes.
        buffer_size: u64,
    },
    /// Two ranges of one operation overlap in one buffer where one of them is written (an input and an
    /// output, or two outputs). Ranges may share a buffer (pooled tensors), not bytes: a kernel reading
    /// what another workgroup writes would race. Returned before anything is recorded.
    #[error("{a} and {b} overlap in one buffer (ranges may share a buffer, not bytes)")]
    OverlappingRanges {
        /// The first range (the argument's name).
        a: &'static str,
        /// The second range.
        b: &'static str,
    },
    /// A buffer lacks a usage flag the operation needs.
    #[error("{what}: buffer lacks usage {usage}")]
    MissingUsage {
        /// Which buffer.
        what: &'static str,
        /// The `wgpu::BufferUsages` flag it lacks.
        usage: &'static str,
    },
    /// A tensor too large for format version 1 (u32 word offsets).
    #[error("tensor of {elements} elements is too large for format version 1")]
    TooLarge {
        /// The tensor's element count.
        elements: u64,
    },
    /// The input's length is not a whole number of elements.
    #[error("input of {bytes} bytes is not a whole number of {elem_bytes}-byte elements")]
    PartialElement {
        /// The input's length in bytes.
        bytes: u64,
        /// Bytes per element of the dtype.
        elem_bytes: u64,
    },
    /// Sign packing was requested but a nonzero value has its sign bit set.
    #[error("sign packing requested, but a value has its sign bit set (element {index:?})")]
    SignBitSet {
        /// The first such element, when the host knows it (the GPU only flags the tensor).
        index: Option<u64>,
    },
    /// The arena had no room for a tensor.
    #[error("arena overflow: {needed} bytes needed, capacity {capacity} bytes")]
    ArenaOverflow {
        /// Bytes the tensors of the step needed.
        needed: u64,
        /// The arena's capacity in bytes.
        capacity: u64,
    },
    /// A compressed stream or container is malformed.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The device lacks a feature or limit the operation requires.
    #[error("unsupported device: {0}")]
    Unsupported(String),
    /// Asked for something the format or API does not allow.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// No adapter matched, or the device could not be created.
    #[error("no adapter: {0}")]
    NoAdapter(String),
    /// wgpu reported a validation or out-of-memory error.
    #[error("wgpu: {0}")]
    Wgpu(String),
    /// A host synchronisation (map, poll) failed.
    #[error("device sync: {0}")]
    Sync(String),
    /// File I/O.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
