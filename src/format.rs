//! The compressed-tensor format, version 1: element types, section layout and header.
//!
//! This module is the byte-level spec in code (see `docs/FORMAT.md`); the CPU reference codec
//! (`crate::cpu`) and the WGSL kernels (`shaders/compress.wgsl`, `shaders/decompress.wgsl`) both follow it.
//!
//! A compressed tensor of `n` elements is one contiguous byte range of four sections, all made of
//! little-endian 32-bit words:
//!
//! ```text
//! [ header: 8 words ][ tile table: 1 word per tile ][ mask: ceil(n/32) words ][ values: V words ]
//! ```
//!
//! * Tiles are [`TILE`] = 4096 consecutive elements (the last one may be partial).
//! * Mask bit `e % 32` of mask word `e / 32` is 1 iff element `e` is not all-bits-zero.
//! * Each tile's nonzeros, in element order, form a bit stream of `width` bits per value
//!   (32 / 16 / 8, or 31 / 15 / 7 with sign packing), little-endian inside words, zero-padded to a whole word.
//! * `table[t]` is the word offset of tile `t`'s stream from the start of the values section.
//!   Compact output (what the CPU codec and a single-chunk GPU compress produce) places the streams in
//!   tile order with no gaps; a chunked GPU compress leaves gaps between chunks (see [`Layout::chunk_value_base`]).

use crate::error::{Error, Result};

pub mod v2;

/// Elements per tile. A power of two and a multiple of 32, fixed in format version 1.
pub const TILE: u32 = 4096;
/// log2 of [`TILE`].
pub const TILE_LOG2: u32 = 12;
/// Mask words per full tile.
pub const TILE_MASK_WORDS: u32 = TILE / 32;
/// Format version written in the header.
pub const VERSION: u8 = 1;
/// Header magic, the bytes `BSPT` read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"BSPT");
/// Header size in 32-bit words.
pub const HEADER_WORDS: u32 = 8;
/// Header size in bytes.
pub const HEADER_BYTES: u64 = HEADER_WORDS as u64 * 4;
/// Tile encoding 0: bitmask + compacted nonzeros (the only one in version 1).
pub const TILE_ENCODING_MASK: u8 = 0;

/// Header word indices.
pub mod hdr {
    /// `MAGIC`.
    pub const MAGIC: usize = 0;
    /// `version | dtype << 8 | flags << 16 | tile_log2 << 24`.
    pub const INFO: usize = 1;
    /// Element count, low 32 bits.
    pub const N_LO: usize = 2;
    /// Element count, high 32 bits.
    pub const N_HI: usize = 3;
    /// One past the last value word used (relative to the values section), written by the GPU.
    pub const VALUE_WORDS: usize = 4;
    /// Status bits ([`super::status`]), OR-ed in by the GPU.
    pub const STATUS: usize = 5;
    /// FP8 storage: amax of the source seen by this compress (f32 bits); 0 otherwise.
    pub const AMAX: usize = 6;
    /// FP8 storage: scale applied before rounding (f32 bits); 0 otherwise.
    pub const SCALE: usize = 7;
}

/// Flag bits in the `INFO` word's flags byte.
pub mod flags {
    /// Values are stored without their sign bit (15/7-bit stream).
    pub const SIGN_PACK: u8 = 1;
}

/// Status bits written by the GPU into header word [`hdr::STATUS`].
pub mod status {
    /// Sign packing was requested and a nonzero input value had its sign bit set: the stream is invalid.
    pub const SIGN_BIT_SET: u32 = 1;
    /// The arena had no room for this tensor: nothing was written past the arena's end, the stream is invalid.
    pub const OVERFLOW: u32 = 2;
    /// Set by a dependent op skipped because this tensor was invalid.
    pub const SKIPPED: u32 = 4;
}

/// Element types. Everything is handled as raw bits: zero means all bits zero.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// bfloat16 (16-bit).
    Bf16,
    /// IEEE binary16 (16-bit).
    F16,
    /// OCP FP8 e4m3fn (8-bit).
    E4m3,
    /// OCP FP8 e5m2 (8-bit).
    E5m2,
    /// IEEE binary32 (32-bit): the compute dtype of Burn's wgpu backend.
    F32,
}

impl DType {
    /// All element types, in code order.
    pub const ALL: [DType; 5] = [DType::Bf16, DType::F16, DType::E4m3, DType::E5m2, DType::F32];

    /// Code stored in the header.
    pub fn code(self) -> u8 {
        match self {
            DType::Bf16 => 0,
            DType::F16 => 1,
            DType::E4m3 => 2,
            DType::E5m2 => 3,
            DType::F32 => 4,
        }
    }

    /// Inverse of [`DType::code`].
    pub fn from_code(c: u8) -> Option<DType> {
        DType::ALL.get(c as usize).copied()
    }

    /// Element width in bits (32, 16 or 8).
    pub fn bits(self) -> u32 {
        match self {
            DType::F32 => 32,
            DType::Bf16 | DType::F16 => 16,
            DType::E4m3 | DType::E5m2 => 8,
        }
    }

    /// Element width in bytes.
    pub fn bytes(self) -> u64 {
        self.bits() as u64 / 8
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
            DType::E4m3 => "e4m3",
            DType::E5m2 => "e5m2",
            DType::F32 => "f32",
        }
    }

    /// Parses [`DType::name`] (case-insensitive).
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name().eq_ignore_ascii_case(s))
    }

    /// Stored bits per nonzero value.
    pub fn value_width(self, sign_pack: bool) -> u32 {
        self.bits() - sign_pack as u32
    }

    /// Width of the exponent field (BF16 and F32 8, F16 and e5m2 5, e4m3 4): format version 2 codes a
    /// tile's values by their offset from the tile's smallest exponent.
    pub fn exponent_bits(self) -> u32 {
        match self {
            DType::Bf16 | DType::F32 => 8,
            DType::F16 | DType::E5m2 => 5,
            DType::E4m3 => 4,
        }
    }

    /// Width of the mantissa field: the bits below the exponent.
    pub fn mantissa_bits(self) -> u32 {
        self.bits() - 1 - self.exponent_bits()
    }

    /// The sign bit of an element.
    pub fn sign_bit(self) -> u32 {
        1 << (self.bits() - 1)
    }

    /// `(1 << value_width) - 1`: the bits a stored value keeps (all 32 for unpacked F32).
    pub fn value_mask(self, sign_pack: bool) -> u32 {
        u32::MAX >> (32 - self.value_width(sign_pack))
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        DType::from_name(s).ok_or_else(|| format!("unknown dtype `{s}` (expected bf16, f16, f32, e4m3 or e5m2)"))
    }
}

/// Codec options that change the stored form.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// Store values without their sign bit (ReLU outputs are >= 0). A value with the sign bit set is an error.
    pub sign_pack: bool,
}

impl Options {
    /// Sign packing on.
    pub const SIGN_PACK: Options = Options { sign_pack: true };
}

/// Word-level layout of one compressed tensor. All offsets are in 32-bit words from the start of the
/// tensor's byte range.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Element type.
    pub dtype: DType,
    /// Element count.
    pub n: u64,
    /// Options.
    pub options: Options,
    /// Number of tiles, `ceil(n / TILE)`.
    pub tiles: u64,
    /// Word offset of the tile table (= [`HEADER_WORDS`]).
    pub table_offset: u64,
    /// Word offset of the mask.
    pub mask_offset: u64,
    /// Mask words, `ceil(n / 32)`.
    pub mask_words: u64,
    /// Word offset of the values section.
    pub values_offset: u64,
    /// Value words that the worst case (every element nonzero) needs.
    pub values_capacity: u64,
}

/// Words of a value stream of `count` values of `width` bits.
pub fn stream_words(count: u64, width: u32) -> u64 {
    (count * width as u64).div_ceil(32)
}

impl Layout {
    /// The layout of `n` elements of `dtype`.
    pub fn new(dtype: DType, n: u64, options: Options) -> Result<Layout> {
        let tiles = n.div_ceil(TILE as u64);
        // Table entries and the value-words header field are u32 word offsets.
        let width = dtype.value_width(options.sign_pack);
        let values_capacity = Self::values_words_for(n, width);
        if values_capacity > u32::MAX as u64 || tiles > u32::MAX as u64 {
            return Err(Error::TooLarge { elements: n });
        }
        let table_offset = HEADER_WORDS as u64;
        let mask_offset = table_offset + tiles;
        let mask_words = n.div_ceil(32);
        let values_offset = mask_offset + mask_words;
        Ok(Layout { dtype, n, options, tiles, table_offset, mask_offset, mask_words, values_offset, values_capacity })
    }

    fn values_words_for(n: u64, width: u32) -> u64 {
        let full = n / TILE as u64;
        let tail = n % TILE as u64;
        full * stream_words(TILE as u64, width) + stream_words(tail, width)
    }

    /// Stored bits per value.
    pub fn value_width(&self) -> u32 {
        self.dtype.value_width(self.options.sign_pack)
    }

    /// Elements in tile `t`.
    pub fn tile_len(&self, t: u64) -> u32 {
        let start = t * TILE as u64;
        (self.n - start).min(TILE as u64) as u32
    }

    /// Worst-case value words of tile `t`.
    pub fn tile_capacity_words(&self, t: u64) -> u64 {
        stream_words(self.tile_len(t) as u64, self.value_width())
    }

    /// Value-word base of a chunk starting at tile `first_tile` when a compress is split into chunks:
    /// the worst-case size of all tiles before it, so that every chunk's window is known on the host.
    pub fn chunk_value_base(&self, first_tile: u64) -> u64 {
        first_tile * stream_words(TILE as u64, self.value_width())
    }

    /// Bytes of the worst case: the size an output range must have.
    pub fn capacity_bytes(&self) -> u64 {
        (self.values_offset + self.values_capacity) * 4
    }

    /// Bytes of a compact stream whose values section uses `value_words` words.
    pub fn compact_bytes(&self, value_words: u64) -> u64 {
        (self.values_offset + value_words) * 4
    }

    /// Dense bytes of the tensor.
    pub fn dense_bytes(&self) -> u64 {
        self.n * self.dtype.bytes()
    }

    /// The header's `INFO` word.
    pub fn info_word(&self) -> u32 {
        let fl = if self.options.sign_pack { flags::SIGN_PACK } else { 0 };
        VERSION as u32 | (self.dtype.code() as u32) << 8 | (fl as u32) << 16 | TILE_LOG2 << 24
    }

    /// The eight header words, with `value_words`, `status`, `amax` and `scale` filled in.
    pub fn header(&self, value_words: u32, status: u32, amax: u32, scale: u32) -> [u32; 8] {
        [MAGIC, self.info_word(), self.n as u32, (self.n >> 32) as u32, value_words, status, amax, scale]
    }

    /// Parses and checks a header (magic, version, dtype, flags, tile size, and that the value words
    /// fit the capacity). Status bits are returned, not judged.
    pub fn from_header(h: &[u32]) -> Result<(Layout, Header)> {
        if h.len() < HEADER_WORDS as usize {
            return Err(Error::Corrupt("header truncated".into()));
        }
        if h[hdr::MAGIC] != MAGIC {
            return Err(Error::Corrupt("bad tensor magic".into()));
        }
        let info = h[hdr::INFO];
        let version = info as u8;
        if version != VERSION {
            return Err(Error::Corrupt(format!("unsupported tensor format version {version}")));
        }
        let dtype = DType::from_code((info >> 8) as u8)
            .ok_or_else(|| Error::Corrupt(format!("unknown dtype code {}", (info >> 8) as u8)))?;
        let fl = (info >> 16) as u8;
        if fl & !flags::SIGN_PACK != 0 {
            return Err(Error::Corrupt(format!("unknown flags {fl:#x}")));
        }
        if info >> 24 != TILE_LOG2 {
            return Err(Error::Corrupt(format!("unsupported tile size 2^{}", info >> 24)));
        }
        let n = h[hdr::N_LO] as u64 | (h[hdr::N_HI] as u64) << 32;
        let layout = Layout::new(dtype, n, Options { sign_pack: fl & flags::SIGN_PACK != 0 })
            .map_err(|_| Error::Corrupt(format!("element count {n} too large")))?;
        let header = Header {
            value_words: h[hdr::VALUE_WORDS],
            status: h[hdr::STATUS],
            amax: h[hdr::AMAX],
            scale: h[hdr::SCALE],
        };
        if header.value_words as u64 > layout.values_capacity {
            return Err(Error::Corrupt("value words exceed capacity".into()));
        }
        Ok((layout, header))
    }
}

/// Which format version a writer produces.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum FormatVersion {
    /// Version 1: every tile a 1-bit mask and plain values (what the GPU kernels write).
    V1,
    /// Version 2: per-tile encodings and exponent-coded values (§14); the default of files.
    #[default]
    V2,
}

impl FormatVersion {
    /// The version byte.
    pub fn byte(self) -> u8 {
        match self {
            FormatVersion::V1 => VERSION,
            FormatVersion::V2 => v2::VERSION,
        }
    }

    /// The version of byte `b`, if known.
    pub fn from_byte(b: u8) -> Option<FormatVersion> {
        match b {
            VERSION => Some(FormatVersion::V1),
            v2::VERSION => Some(FormatVersion::V2),
            _ => None,
        }
    }
}

/// What the header of a stream of either version says, checked as its version's `from_header` does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// Format version.
    pub version: FormatVersion,
    /// Element type.
    pub dtype: DType,
    /// Element count.
    pub n: u64,
    /// Options.
    pub options: Options,
    /// The header's variable part (`value_words` is `DATA_WORDS` in version 2).
    pub header: Header,
    /// Bytes before the values (v1) or data (v2) section: header, table or directory, mask.
    pub fixed_bytes: u64,
    /// Bytes of the stream the header announces (fixed sections plus `VALUE_WORDS` / `DATA_WORDS`).
    pub stream_bytes: u64,
}

impl StreamInfo {
    /// Parses the eight header words of a stream of either version.
    pub fn from_header(h: &[u32]) -> Result<StreamInfo> {
        let version = h.get(hdr::INFO).map(|&i| i as u8);
        if h.get(hdr::MAGIC) == Some(&MAGIC) && version == Some(v2::VERSION) {
            let (l, header) = v2::LayoutV2::from_header(h)?;
            return Ok(StreamInfo {
                version: FormatVersion::V2,
                dtype: l.dtype,
                n: l.n,
                options: l.options,
                header,
                fixed_bytes: l.data_offset * 4,
                stream_bytes: l.stream_bytes(header.value_words as u64),
            });
        }
        let (l, header) = Layout::from_header(h)?;
        Ok(StreamInfo {
            version: FormatVersion::V1,
            dtype: l.dtype,
            n: l.n,
            options: l.options,
            header,
            fixed_bytes: l.values_offset * 4,
            stream_bytes: l.compact_bytes(header.value_words as u64),
        })
    }

    /// Parses the header at the start of `stream` (at least 32 bytes).
    pub fn from_bytes(stream: &[u8]) -> Result<StreamInfo> {
        if stream.len() < HEADER_BYTES as usize {
            return Err(Error::Corrupt(format!(
                "truncated: {} bytes, the header alone needs {HEADER_BYTES}",
                stream.len()
            )));
        }
        let h: Vec<u32> = stream[..HEADER_BYTES as usize]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Self::from_header(&h)
    }
}

/// The variable part of a header.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// One past the last value word used.
    pub value_words: u32,
    /// [`status`] bits.
    pub status: u32,
    /// FP8: amax (f32 bits).
    pub amax: u32,
    /// FP8: scale (f32 bits).
    pub scale: u32,
}

/// Binary entropy H(p) in bits.
pub fn binary_entropy(p: f64) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        0.0
    } else {
        -(p * p.log2() + (1.0 - p) * (1.0 - p).log2())
    }
}

/// The entropy bound of docs/CONVENTIONS.md in bits per element: `H(ρ) + (b − s)·ρ`.
pub fn entropy_bound_bits(density: f64, dtype: DType, sign_pack: bool) -> f64 {
    binary_entropy(density) + dtype.value_width(sign_pack) as f64 * density
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_sizes() {
        let l = Layout::new(DType::Bf16, 4097, Options::default()).unwrap();
        assert_eq!(l.tiles, 2);
        assert_eq!(l.mask_words, 129);
        assert_eq!(l.values_capacity, 2048 + 1);
        assert_eq!(l.values_offset, 8 + 2 + 129);
        let l = Layout::new(DType::E4m3, 33, Options::SIGN_PACK).unwrap();
        assert_eq!(l.values_capacity, (33u64 * 7).div_ceil(32));
        let l = Layout::new(DType::F16, 0, Options::default()).unwrap();
        assert_eq!((l.tiles, l.mask_words, l.values_capacity), (0, 0, 0));
        let l = Layout::new(DType::F32, 4097, Options::default()).unwrap();
        assert_eq!(l.values_capacity, 4096 + 1);
        let l = Layout::new(DType::F32, 33, Options::SIGN_PACK).unwrap();
        assert_eq!(l.values_capacity, (33u64 * 31).div_ceil(32));
        assert_eq!(l.dense_bytes(), 132);
    }

    #[test]
    fn f32_is_code_4() {
        assert_eq!(DType::F32.code(), 4);
        assert_eq!(DType::from_code(4), Some(DType::F32));
        assert_eq!(DType::from_code(5), None);
        assert_eq!(DType::from_name("F32"), Some(DType::F32));
        assert_eq!((DType::F32.bits(), DType::F32.bytes(), DType::F32.sign_bit()), (32, 4, 0x8000_0000));
        assert_eq!(DType::F32.value_mask(false), u32::MAX);
        assert_eq!(DType::F32.value_mask(true), 0x7FFF_FFFF);
        let l = Layout::new(DType::F32, 5, Options::SIGN_PACK).unwrap();
        assert_eq!(Layout::from_header(&l.header(0, 0, 0, 0)).unwrap().0, l);
    }

    #[test]
    fn header_round_trip() {
        let l = Layout::new(DType::E5m2, (1 << 32) + 5, Options::SIGN_PACK).unwrap();
        let h = l.header(7, 0, 0, 0);
        let (l2, hh) = Layout::from_header(&h).unwrap();
        assert_eq!(l, l2);
        assert_eq!(hh.value_words, 7);
    }

    #[test]
    fn entropy_bound_matches_definition() {
        assert!((entropy_bound_bits(0.5, DType::Bf16, false) - 9.0).abs() < 1e-12);
        assert_eq!(entropy_bound_bits(0.0, DType::Bf16, true), 0.0);
        assert!((entropy_bound_bits(1.0, DType::E4m3, true) - 7.0).abs() < 1e-12);
        assert!((entropy_bound_bits(0.5, DType::F32, false) - 17.0).abs() < 1e-12);
        assert!((entropy_bound_bits(1.0, DType::F32, true) - 31.0).abs() < 1e-12);
    }
}
