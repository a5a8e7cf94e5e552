//! The CPU reference codec of format version 2 (`docs/FORMAT.md` §14): per-tile encodings (mask,
//! Elias–Fano positions, empty, raw) and a per-tile exponent-offset value code.
//!
//! [`compress_v2`] writes the ordered canonical form (tiles in order, no gaps, group bases);
//! [`transcode_v1`] turns any valid version-1 stream into the same bytes without the dense tensor (it
//! is how the command line writes version 2 from what the GPU compressed); the crate's
//! [`decompress`](super::decompress), [`validate`](super::validate),
//! [`decompress_range`](super::decompress_range) and [`compact`](super::compact) read both versions.

use super::validate::{check_status, parse as parse_v1};
use super::words::{put_word, word, word_range, BitReader, BitWriter};
use crate::error::{Error, Result};
use crate::format::v2::{ef_upper_bits, enc, LayoutV2, TileDesc, ENCODING_NAMES, GROUP_TILES, PLAIN, POSITIONS_GAIN};
use crate::format::{DType, Header, Options, HEADER_BYTES, HEADER_WORDS, TILE};

fn corrupt(msg: impl Into<String>) -> Error {
    Error::Corrupt(msg.into())
}

// ---- value code ----

/// The tile's value code for `vals` (raw element bits): `(eb, emin)`, the exponent-offset width and
/// base, or `(PLAIN, 0)` when the offsets would need the whole exponent field.
pub(crate) fn value_code(dtype: DType, vals: impl Iterator<Item = u32>) -> (u8, u8) {
    let m = dtype.mantissa_bits();
    let emask = (1u32 << dtype.exponent_bits()) - 1;
    let (mut lo, mut hi) = (u32::MAX, 0u32);
    for v in vals {
        let e = (v >> m) & emask;
        lo = lo.min(e);
        hi = hi.max(e);
    }
    if lo > hi {
        return (PLAIN, 0);
    }
    let eb = 32 - (hi - lo).leading_zeros();
    if eb >= dtype.exponent_bits() {
        (PLAIN, 0)
    } else {
        // The base is lowered where needed so that every code decodes to an exponent of the field
        // (FORMAT.md §14.6 rule: emin + 2^eb − 1 fits), which lets decoders skip the check per value.
        (eb as u8, lo.min(emask + 1 - (1 << eb)) as u8)
    }
}

/// The stored code of element `v` under descriptor `d` (`v`'s sign bit is clear when sign-packed).
#[inline]
fn code_value(v: u32, dtype: DType, sign_pack: bool, d: &TileDesc) -> u32 {
    if d.eb == PLAIN {
        return v & dtype.value_mask(sign_pack);
    }
    let m = dtype.mantissa_bits();
    let e = (v >> m) & ((1u32 << dtype.exponent_bits()) - 1);
    let sign = (v >> (dtype.bits() - 1)) & 1;
    let mut c = (v & ((1u32 << m) - 1)) | (e - d.emin as u32) << m;
    if !sign_pack {
        c |= sign << (m + d.eb as u32);
    }
    c
}

/// The element whose code is `c` (inverse of [`code_value`]).
#[inline]
fn decode_value(c: u32, dtype: DType, sign_pack: bool, d: &TileDesc) -> u32 {
    if d.eb == PLAIN {
        return c;
    }
    let m = dtype.mantissa_bits();
    let eb = d.eb as u32;
    let off = (c >> m) & ((1u32 << eb) - 1);
    let mut v = (c & ((1u32 << m) - 1)) | (off + d.emin as u32) << m;
    if !sign_pack {
        v |= ((c >> (m + eb)) & 1) << (dtype.bits() - 1);
    }
    v
}

// ---- one tile ----

/// Pushes `count` zero bits.
fn push_zeros(w: &mut BitWriter<'_>, mut count: u64) {
    while count > 0 {
        let c = count.min(32) as u32;
        w.push(0, c);
        count -= c as u64;
    }
}

/// Encodes one tile of `len` elements whose nonzeros are `vals` at increasing positions `pos`: the
/// smallest of the four encodings (ties to the lower code; positions only where they beat the mask by
/// [`POSITIONS_GAIN`]), each with the value code of what it stores.
/// Returns the descriptor and the tile's data words (little-endian bytes).
pub(crate) fn encode_tile(len: u32, pos: &[u32], vals: &[u32], dtype: DType, sign_pack: bool) -> (TileDesc, Vec<u8>) {
    encode_tile_as(len, pos, vals, dtype, sign_pack, false)
}

/// [`encode_tile`], or with `positions` a positions tile wherever its descriptor is valid.
fn encode_tile_as(
    len: u32,
    pos: &[u32],
    vals: &[u32],
    dtype: DType,
    sign_pack: bool,
    positions: bool,
) -> (TileDesc, Vec<u8>) {
    let k = pos.len() as u32;
    if k == 0 {
        return (TileDesc::EMPTY, Vec::new());
    }
    let (eb, emin) = value_code(dtype, vals.iter().copied());
    let sparse = |e| TileDesc { enc: e, eb, emin, count: k };
    let (reb, remin) = value_code(dtype, vals.iter().copied().chain((k < len).then_some(0)));
    let raw = TileDesc { enc: enc::RAW, eb: reb, emin: remin, count: len };
    let mut best = sparse(enc::MASK);
    for cand in [sparse(enc::POSITIONS), raw] {
        // Positions must beat the mask by POSITIONS_GAIN / 64 of their own size (their decode is slower).
        let gain = if cand.enc == enc::POSITIONS { POSITIONS_GAIN as u64 } else { 0 };
        if cand.check(dtype, sign_pack, len).is_ok()
            && cand.words(dtype, sign_pack, len) * (64 + gain) < best.words(dtype, sign_pack, len) * 64
        {
            best = cand;
        }
    }
    if positions && sparse(enc::POSITIONS).check(dtype, sign_pack, len).is_ok() {
        best = sparse(enc::POSITIONS);
    }
    let words = best.words(dtype, sign_pack, len) as usize;
    let mut out = vec![0u8; words * 4];
    let width = best.value_width(dtype, sign_pack);
    match best.enc {
        enc::MASK => {
            let mw = len.div_ceil(32) as usize;
            for &p in pos {
                let i = (p / 32) as usize * 4;
                let cur = u32::from_le_bytes([out[i], out[i + 1], out[i + 2], out[i + 3]]);
                put_word(&mut out, (p / 32) as usize, cur | 1 << (p % 32));
            }
            let mut w = BitWriter::new(&mut out[mw * 4..]);
            for &v in vals {
                w.push(code_value(v, dtype, sign_pack, &best), width);
            }
            w.finish();
        }
        enc::POSITIONS => {
            let l = best.low_bits(len);
            let mut w = BitWriter::new(&mut out);
            for &p in pos {
                w.push(p & ((1u32 << l) - 1), l);
            }
            let mut h_prev = 0u64;
            for &p in pos {
                let h = (p >> l) as u64;
                push_zeros(&mut w, h - h_prev);
                w.push(1, 1);
                h_prev = h;
            }
            push_zeros(&mut w, (((len - 1) >> l) as u64 + 1) - h_prev);
            for &v in vals {
                w.push(code_value(v, dtype, sign_pack, &best), width);
            }
            w.finish();
        }
        _ => {
            let mut w = BitWriter::new(&mut out);
            let mut it = pos.iter().zip(vals).peekable();
            for e in 0..len {
                let v = match it.peek() {
                    Some((&p, &v)) if p == e => {
                        it.next();
                        v
                    }
                    _ => 0,
                };
                w.push(code_value(v, dtype, sign_pack, &best), width);
            }
            w.finish();
        }
    }
    (best, out)
}

/// The positions of a tile's stored nonzeros (mask and positions tiles), checked: mask bits past the
/// tile's end clear and popcount equal to the descriptor's count; Elias–Fano upper bits with exactly
/// `count` ones and positions strictly increasing below `len`. Returns the positions and the bit
/// offset where the values start.
fn tile_positions(d: &TileDesc, len: u32, data: &[u8]) -> std::result::Result<(Vec<u32>, u64), String> {
    match d.enc {
        enc::MASK => {
            let mw = len.div_ceil(32) as u64;
            let mut pos = Vec::with_capacity(d.count as usize);
            for i in 0..mw {
                let mut m = word(data, i).unwrap_or(0);
                let valid = len - 32 * i as u32;
                if valid < 32 && m >> valid != 0 {
                    return Err("mask bits set past the tile's last element".into());
                }
                while m != 0 {
                    pos.push(32 * i as u32 + m.trailing_zeros());
                    m &= m - 1;
                }
            }
            if pos.len() as u32 != d.count {
                return Err(format!("mask holds {} nonzeros, the descriptor says {}", pos.len(), d.count));
            }
            Ok((pos, mw * 32))
        }
        enc::POSITIONS => {
            let l = d.low_bits(len);
            let mut r = BitReader::new(data);
            let lows: Vec<u32> = (0..d.count).map(|_| if l == 0 { 0 } else { r.pop(l) }).collect();
            let ulen = ef_upper_bits(d.count, len, l);
            let mut pos = Vec::with_capacity(d.count as usize);
            let mut ones = 0u64;
            for j in 0..ulen {
                if r.pop(1) == 1 {
                    if ones >= d.count as u64 {
                        return Err("more Elias-Fano upper ones than values".into());
                    }
                    let h = j - ones;
                    let p = (h << l) | lows[ones as usize] as u64;
                    if p >= len as u64 || pos.last().is_some_and(|&q| q as u64 >= p) {
                        return Err(format!("Elias-Fano position {p} out of order or past the tile of {len}"));
                    }
                    pos.push(p as u32);
                    ones += 1;
                }
            }
            if ones != d.count as u64 {
                return Err(format!("{ones} Elias-Fano upper ones, the descriptor says {}", d.count));
            }
            Ok((pos, d.count as u64 * l as u64 + ulen))
        }
        _ => Ok((Vec::new(), 0)),
    }
}

/// Reads `count` codes of `width` bits from bit `at` of `data`.
fn read_codes(data: &[u8], at: u64, count: u32, width: u32) -> Vec<u32> {
    let first = (at / 32) as usize * 4;
    let mut r = BitReader::new(data.get(first..).unwrap_or(&[]));
    let skip = (at % 32) as u32;
    if skip > 0 {
        r.pop(skip);
    }
    (0..count).map(|_| if width == 0 { 0 } else { r.pop(width) }).collect()
}

fn put_elem<const EB: usize>(out: &mut [u8], i: usize, v: u32) {
    if let Some(d) = out.get_mut(EB * i..EB * i + EB) {
        d.copy_from_slice(&v.to_le_bytes()[..EB]);
    }
}

// ---- a whole stream ----

/// A version-2 stream that passed every check of FORMAT.md §14.6.
pub(crate) struct ParsedV2<'a> {
    pub layout: LayoutV2,
    pub header: Header,
    pub descs: Vec<TileDesc>,
    /// Data-word offset of each tile.
    pub starts: Vec<u64>,
    /// The data section, `DATA_WORDS` words.
    pub data: &'a [u8],
}

impl<'a> ParsedV2<'a> {
    pub(crate) fn tile_data(&self, t: usize) -> &'a [u8] {
        let words =
            self.descs[t].words(self.layout.dtype, self.layout.options.sign_pack, self.layout.tile_len(t as u64));
        word_range(self.data, self.starts[t], words).unwrap_or(&[])
    }

    /// Decodes tile `t` into `out` (its dense bytes, zeroed by the caller).
    fn expand<const EB: usize>(&self, t: usize, out: &mut [u8]) -> Result<()> {
        let (dtype, sp) = (self.layout.dtype, self.layout.options.sign_pack);
        let d = &self.descs[t];
        let len = self.layout.tile_len(t as u64);
        let data = self.tile_data(t);
        let width = d.value_width(dtype, sp);
        if d.enc == enc::EMPTY {
            return Ok(());
        }
        if d.enc == enc::RAW {
            for (i, c) in read_codes(data, 0, len, width).into_iter().enumerate() {
                put_elem::<EB>(out, i, decode_value(c, dtype, sp, d));
            }
            return Ok(());
        }
        let (pos, at) = tile_positions(d, len, data).map_err(|m| corrupt(format!("tile {t}: {m}")))?;
        for (&p, c) in pos.iter().zip(read_codes(data, at, d.count, width)) {
            put_elem::<EB>(out, p as usize, decode_value(c, dtype, sp, d));
        }
        Ok(())
    }
}

/// Parses and validates a version-2 stream completely (positions included; padding bits ignored).
pub(crate) fn parse_v2(stream: &[u8]) -> Result<ParsedV2<'_>> {
    if (stream.len() as u64) < HEADER_BYTES {
        return Err(corrupt(format!("truncated: {} bytes, the header alone needs {HEADER_BYTES}", stream.len())));
    }
    let h: Vec<u32> = (0..HEADER_WORDS as u64).map(|i| word(stream, i).unwrap_or(0)).collect();
    let (layout, header) = LayoutV2::from_header(&h)?;
    check_status(header.status)?;
    let data_words = header.value_words as u64;
    let need = layout.stream_bytes(data_words);
    if (stream.len() as u64) < need {
        return Err(corrupt(format!("truncated: {} bytes, the header announces {need}", stream.len())));
    }
    let (dtype, sp) = (layout.dtype, layout.options.sign_pack);
    let dir = word_range(stream, layout.dir_offset, layout.dir_words).ok_or_else(|| corrupt("directory"))?;
    let data = word_range(stream, layout.data_offset, data_words).ok_or_else(|| corrupt("data"))?;
    let mut descs = Vec::with_capacity(layout.tiles as usize);
    let mut starts = Vec::with_capacity(layout.tiles as usize);
    let mut spans = Vec::new();
    let mut max_end = 0u64;
    let mut next = 0u64;
    for t in 0..layout.tiles {
        let (d, reserved) = TileDesc::from_word(word(stream, layout.desc_offset + t).unwrap_or(0));
        let len = layout.tile_len(t);
        if reserved != 0 {
            return Err(corrupt(format!("tile {t}: reserved descriptor bits set")));
        }
        d.check(dtype, sp, len).map_err(|m| corrupt(format!("tile {t}: {m}")))?;
        let start = if layout.tile_starts {
            word(dir, t).unwrap_or(0) as u64
        } else if t % GROUP_TILES == 0 {
            word(dir, t / GROUP_TILES).unwrap_or(0) as u64
        } else {
            next
        };
        let words = d.words(dtype, sp, len);
        let end = start + words;
        if end > data_words {
            return Err(corrupt(format!("tile {t}: data [{start}, {end}) outside the {data_words} data words")));
        }
        max_end = max_end.max(end);
        if words > 0 {
            spans.push((start, end));
        }
        next = end;
        descs.push(d);
        starts.push(start);
    }
    if max_end != data_words {
        return Err(corrupt(format!("DATA_WORDS is {data_words}, but the tiles end at {max_end}")));
    }
    if spans.windows(2).any(|p| p[1].0 < p[0].1) {
        spans.sort_unstable();
        if spans.windows(2).any(|p| p[1].0 < p[0].1) {
            return Err(corrupt("tile data overlap"));
        }
    }
    let p = ParsedV2 { layout, header, descs, starts, data };
    for t in 0..p.descs.len() {
        let d = &p.descs[t];
        if matches!(d.enc, enc::MASK | enc::POSITIONS) {
            tile_positions(d, layout.tile_len(t as u64), p.tile_data(t))
                .map_err(|m| corrupt(format!("tile {t}: {m}")))?;
        }
    }
    Ok(p)
}

/// The dense bytes of tiles `[first, end)` of a parsed stream, starting at tile `first`.
pub(crate) fn expand_range(p: &ParsedV2<'_>, first: u64, end: u64) -> Result<Vec<u8>> {
    let eb = p.layout.dtype.bytes() as usize;
    let last_elem = (end * TILE as u64).min(p.layout.n);
    let mut out = vec![0u8; (last_elem - first * TILE as u64) as usize * eb];
    for (t, dst) in (first..end).zip(out.chunks_mut(TILE as usize * eb)) {
        match eb {
            4 => p.expand::<4>(t as usize, dst)?,
            2 => p.expand::<2>(t as usize, dst)?,
            _ => p.expand::<1>(t as usize, dst)?,
        }
    }
    Ok(out)
}

/// Assembles an ordered stream (group bases) from tile descriptors and data, the header's `AMAX` and
/// `SCALE` given.
pub(crate) fn assemble(layout: &LayoutV2, tiles: &[(TileDesc, &[u8])], amax: u32, scale: u32) -> Result<Vec<u8>> {
    debug_assert!(!layout.tile_starts);
    let total: u64 = tiles.iter().map(|(_, d)| d.len() as u64 / 4).sum();
    let dw = u32::try_from(total).map_err(|_| Error::TooLarge { elements: layout.n })?;
    let mut out = vec![0u8; layout.stream_bytes(total) as usize];
    for (i, w) in layout.header(dw, 0, amax, scale).into_iter().enumerate() {
        put_word(&mut out, i, w);
    }
    let data_at = layout.data_offset as usize * 4;
    let mut at = 0usize;
    for (t, (d, bytes)) in tiles.iter().enumerate() {
        put_word(&mut out, (layout.desc_offset as usize) + t, d.word());
        if t as u64 % GROUP_TILES == 0 {
            put_word(&mut out, layout.dir_offset as usize + t / GROUP_TILES as usize, (at / 4) as u32);
        }
        out[data_at + at..data_at + at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    }
    Ok(out)
}

/// Element `i` of little-endian `EB`-byte elements.
fn elem(bytes: &[u8], eb: usize, i: usize) -> u32 {
    let mut w = [0u8; 4];
    w[..eb].copy_from_slice(&bytes[eb * i..eb * i + eb]);
    u32::from_le_bytes(w)
}

/// Compresses `data` into the ordered canonical stream of format version 2.
///
/// Errors as [`compress`](super::compress): [`Error::PartialElement`], [`Error::TooLarge`],
/// [`Error::SignBitSet`] with the first offending element.
pub fn compress_v2(data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
    compress_v2_as(data, dtype, options, false)
}

/// A valid version-2 stream of `data` whose every nonempty tile is a positions tile wherever its
/// descriptor allows one (the others as [`compress_v2`] writes them): Elias–Fano fields at every
/// low-bit width, including `L = 0` and upper bit vectors of up to `2 · len` bits, which no
/// size-picking writer produces. For tests of every decoder.
pub fn compress_v2_positions(data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
    compress_v2_as(data, dtype, options, true)
}

fn compress_v2_as(data: &[u8], dtype: DType, options: Options, positions: bool) -> Result<Vec<u8>> {
    let eb = dtype.bytes() as usize;
    if data.len() % eb != 0 {
        return Err(Error::PartialElement { bytes: data.len() as u64, elem_bytes: eb as u64 });
    }
    let n = (data.len() / eb) as u64;
    let layout = LayoutV2::new(dtype, n, options, false)?;
    let sign = if options.sign_pack { dtype.sign_bit() } else { 0 };
    let mut tiles = Vec::with_capacity(layout.tiles as usize);
    let (mut pos, mut vals) = (Vec::new(), Vec::new());
    for (t, chunk) in data.chunks(TILE as usize * eb).enumerate() {
        pos.clear();
        vals.clear();
        for i in 0..chunk.len() / eb {
            let v = elem(chunk, eb, i);
            if v != 0 {
                if v & sign != 0 {
                    return Err(Error::SignBitSet { index: Some(t as u64 * TILE as u64 + i as u64) });
                }
                pos.push(i as u32);
                vals.push(v);
            }
        }
        tiles.push(encode_tile_as((chunk.len() / eb) as u32, &pos, &vals, dtype, options.sign_pack, positions));
    }
    let refs: Vec<(TileDesc, &[u8])> = tiles.iter().map(|(d, b)| (*d, b.as_slice())).collect();
    assemble(&layout, &refs, 0, 0)
}

/// Rewrites a valid version-1 stream (any placement) as the ordered canonical version-2 stream of the
/// same tensor, tile by tile from its mask and values (no dense copy). `AMAX` and `SCALE` are kept.
pub fn transcode_v1(stream: &[u8]) -> Result<Vec<u8>> {
    let p = parse_v1(stream)?;
    let l = &p.layout;
    let layout = LayoutV2::new(l.dtype, l.n, l.options, false)?;
    let width = l.value_width();
    let mut tiles = Vec::with_capacity(l.tiles as usize);
    let (mut pos, mut vals) = (Vec::new(), Vec::new());
    for t in 0..l.tiles {
        pos.clear();
        vals.clear();
        for (i, mw) in p.tile_mask(t).chunks_exact(4).enumerate() {
            let mut m = u32::from_le_bytes([mw[0], mw[1], mw[2], mw[3]]);
            while m != 0 {
                pos.push(32 * i as u32 + m.trailing_zeros());
                m &= m - 1;
            }
        }
        let mut r = BitReader::new(p.tile_stream(t));
        vals.extend((0..pos.len()).map(|_| r.pop(width)));
        tiles.push(encode_tile(l.tile_len(t), &pos, &vals, l.dtype, l.options.sign_pack));
    }
    let refs: Vec<(TileDesc, &[u8])> = tiles.iter().map(|(d, b)| (*d, b.as_slice())).collect();
    assemble(&layout, &refs, p.header.amax, p.header.scale)
}

/// Rewrites any valid version-2 stream (tile starts, gaps, any order) into the ordered canonical form.
pub(crate) fn compact_v2(stream: &[u8]) -> Result<Vec<u8>> {
    let p = parse_v2(stream)?;
    let layout = LayoutV2::new(p.layout.dtype, p.layout.n, p.layout.options, false)?;
    let refs: Vec<(TileDesc, &[u8])> = (0..p.descs.len()).map(|t| (p.descs[t], p.tile_data(t))).collect();
    assemble(&layout, &refs, p.header.amax, p.header.scale)
}

/// Re-places a valid version-2 stream with a tile-start directory
/// ([`TILE_STARTS`](crate::format::v2::flags::TILE_STARTS)): the tiles in the order of a permutation
/// drawn from `seed`, each nonempty one after a gap of 0–3 words of unspecified bytes (0xA5) while the
/// worst case leaves room — what a writer claiming space with one atomic per tile may produce. For
/// tests of every decoder; [`compact`](super::compact) gives the canonical bytes back.
pub fn place_starts_shuffled(stream: &[u8], seed: u64) -> Result<Vec<u8>> {
    let p = parse_v2(stream)?;
    let layout = LayoutV2::new(p.layout.dtype, p.layout.n, p.layout.options, true)?;
    let mut order: Vec<usize> = (0..p.descs.len()).collect();
    let mut rng = super::SplitMix64(seed);
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let total: u64 = (0..p.descs.len()).map(|t| p.tile_data(t).len() as u64 / 4).sum();
    let mut slack = layout.data_capacity.saturating_sub(total);
    let mut starts = vec![0u64; order.len()];
    let mut at = 0u64;
    let mut end = 0u64;
    for &t in &order {
        let words = p.tile_data(t).len() as u64 / 4;
        if words > 0 {
            let gap = (rng.next_u64() % 4).min(slack);
            slack -= gap;
            at += gap;
        }
        starts[t] = at;
        at += words;
        end = end.max(at);
    }
    let dw = u32::try_from(end).map_err(|_| Error::TooLarge { elements: layout.n })?;
    let mut out = vec![0u8; layout.stream_bytes(end) as usize];
    let data_at = layout.data_offset as usize * 4;
    out[data_at..].fill(0xA5);
    for (i, w) in layout.header(dw, 0, p.header.amax, p.header.scale).into_iter().enumerate() {
        put_word(&mut out, i, w);
    }
    for (t, &start) in starts.iter().enumerate() {
        put_word(&mut out, layout.desc_offset as usize + t, p.descs[t].word());
        put_word(&mut out, layout.dir_offset as usize + t, start as u32);
        let src = p.tile_data(t);
        let s = data_at + start as usize * 4;
        out[s..s + src.len()].copy_from_slice(src);
    }
    Ok(out)
}

/// Where the bits of a version-2 stream go (`bitsparse analyze`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamStats {
    /// Tiles per encoding, by code: mask, positions, empty, raw.
    pub tile_encodings: [u64; 4],
    /// Bits of masks and Elias–Fano positions.
    pub position_bits: u64,
    /// Bits of value codes.
    pub value_bits: u64,
    /// Header and directory bits.
    pub directory_bits: u64,
    /// Bits that pad each tile's data to whole words.
    pub padding_bits: u64,
    /// Tiles whose values use the exponent-offset code.
    pub exponent_coded_tiles: u64,
}

impl StreamStats {
    /// `tile_encodings` as (name, count) pairs.
    pub fn named_encodings(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        ENCODING_NAMES.iter().copied().zip(self.tile_encodings.iter().copied())
    }
}

/// Counts where the bits of a valid version-2 stream go (validating it first).
pub fn stream_stats(stream: &[u8]) -> Result<StreamStats> {
    let p = parse_v2(stream)?;
    let (dtype, sp) = (p.layout.dtype, p.layout.options.sign_pack);
    let mut s = StreamStats { directory_bits: p.layout.data_offset * 32, ..Default::default() };
    for (t, d) in p.descs.iter().enumerate() {
        let len = p.layout.tile_len(t as u64);
        s.tile_encodings[d.enc as usize] += 1;
        let pb = d.position_bits(len);
        let vb = d.value_bits(dtype, sp);
        s.position_bits += pb;
        s.value_bits += vb;
        s.padding_bits += d.words(dtype, sp, len) * 32 - pb - vb;
        s.exponent_coded_tiles += (d.eb != PLAIN && d.enc != enc::EMPTY) as u64;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16(vals: &[u16]) -> Vec<u8> {
        vals.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn value_codes_round_trip_every_pattern() {
        for dtype in [DType::Bf16, DType::F16, DType::E4m3, DType::E5m2] {
            let all = 1u32 << dtype.bits();
            for sp in [false, true] {
                let vals: Vec<u32> = (1..all).filter(|v| !sp || v & dtype.sign_bit() == 0).collect();
                for (eb, emin) in [(PLAIN, 0u8), value_code(dtype, vals.iter().copied())] {
                    let d = TileDesc { enc: enc::MASK, eb, emin, count: 1 };
                    for &v in &vals {
                        let c = code_value(v, dtype, sp, &d);
                        assert!(c >> d.value_width(dtype, sp) == 0 || d.value_width(dtype, sp) == 32);
                        assert_eq!(decode_value(c, dtype, sp, &d), v, "{dtype} sp {sp} v {v:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn exponent_range_picks_the_width() {
        // 1.0, 2.0, 0.5: exponents 127, 128, 126 -> base 126, 2 bits.
        assert_eq!(value_code(DType::Bf16, [0x3F80, 0x4000, 0x3F00].into_iter()), (2, 126));
        assert_eq!(value_code(DType::Bf16, [0x3F80, 0x3F81].into_iter()), (0, 127));
        // A NaN and a subnormal span the whole field: plain.
        assert_eq!(value_code(DType::Bf16, [0x7FC1, 0x0001].into_iter()), (PLAIN, 0));
    }

    #[test]
    fn encodings_chosen_by_size() {
        let dt = DType::Bf16;
        // One nonzero in a full tile: positions (2 + 12 bits) beat the 128-word mask.
        let (d, w) = encode_tile(4096, &[4000], &[0x3F80], dt, true);
        assert_eq!((d.enc, d.count, d.eb), (enc::POSITIONS, 1, 0));
        assert_eq!(w.len(), 4);
        // Every element nonzero: raw (no positions at all).
        let pos: Vec<u32> = (0..4096).collect();
        let vals: Vec<u32> = (0..4096).map(|i| 0x3F80 + (i % 100)).collect();
        assert_eq!(encode_tile(4096, &pos, &vals, dt, true).0.enc, enc::RAW);
        // Half the elements: the mask.
        let pos: Vec<u32> = (0..4096).step_by(2).collect();
        let vals: Vec<u32> = pos.iter().map(|&i| 0x3F80 + (i % 100)).collect();
        assert_eq!(encode_tile(4096, &pos, &vals, dt, true).0.enc, enc::MASK);
        assert_eq!(encode_tile(4096, &[], &[], dt, true).0, TileDesc::EMPTY);
    }

    #[test]
    fn round_trip_small() {
        let data = bf16(&[0x3F80, 0, 0x8000, 0, 0, 0x7FC1, 0x0001]);
        let s = compress_v2(&data, DType::Bf16, Options::default()).unwrap();
        assert_eq!(super::super::decompress(&s).unwrap(), data);
        assert_eq!(transcode_v1(&super::super::compress(&data, DType::Bf16, Options::default()).unwrap()).unwrap(), s);
        let st = stream_stats(&s).unwrap();
        assert_eq!(st.tile_encodings.iter().sum::<u64>(), 1);
    }

    #[test]
    fn corrupt_positions_are_rejected() {
        let mut data = vec![0u8; 4096 * 2];
        data[2 * 100..2 * 100 + 2].copy_from_slice(&0x3F80u16.to_le_bytes());
        data[2 * 3000..2 * 3000 + 2].copy_from_slice(&0x4000u16.to_le_bytes());
        let s = compress_v2(&data, DType::Bf16, Options::SIGN_PACK).unwrap();
        let (d, _) = TileDesc::from_word(word(&s, 8).unwrap());
        assert_eq!(d.enc, enc::POSITIONS);
        // Flip each data bit in turn: every result is rejected or decodes (never a panic).
        let data_at = 8 + 1 + 1;
        for bit in 0..(s.len() as u64 - data_at * 4) * 8 {
            let mut c = s.clone();
            c[(data_at * 4 + bit / 8) as usize] ^= 1 << (bit % 8);
            let _ = super::super::decompress(&c);
        }
    }
}
