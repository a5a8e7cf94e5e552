//! Little-endian 32-bit word access and the LSB-first bit stream shared by compress and decompress.
//!
//! Streams are handled as byte slices (not `&[u32]`) so that any caller's `&[u8]` can be read in place
//! whatever its alignment, and so that the on-disk byte order (little-endian) is explicit here and
//! nowhere else.

/// Word `i` of `bytes`, or `None` past the end. Used only on untrusted data whose length was not
/// checked yet; hot loops go through [`BitReader`] over a pre-checked slice instead.
pub(crate) fn word(bytes: &[u8], i: u64) -> Option<u32> {
    let start = usize::try_from(i).ok()?.checked_mul(4)?;
    let b = bytes.get(start..start.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The byte sub-slice of `count` words starting at word `start`, or `None` when it does not fit.
pub(crate) fn word_range(bytes: &[u8], start: u64, count: u64) -> Option<&[u8]> {
    let s = usize::try_from(start.checked_mul(4)?).ok()?;
    let len = usize::try_from(count.checked_mul(4)?).ok()?;
    bytes.get(s..s.checked_add(len)?)
}

/// Writes `w` as word `i` of `out`. `out` is always sized by the caller from the layout, so an index
/// past the end is a bug of this crate; it is caught in debug builds and ignored (not a panic) in release.
#[inline]
pub(crate) fn put_word(out: &mut [u8], i: usize, w: u32) {
    let s = i * 4;
    debug_assert!(s + 4 <= out.len(), "put_word past the end");
    if let Some(dst) = out.get_mut(s..s + 4) {
        dst.copy_from_slice(&w.to_le_bytes());
    }
}

/// Number of mask bits set in a run of little-endian mask words.
pub(crate) fn popcount_words(mask: &[u8]) -> u64 {
    mask.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]).count_ones() as u64).sum()
}

/// Appends values of `width` bits LSB-first into whole little-endian words: value `k` occupies stream
/// bits `[k*width, (k+1)*width)`, and stream bit `s` is bit `s % 32` of word `s / 32`.
pub(crate) struct BitWriter<'a> {
    out: &'a mut [u8],
    word: usize,
    acc: u64,
    nbits: u32,
}

impl<'a> BitWriter<'a> {
    /// A writer filling `out`, which must hold exactly the stream's words.
    pub(crate) fn new(out: &'a mut [u8]) -> Self {
        BitWriter { out, word: 0, acc: 0, nbits: 0 }
    }

    /// Appends the low `width` bits of `v` (the caller has already cleared the bits above `width`).
    #[inline(always)]
    pub(crate) fn push(&mut self, v: u32, width: u32) {
        // `nbits < 32` on entry and `width <= 32`, so the accumulator never holds more than 63 bits.
        self.acc |= (v as u64) << self.nbits;
        self.nbits += width;
        if self.nbits >= 32 {
            put_word(self.out, self.word, self.acc as u32);
            self.word += 1;
            self.acc >>= 32;
            self.nbits -= 32;
        }
    }

    /// Flushes the last, zero-padded word. Returns the words written.
    pub(crate) fn finish(mut self) -> usize {
        if self.nbits > 0 {
            put_word(self.out, self.word, self.acc as u32);
            self.word += 1;
        }
        self.word
    }
}

/// Reads values of `width` bits from a stream written by [`BitWriter`]. Reading past the end yields
/// zero bits (the decoder only reads as many values as the mask announces, which validation has
/// matched against the stream's length, so this never happens on a validated stream).
pub(crate) struct BitReader<'a> {
    words: std::slice::ChunksExact<'a, u8>,
    acc: u64,
    nbits: u32,
}

impl<'a> BitReader<'a> {
    /// A reader over the stream's bytes (whole words).
    pub(crate) fn new(stream: &'a [u8]) -> Self {
        BitReader { words: stream.chunks_exact(4), acc: 0, nbits: 0 }
    }

    /// The next value of `width` (<= 32) bits.
    #[inline(always)]
    pub(crate) fn pop(&mut self, width: u32) -> u32 {
        if self.nbits < width {
            let w = self.words.next().map_or(0, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            self.acc |= (w as u64) << self.nbits;
            self.nbits += 32;
        }
        let v = (self.acc as u32) & (u32::MAX >> (32 - width));
        self.acc >>= width;
        self.nbits -= width;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_reader_round_trip_all_widths() {
        for width in [7u32, 8, 15, 16, 31, 32] {
            let vals: Vec<u32> = (0..100u32).map(|i| i.wrapping_mul(2654435761) & (u32::MAX >> (32 - width))).collect();
            let words = (vals.len() as u64 * width as u64).div_ceil(32) as usize;
            let mut buf = vec![0u8; words * 4];
            let mut w = BitWriter::new(&mut buf);
            for &v in &vals {
                w.push(v, width);
            }
            assert_eq!(w.finish(), words);
            let mut r = BitReader::new(&buf);
            let back: Vec<u32> = vals.iter().map(|_| r.pop(width)).collect();
            assert_eq!(back, vals, "width {width}");
        }
    }

    #[test]
    fn fifteen_bit_layout_is_lsb_first() {
        // 0x3F80 in bits 0..15, 0x4000 in bits 15..30, 0x7FC1 in bits 30..45 (see docs/FORMAT.md).
        let mut buf = vec![0u8; 8];
        let mut w = BitWriter::new(&mut buf);
        for v in [0x3F80, 0x4000, 0x7FC1] {
            w.push(v, 15);
        }
        assert_eq!(w.finish(), 2);
        assert_eq!(word(&buf, 0), Some(0x6000_3F80));
        assert_eq!(word(&buf, 1), Some(0x0000_1FF0));
    }

    #[test]
    fn word_access_is_checked() {
        let b = [1u8, 0, 0, 0, 2];
        assert_eq!(word(&b, 0), Some(1));
        assert_eq!(word(&b, 1), None);
        assert_eq!(word(&b, u64::MAX), None);
        assert!(word_range(&b, 0, 1).is_some());
        assert!(word_range(&b, 1, 1).is_none());
        assert!(word_range(&b, u64::MAX / 2, 3).is_none());
    }
}
