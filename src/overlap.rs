//! The rule for an operation's ranges in one buffer (pooled tensors: a Burn / CubeCL op's input and output
//! can be two ranges of one pool buffer): ranges may share a buffer but not bytes where one of them is
//! written. Two inputs may overlap (both are only read).
//!
//! Overlap is judged on whole 32-bit words, as the kernels access them (a range's last word may hold bytes
//! past its end, which the kernels preserve). With offsets aligned to the device's
//! `min_storage_buffer_offset_alignment` (a multiple of 4) that is the same as byte overlap. The bindings
//! the codec makes of one range (`Codec::window` widens them down to the alignment) stay inside that
//! range's words, so ranges that do not overlap give bindings that do not overlap either.

use crate::codec::BufferRange;
use crate::error::{Error, Result};
use crate::kernels::Sharing;

/// One range an operation touches: its name (for the error), its buffer, its bytes, and whether the
/// operation writes it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Use<B> {
    pub what: &'static str,
    pub buffer: B,
    pub offset: u64,
    pub size: u64,
    pub writes: bool,
}

impl<'a> Use<&'a wgpu::Buffer> {
    /// An input: only read.
    pub fn read(what: &'static str, r: &BufferRange<'a>) -> Self {
        Use { what, buffer: r.buffer, offset: r.offset, size: r.size, writes: false }
    }
    /// An output: written.
    pub fn write(what: &'static str, r: &BufferRange<'a>) -> Self {
        Use { what, buffer: r.buffer, offset: r.offset, size: r.size, writes: true }
    }
}

impl<B> Use<B> {
    /// The words the range touches, as a half-open byte range; empty for an empty range.
    fn words(&self) -> (u64, u64) {
        if self.size == 0 {
            return (0, 0);
        }
        (self.offset / 4 * 4, self.offset.saturating_add(self.size).saturating_add(3) / 4 * 4)
    }
}

/// Refuses two ranges of one buffer whose words overlap where either is written
/// (`Error::OverlappingRanges`, naming them in the order given). Otherwise the kernel variant the
/// operation needs: [`Sharing::Shared`] when a non-empty input lies in the buffer of an output (wgpu
/// refuses one buffer bound read-only and read-write in one dispatch), else [`Sharing::Separate`].
pub(crate) fn check<B: PartialEq>(uses: &[Use<B>]) -> Result<Sharing> {
    let mut sharing = Sharing::Separate;
    for (i, x) in uses.iter().enumerate() {
        for y in &uses[i + 1..] {
            if x.buffer != y.buffer || !(x.writes || y.writes) {
                continue;
            }
            let ((xs, xe), (ys, ye)) = (x.words(), y.words());
            if xs < xe && ys < ye && xs < ye && ys < xe {
                return Err(Error::OverlappingRanges { a: x.what, b: y.what });
            }
            if x.writes != y.writes && x.size > 0 && y.size > 0 {
                sharing = Sharing::Shared;
            }
        }
    }
    Ok(sharing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(what: &'static str, buffer: u32, offset: u64, size: u64, writes: bool) -> Use<u32> {
        Use { what, buffer, offset, size, writes }
    }

    #[test]
    fn separate_buffers_need_no_shared_variant() {
        let uses = [u("in", 0, 0, 100, false), u("out", 1, 0, 100, true)];
        assert_eq!(check(&uses).unwrap(), Sharing::Separate);
    }

    #[test]
    fn adjacent_ranges_of_one_buffer_share_it() {
        // Input before the output and after it, touching (the output starts at the input's end).
        for uses in [
            [u("in", 7, 0, 256, false), u("out", 7, 256, 64, true)],
            [u("in", 7, 256, 64, false), u("out", 7, 0, 256, true)],
        ] {
            assert_eq!(check(&uses).unwrap(), Sharing::Shared);
        }
        // An odd-sized range's last word ends at the next aligned offset: still no overlap.
        let uses = [u("in", 7, 0, 18, false), u("out", 7, 32, 10, true)];
        assert_eq!(check(&uses).unwrap(), Sharing::Shared);
    }

    #[test]
    fn overlap_with_a_written_range_is_refused() {
        let cases = [
            // Input and output, either order, by one byte, or one inside the other.
            ([u("z", 1, 0, 257, false), u("a", 1, 256, 64, true)], ("z", "a")),
            ([u("a", 1, 256, 64, true), u("z", 1, 0, 257, false)], ("a", "z")),
            ([u("g", 1, 0, 1024, false), u("dz", 1, 512, 16, true)], ("g", "dz")),
            // Two outputs.
            ([u("dz", 2, 64, 64, true), u("a", 2, 0, 65, true)], ("dz", "a")),
            // The same range in and out (in place).
            ([u("x", 3, 32, 32, false), u("x'", 3, 32, 32, true)], ("x", "x'")),
            // Bytes of one word: the kernels write whole words.
            ([u("in", 4, 0, 2, false), u("out", 4, 2, 2, true)], ("in", "out")),
        ];
        for (uses, (a, b)) in cases {
            match check(&uses) {
                Err(Error::OverlappingRanges { a: x, b: y }) => assert_eq!((x, y), (a, b), "{uses:?}"),
                other => panic!("{uses:?}: expected OverlappingRanges, got {other:?}"),
            }
        }
    }

    #[test]
    fn inputs_may_overlap_and_empty_ranges_never_do() {
        let uses = [u("r", 1, 0, 64, false), u("g", 1, 0, 64, false), u("dz", 2, 0, 64, true)];
        assert_eq!(check(&uses).unwrap(), Sharing::Separate);
        let uses = [u("in", 1, 64, 0, false), u("out", 1, 0, 128, true)];
        assert_eq!(check(&uses).unwrap(), Sharing::Separate, "an empty input is never bound");
        // Two outputs in one buffer are both read_write already: no shared variant needed.
        let uses = [u("dz", 1, 0, 64, true), u("a", 1, 64, 64, true), u("g", 2, 0, 64, false)];
        assert_eq!(check(&uses).unwrap(), Sharing::Separate);
    }
}
