//! Re-placing the tile streams of a valid stream: [`compact`] (any valid placement to the canonical
//! form) and [`place_chunked`] (the canonical form to the placement of a chunked GPU compress).
//!
//! Both keep the header's `AMAX` / `SCALE`, the mask and every tile's stream bytes; only the table,
//! `VALUE_WORDS` and where the streams sit change.

use super::validate::{parse, Parsed};
use super::words::put_word;
use crate::error::{Error, Result};
use crate::format::HEADER_WORDS;

/// Writes a stream with the parsed stream's header, mask and tile streams, tile `t` at value word
/// `offsets[t]`, and `value_words` in the header. Gaps are zero.
fn assemble(p: &Parsed<'_>, offsets: &[u64], value_words: u64) -> Result<Vec<u8>> {
    let l = &p.layout;
    let vw = u32::try_from(value_words).map_err(|_| Error::TooLarge { elements: l.n })?;
    let mut out = vec![0u8; l.compact_bytes(value_words) as usize];
    for (i, w) in l.header(vw, 0, p.header.amax, p.header.scale).into_iter().enumerate() {
        put_word(&mut out, i, w);
    }
    for (t, &off) in offsets.iter().enumerate() {
        put_word(&mut out, HEADER_WORDS as usize + t, off as u32);
    }
    let m = l.mask_offset as usize * 4;
    out[m..m + p.mask.len()].copy_from_slice(p.mask);
    let values = &mut out[l.values_offset as usize * 4..];
    for (t, &off) in offsets.iter().enumerate() {
        let src = p.tile_stream(t as u64);
        let at = off as usize * 4;
        values[at..at + src.len()].copy_from_slice(src);
    }
    Ok(out)
}

/// Rewrites a valid stream, whatever its tile placement (gaps between chunks, tiles out of order),
/// into the compact canonical form that [`compress`](super::compress) produces: tiles in order, no
/// gaps, `VALUE_WORDS` = the total. Byte-identical to `compress` of the decoded data when the input
/// was produced from the same data and options (the header's `AMAX` / `SCALE` are kept).
///
/// A version-2 stream (tile starts, gaps, any order) becomes its ordered canonical form.
pub fn compact(stream: &[u8]) -> Result<Vec<u8>> {
    if super::decompress::is_v2(stream) {
        return super::v2::compact_v2(stream);
    }
    let p = parse(stream)?;
    let mut offsets = Vec::with_capacity(p.spans.len());
    let mut total = 0u64;
    for s in &p.spans {
        offsets.push(total);
        total += s.words;
    }
    assemble(&p, &offsets, total)
}

/// Re-places a valid stream the way a GPU compress split into chunks of `chunk_tiles` tiles places it:
/// the chunk starting at tile `f` puts its tiles in order, without gaps, from value word
/// [`Layout::chunk_value_base(f)`](crate::format::Layout::chunk_value_base); `VALUE_WORDS` is the end of
/// the last chunk's streams. Used by tests to build gapped streams and to compare a chunked GPU output
/// byte for byte.
pub fn place_chunked(stream: &[u8], chunk_tiles: u64) -> Result<Vec<u8>> {
    if chunk_tiles == 0 {
        return Err(Error::InvalidArgument("chunk_tiles must be at least 1".into()));
    }
    let p = parse(stream)?;
    let mut offsets = Vec::with_capacity(p.spans.len());
    let mut next = 0u64;
    for (t, s) in p.spans.iter().enumerate() {
        if t as u64 % chunk_tiles == 0 {
            next = p.layout.chunk_value_base(t as u64);
        }
        offsets.push(next);
        next += s.words;
    }
    assemble(&p, &offsets, next)
}

/// Re-places a valid stream the way an unordered writer may (FORMAT.md §7): the tiles' streams in the
/// order of a permutation drawn from `seed`, each after a gap of 0–3 words of unspecified bytes
/// (0xA5) while the worst case leaves room, `VALUE_WORDS` where the last one ends. The CPU model of `TileOrder::Unordered` (which leaves
/// no gaps; a decoder must accept them anyway): tests feed it to every decoder.
pub fn place_shuffled(stream: &[u8], seed: u64) -> Result<Vec<u8>> {
    let p = parse(stream)?;
    let mut rng = super::SplitMix64(seed);
    let mut order: Vec<usize> = (0..p.spans.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut offsets = vec![0u64; p.spans.len()];
    let mut next = 0u64;
    // Gaps only within the worst case's slack (rule 5 bounds VALUE_WORDS by it).
    let total: u64 = p.spans.iter().map(|s| s.words).sum();
    let mut slack = p.layout.values_capacity.saturating_sub(total);
    for &t in &order {
        let gap = (rng.next_u64() % 4).min(slack);
        slack -= gap;
        next += gap;
        offsets[t] = next;
        next += p.spans[t].words;
    }
    // The end is where the last stream ends (rule 10): a trailing gap is not part of the section.
    let end = order.iter().map(|&t| offsets[t] + p.spans[t].words).max().unwrap_or(0);
    let mut out = assemble(&p, &offsets, end)?;
    let values = p.layout.values_offset as usize * 4;
    let mut filled = vec![false; end as usize];
    for (t, &off) in offsets.iter().enumerate() {
        for w in off..off + p.spans[t].words {
            filled[w as usize] = true;
        }
    }
    for (w, f) in filled.iter().enumerate() {
        if !f {
            out[values + w * 4..values + w * 4 + 4].fill(0xA5);
        }
    }
    Ok(out)
}
