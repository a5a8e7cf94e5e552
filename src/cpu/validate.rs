//! Parsing and full validation of an untrusted compressed stream, shared by decode, random access and
//! [`compact`](super::compact).
//!
//! Every size is checked against the slice before anything proportional to the header's claims is
//! allocated, and all arithmetic on header values is done in u64 on quantities that
//! [`Layout::from_header`] has already bounded (n below ~2^37), so no header can cause an overflow,
//! a huge allocation or an out-of-bounds index.

use super::words::{popcount_words, word, word_range};
use crate::error::{Error, Result};
use crate::format::{status, stream_words, Header, Layout, HEADER_BYTES, HEADER_WORDS, TILE_MASK_WORDS};

/// Where one tile's stream lies in the values section, in words.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// `table[t]`.
    pub offset: u64,
    /// `stream_words(count, width)`.
    pub words: u64,
}

/// A stream that passed every check of `docs/FORMAT.md` ("Validity").
pub(crate) struct Parsed<'a> {
    pub layout: Layout,
    pub header: Header,
    /// The mask section's bytes.
    pub mask: &'a [u8],
    /// The values section's bytes, `VALUE_WORDS` words.
    pub values: &'a [u8],
    /// One span per tile, in tile order.
    pub spans: Vec<Span>,
}

impl<'a> Parsed<'a> {
    /// Mask bytes of tile `t`.
    pub fn tile_mask(&self, t: u64) -> &'a [u8] {
        let first = t * TILE_MASK_WORDS as u64;
        let count = (self.layout.mask_words - first).min(TILE_MASK_WORDS as u64);
        word_range(self.mask, first, count).unwrap_or(&[])
    }

    /// Stream bytes of tile `t` (validated to lie inside the values section).
    pub fn tile_stream(&self, t: u64) -> &'a [u8] {
        let s = self.spans[t as usize];
        word_range(self.values, s.offset, s.words).unwrap_or(&[])
    }
}

fn corrupt(msg: impl Into<String>) -> Error {
    Error::Corrupt(msg.into())
}

/// Rejects a stream whose header status says it is not valid data.
pub(crate) fn check_status(st: u32) -> Result<()> {
    if st & status::SIGN_BIT_SET != 0 {
        return Err(Error::SignBitSet { index: None });
    }
    if st & status::OVERFLOW != 0 {
        return Err(corrupt("stream is marked overflowed (status OVERFLOW): its data was never written"));
    }
    if st & status::SKIPPED != 0 {
        return Err(corrupt("stream is marked skipped (status SKIPPED): it depends on an invalid tensor"));
    }
    if st != 0 {
        return Err(corrupt(format!("unknown status bits {st:#x}")));
    }
    Ok(())
}

/// Parses and validates `stream` completely (everything except the padding bits, which are ignored).
pub(crate) fn parse(stream: &[u8]) -> Result<Parsed<'_>> {
    if (stream.len() as u64) < HEADER_BYTES {
        return Err(corrupt(format!("truncated: {} bytes, the header alone needs {HEADER_BYTES}", stream.len())));
    }
    let mut h = [0u32; HEADER_WORDS as usize];
    for (i, w) in h.iter_mut().enumerate() {
        *w = word(stream, i as u64).unwrap_or(0);
    }
    let (layout, header) = Layout::from_header(&h)?;
    check_status(header.status)?;
    let value_words = header.value_words as u64;
    let need = layout.compact_bytes(value_words);
    if (stream.len() as u64) < need {
        return Err(corrupt(format!("truncated: {} bytes, the header announces {need}", stream.len())));
    }
    // All four sections now lie within the slice, so these ranges cannot fail.
    let table = word_range(stream, layout.table_offset, layout.tiles).ok_or_else(|| corrupt("table"))?;
    let mask = word_range(stream, layout.mask_offset, layout.mask_words).ok_or_else(|| corrupt("mask"))?;
    let values = word_range(stream, layout.values_offset, value_words).ok_or_else(|| corrupt("values"))?;

    let tail_bits = (layout.n % 32) as u32;
    if tail_bits != 0 {
        let last = word(mask, layout.mask_words - 1).unwrap_or(0);
        if last >> tail_bits != 0 {
            return Err(corrupt("mask bits set past the last element"));
        }
    }

    let width = layout.value_width();
    let mut spans = Vec::with_capacity(layout.tiles as usize);
    let mut in_order = true;
    let mut prev_end = 0u64;
    let mut max_end = 0u64;
    for (t, entry) in table.chunks_exact(4).enumerate() {
        let offset = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]) as u64;
        let first = t as u64 * TILE_MASK_WORDS as u64;
        let count = popcount_words(
            word_range(mask, first, (layout.mask_words - first).min(TILE_MASK_WORDS as u64)).unwrap_or(&[]),
        );
        let words = stream_words(count, width);
        // Empty tiles are checked too: their entry is never read, but every writer puts the position
        // its stream would have had, so an entry past VALUE_WORDS is damage.
        let end = offset + words;
        if end > value_words {
            return Err(corrupt(format!("tile {t}: stream [{offset}, {end}) outside the {value_words} value words")));
        }
        max_end = max_end.max(end);
        if words > 0 {
            in_order &= offset >= prev_end;
            prev_end = end;
        }
        spans.push(Span { offset, words });
    }
    // VALUE_WORDS is where the writer stopped: the end of the stream furthest out (in a chunked stream,
    // the end of the last chunk's last tile). Checking equality catches a damaged VALUE_WORDS, and a
    // damaged dtype or flags byte whose width changes the stream sizes.
    if max_end != value_words {
        return Err(corrupt(format!("VALUE_WORDS is {value_words}, but the tile streams end at {max_end}")));
    }
    if !in_order {
        let mut sorted: Vec<Span> = spans.iter().copied().filter(|s| s.words > 0).collect();
        sorted.sort_unstable_by_key(|s| s.offset);
        if sorted.windows(2).any(|p| p[0].offset + p[0].words > p[1].offset) {
            return Err(corrupt("tile streams overlap"));
        }
    }
    Ok(Parsed { layout, header, mask, values, spans })
}
