//! CPU port of `shaders/compress.wgsl`. The GPU does everything for a tile in one workgroup pass (mask
//! and count, chained scan for the tile's offset, compaction, then `finish` writes the header); here the
//! same work is three loops over the tiles: `tile_mask` (mask words and count), an exclusive prefix sum
//! of the stream sizes (the scan, giving the offset table), and `tile_compact` (pack the nonzeros).
//!
//! The output is always the compact canonical form: tiles in order, no gaps. Knowing every count before
//! packing lets the output be allocated once, at its exact size.

use super::words::{put_word, BitWriter};
use crate::error::{Error, Result};
use crate::format::{stream_words, DType, Layout, Options, HEADER_WORDS, TILE, TILE_MASK_WORDS};

/// Element `i` of a little-endian slice of `EB`-byte elements.
#[inline(always)]
fn elem<const EB: usize>(bytes: &[u8], i: usize) -> u32 {
    if EB == 4 {
        u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]])
    } else if EB == 2 {
        u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]) as u32
    } else {
        bytes[i] as u32
    }
}

/// What [`tile_mask`] learned about one tile.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TileCount {
    /// Nonzero elements in the tile.
    pub count: u32,
    /// Index within the tile of the first nonzero element with `sign_bit` set, when one was asked for.
    pub first_signed: Option<u32>,
}

/// Stage 1: writes the tile's mask words into `mask_out` and counts its nonzeros.
///
/// `tile` holds the tile's `len` elements of `EB` bytes; `mask_out` holds `ceil(len/32)` words.
/// `sign_bit` is the bit that must be clear in every nonzero (sign packing), or 0 to check nothing.
pub(crate) fn tile_mask<const EB: usize>(tile: &[u8], sign_bit: u32, mask_out: &mut [u8]) -> TileCount {
    let len = tile.len() / EB;
    let mut tc = TileCount::default();
    for (g, group) in tile.chunks(32 * EB).enumerate() {
        let mut m = 0u32;
        let mut signed = 0u32;
        for j in 0..group.len() / EB {
            let e = elem::<EB>(group, j);
            m |= ((e != 0) as u32) << j;
            signed |= e & sign_bit;
        }
        // The sign bit can only be set in a nonzero element, so `signed != 0` needs no mask test.
        if signed != 0 && tc.first_signed.is_none() {
            let j = (0..group.len() / EB).find(|&j| elem::<EB>(group, j) & sign_bit != 0).unwrap_or(0);
            tc.first_signed = Some((g * 32 + j) as u32);
        }
        put_word(mask_out, g, m);
        tc.count += m.count_ones();
    }
    debug_assert_eq!(mask_out.len(), len.div_ceil(32) * 4);
    tc
}

/// Stage 3: packs the tile's nonzeros, in element order, into `out` (exactly the tile's stream words).
///
/// `value_mask` is `(1 << width) - 1` (all ones at width 32): with sign packing it drops the
/// (checked-clear) sign bit.
pub(crate) fn tile_compact<const EB: usize>(tile: &[u8], mask: &[u8], width: u32, out: &mut [u8]) {
    let value_mask = u32::MAX >> (32 - width);
    let mut w = BitWriter::new(out);
    for (group, mw) in tile.chunks(32 * EB).zip(mask.chunks_exact(4)) {
        let mut m = u32::from_le_bytes([mw[0], mw[1], mw[2], mw[3]]);
        while m != 0 {
            let j = m.trailing_zeros() as usize;
            m &= m - 1;
            w.push(elem::<EB>(group, j) & value_mask, width);
        }
    }
    w.finish();
}

/// Compresses `data` (little-endian elements of `dtype`) into a compact stream of format version 1.
///
/// Errors: [`Error::PartialElement`] when `data` is not whole elements, [`Error::TooLarge`] past the
/// format's u32 word offsets, [`Error::SignBitSet`] (with the first offending element's index) when
/// `options.sign_pack` is on and a nonzero element has its sign bit set (`-0.0` included).
pub fn compress(data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
    match dtype.bytes() {
        4 => compress_impl::<4>(data, dtype, options),
        2 => compress_impl::<2>(data, dtype, options),
        _ => compress_impl::<1>(data, dtype, options),
    }
}

fn compress_impl<const EB: usize>(data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
    if data.len() % EB != 0 {
        return Err(Error::PartialElement { bytes: data.len() as u64, elem_bytes: EB as u64 });
    }
    let n = (data.len() / EB) as u64;
    let layout = Layout::new(dtype, n, options)?;
    let width = layout.value_width();
    let sign_bit = if options.sign_pack { dtype.sign_bit() } else { 0 };
    let tile_bytes = TILE as usize * EB;
    let tile_mask_bytes = TILE_MASK_WORDS as usize * 4;

    // Stage 1 (count): the mask, written straight into its own buffer, and each tile's stream size.
    let mut mask = vec![0u8; layout.mask_words as usize * 4];
    let mut table = Vec::with_capacity(layout.tiles as usize);
    let mut total: u64 = 0;
    for (t, (tile, mask_out)) in data.chunks(tile_bytes).zip(mask.chunks_mut(tile_mask_bytes)).enumerate() {
        let tc = tile_mask::<EB>(tile, sign_bit, mask_out);
        if let Some(j) = tc.first_signed {
            return Err(Error::SignBitSet { index: Some(t as u64 * TILE as u64 + j as u64) });
        }
        // Stage 2 (scan): the exclusive prefix sum of the stream sizes is the offset table.
        table.push(total);
        total += stream_words(tc.count as u64, width);
    }
    // `total` is bounded by `layout.values_capacity`, which `Layout::new` checked fits a u32.
    let value_words = u32::try_from(total).map_err(|_| Error::TooLarge { elements: n })?;

    let mut out = vec![0u8; layout.compact_bytes(total) as usize];
    for (i, w) in layout.header(value_words, 0, 0, 0).into_iter().enumerate() {
        put_word(&mut out, i, w);
    }
    for (t, &off) in table.iter().enumerate() {
        put_word(&mut out, HEADER_WORDS as usize + t, off as u32);
    }
    let mask_at = layout.mask_offset as usize * 4;
    out[mask_at..mask_at + mask.len()].copy_from_slice(&mask);

    // Stage 3 (compact): each tile's nonzeros into its slot of the values section.
    let values = &mut out[layout.values_offset as usize * 4..];
    let ends = table.iter().skip(1).copied().chain(std::iter::once(total));
    for (t, (start, end)) in table.iter().copied().zip(ends).enumerate() {
        if start == end {
            continue;
        }
        let tile = &data[t * tile_bytes..data.len().min((t + 1) * tile_bytes)];
        let tile_mask = &mask[t * tile_mask_bytes..mask.len().min((t + 1) * tile_mask_bytes)];
        tile_compact::<EB>(tile, tile_mask, width, &mut values[start as usize * 4..end as usize * 4]);
    }
    Ok(out)
}

/// Number of elements of `data` that are not all-bits-zero (the density's numerator). A trailing
/// partial element is ignored.
pub fn count_nonzeros(data: &[u8], dtype: DType) -> u64 {
    match dtype.bytes() {
        4 => data.chunks_exact(4).filter(|c| c[0] | c[1] | c[2] | c[3] != 0).count() as u64,
        2 => data.chunks_exact(2).filter(|c| c[0] | c[1] != 0).count() as u64,
        _ => data.iter().filter(|&&b| b != 0).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_mask_bits_and_first_signed() {
        // Elements 1, 3, 33 nonzero; element 33 has the BF16 sign bit.
        let mut tile = vec![0u8; 40 * 2];
        tile[2..4].copy_from_slice(&0x3F80u16.to_le_bytes());
        tile[6..8].copy_from_slice(&0x0001u16.to_le_bytes());
        tile[66..68].copy_from_slice(&0x8000u16.to_le_bytes());
        let mut mask = vec![0u8; 8];
        let tc = tile_mask::<2>(&tile, 0x8000, &mut mask);
        assert_eq!(tc, TileCount { count: 3, first_signed: Some(33) });
        assert_eq!(mask, [0x0A, 0, 0, 0, 0x02, 0, 0, 0]);
        let tc = tile_mask::<2>(&tile, 0, &mut mask);
        assert_eq!(tc.first_signed, None);
    }

    #[test]
    fn tile_compact_seven_bit() {
        let tile = [0x38u8, 0, 0x7F, 0x01];
        let mut mask = vec![0u8; 4];
        assert_eq!(tile_mask::<1>(&tile, 0x80, &mut mask).count, 3);
        let mut out = vec![0u8; 4];
        tile_compact::<1>(&tile, &mask, 7, &mut out);
        assert_eq!(u32::from_le_bytes(out.try_into().unwrap()), 0x38 | 0x7F << 7 | 0x01 << 14);
    }

    #[test]
    fn tile_compact_thirty_one_bit() {
        let tile = [0u32, 0x3F80_0000, 0x7FC0_0001, 0, 0x0000_0001];
        let bytes: Vec<u8> = tile.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut mask = vec![0u8; 4];
        assert_eq!(tile_mask::<4>(&bytes, 0x8000_0000, &mut mask).count, 3);
        let mut out = vec![0u8; 12];
        tile_compact::<4>(&bytes, &mask, 31, &mut out);
        let w = |i: usize| u32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(w(0), 0x3F80_0000 | 0x7FC0_0001 << 31);
        assert_eq!(w(1), 0x7FC0_0001 >> 1 | 1 << 30);
        assert_eq!(w(2), 0);
    }

    #[test]
    fn partial_element_is_an_error() {
        assert!(matches!(
            compress(&[1, 2, 3], DType::F16, Options::default()),
            Err(Error::PartialElement { bytes: 3, elem_bytes: 2 })
        ));
        assert!(matches!(
            compress(&[1, 2, 3, 4, 5, 6], DType::F32, Options::default()),
            Err(Error::PartialElement { bytes: 6, elem_bytes: 4 })
        ));
    }

    #[test]
    fn count_nonzeros_counts_bit_patterns() {
        assert_eq!(count_nonzeros(&[0, 0x80, 0, 0, 1, 0, 7], DType::Bf16), 2);
        assert_eq!(count_nonzeros(&[0, 0x80, 0, 1], DType::E4m3), 2);
    }
}
