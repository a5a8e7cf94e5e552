//! CPU port of the decompress stage (`shaders/decompress.wgsl`): each tile is expanded on its own from
//! its mask words and its stream (`tile_expand`), which is what makes random access possible.

use super::validate::{parse, Parsed};
use super::words::BitReader;
use crate::error::{Error, Result};
use crate::format::{Header, Layout, TILE};

/// Expands one tile: for every set mask bit, in element order, the next `width`-bit value of `stream`
/// becomes that element. `out` holds the tile's dense bytes and must be zeroed by the caller (zero
/// elements are not written). With sign packing the stored value is the element itself, because a
/// packed element's sign bit is zero by construction.
pub(crate) fn tile_expand<const EB: usize>(mask: &[u8], stream: &[u8], width: u32, out: &mut [u8]) {
    let mut r = BitReader::new(stream);
    for (mw, dst) in mask.chunks_exact(4).zip(out.chunks_mut(32 * EB)) {
        let mut m = u32::from_le_bytes([mw[0], mw[1], mw[2], mw[3]]);
        while m != 0 {
            let j = m.trailing_zeros() as usize;
            m &= m - 1;
            let v = r.pop(width);
            if EB == 4 {
                if let Some(d) = dst.get_mut(4 * j..4 * j + 4) {
                    d.copy_from_slice(&v.to_le_bytes());
                }
            } else if EB == 2 {
                if let Some(d) = dst.get_mut(2 * j..2 * j + 2) {
                    d.copy_from_slice(&(v as u16).to_le_bytes());
                }
            } else if let Some(d) = dst.get_mut(j) {
                *d = v as u8;
            }
        }
    }
}

/// Checks everything `docs/FORMAT.md` asks a decoder to check, without decoding: header fields,
/// status, that the slice holds every section, mask bits past `n`, and that every tile stream lies in
/// the values section without overlapping another. Returns the layout and the header's variable part.
pub fn validate(stream: &[u8]) -> Result<(Layout, Header)> {
    let p = parse(stream)?;
    Ok((p.layout, p.header))
}

/// Validates `stream` fully and returns the dense little-endian bytes it encodes.
///
/// Reads both format versions (the version byte decides).
pub fn decompress(stream: &[u8]) -> Result<Vec<u8>> {
    if is_v2(stream) {
        let p = super::v2::parse_v2(stream)?;
        return super::v2::expand_range(&p, 0, p.layout.tiles);
    }
    let p = parse(stream)?;
    let mut out = vec![0u8; p.layout.dense_bytes() as usize];
    expand_tiles(&p, 0, p.layout.tiles, &mut out);
    Ok(out)
}

/// Decodes elements `[start, start + len)` only: the whole stream is validated (the overlap check
/// needs every tile's size), but only the tiles covering the range are expanded.
pub fn decompress_range(stream: &[u8], start: u64, len: u64) -> Result<Vec<u8>> {
    if is_v2(stream) {
        let p = super::v2::parse_v2(stream)?;
        let (first, end) = range_tiles(start, len, p.layout.n)?;
        let eb = p.layout.dtype.bytes();
        let mut buf = if len == 0 { Vec::new() } else { super::v2::expand_range(&p, first, end)? };
        buf.drain(..((start - first * TILE as u64) * eb).min(buf.len() as u64) as usize);
        buf.truncate((len * eb) as usize);
        return Ok(buf);
    }
    let p = parse(stream)?;
    let n = p.layout.n;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= n)
        .ok_or_else(|| Error::InvalidArgument(format!("range {start}+{len} is outside the tensor of {n} elements")))?;
    let eb = p.layout.dtype.bytes();
    if len == 0 {
        return Ok(Vec::new());
    }
    let first = start / TILE as u64;
    let last = (end - 1) / TILE as u64;
    // Expand the covering tiles into a buffer aligned on the first tile, then cut the range out.
    let base = first * TILE as u64;
    let mut buf = vec![0u8; ((end.min((last + 1) * TILE as u64) - base) * eb) as usize];
    expand_tiles(&p, first, last + 1, &mut buf);
    buf.drain(..((start - base) * eb) as usize);
    buf.truncate((len * eb) as usize);
    Ok(buf)
}

/// Whether `stream` claims format version 2 (its own checks follow in `parse_v2`).
pub(crate) fn is_v2(stream: &[u8]) -> bool {
    stream.len() >= 8
        && super::words::word(stream, 0) == Some(crate::format::MAGIC)
        && stream[4] == crate::format::v2::VERSION
}

/// The tiles `[first, end)` covering elements `[start, start + len)` of `n`, or the range error.
fn range_tiles(start: u64, len: u64, n: u64) -> Result<(u64, u64)> {
    let end = start
        .checked_add(len)
        .filter(|&e| e <= n)
        .ok_or_else(|| Error::InvalidArgument(format!("range {start}+{len} is outside the tensor of {n} elements")))?;
    Ok((start / TILE as u64, end.div_ceil(TILE as u64)))
}

/// Validates a stream of either format version completely (what [`decompress`] checks, without
/// decoding) and returns what its header says.
pub fn validate_any(stream: &[u8]) -> Result<crate::format::StreamInfo> {
    if is_v2(stream) {
        super::v2::parse_v2(stream)?;
    } else {
        parse(stream)?;
    }
    crate::format::StreamInfo::from_bytes(stream)
}

/// Expands tiles `[first, end)` into `out`, which starts at tile `first`'s first element.
fn expand_tiles(p: &Parsed<'_>, first: u64, end: u64, out: &mut [u8]) {
    match p.layout.dtype.bytes() {
        4 => expand_tiles_impl::<4>(p, first, end, out),
        2 => expand_tiles_impl::<2>(p, first, end, out),
        _ => expand_tiles_impl::<1>(p, first, end, out),
    }
}

fn expand_tiles_impl<const EB: usize>(p: &Parsed<'_>, first: u64, end: u64, out: &mut [u8]) {
    let width = p.layout.value_width();
    for (t, dst) in (first..end).zip(out.chunks_mut(TILE as usize * EB)) {
        if p.spans[t as usize].words > 0 {
            tile_expand::<EB>(p.tile_mask(t), p.tile_stream(t), width, dst);
        }
    }
}
