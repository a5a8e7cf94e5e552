//! Format version 2: per-tile encodings (`docs/FORMAT.md` §14). Constants, the tile descriptor and the
//! section layout; the CPU reference codec of this version is `crate::cpu::v2`.
//!
//! Why a second version: the one-bit mask of version 1 costs one bit per element whatever the density.
//! At the densities trained ReLU² models reach (ρ ≈ 0.02) that is about 7× the positions' information
//! and the whole stream about 2.9× the entropy bound; a 2^20-element BF16 tensor at ρ = 0.005 was 0.05
//! of the bound (docs/FORMAT.md §11). Version 2 lets every tile take the smallest of four encodings and
//! code its values with the tile's exponent range, which a ReLU/ReLU² tile keeps to 10–20 binades.
//!
//! ```text
//! [ header: 8 words ][ descriptors: T words ][ group bases: ceil(T/16) words | tile starts: T words ][ data ]
//! ```

use super::{DType, Header, Options, HEADER_WORDS, MAGIC, TILE, TILE_LOG2};
use crate::error::{Error, Result};

/// Version byte of this format.
pub const VERSION: u8 = 2;
/// Tiles per group of the ordered directory: one 32-bit base per group, the tiles of a group back to back.
pub const GROUP_TILES: u64 = 16;

/// Flag bits of version 2 (`INFO` bits 16–23).
pub mod flags {
    /// Values are stored without their sign bit.
    pub const SIGN_PACK: u8 = 1;
    /// The directory holds one start word per tile (a writer that claims space with an atomic per tile)
    /// instead of one base per group of [`super::GROUP_TILES`] tiles.
    pub const TILE_STARTS: u8 = 2;
}

/// Tile encodings (descriptor bits 0–1).
pub mod enc {
    /// The tile's mask words, then its nonzeros' codes.
    pub const MASK: u8 = 0;
    /// Elias–Fano positions of the nonzeros, then their codes.
    pub const POSITIONS: u8 = 1;
    /// No nonzero element; no data.
    pub const EMPTY: u8 = 2;
    /// Every element's code, zeros included, no positions.
    pub const RAW: u8 = 3;
}

/// Names of the encodings, by code (JSON keys of `analyze`).
pub const ENCODING_NAMES: [&str; 4] = ["mask", "positions", "empty", "raw"];

/// The `eb` field value meaning "values stored as in version 1" (`w` bits each).
pub const PLAIN: u8 = 15;

/// The canonical writer's margin for positions tiles, in 64ths: a tile is written as Elias–Fano
/// positions instead of a mask only where its words × (64 + this) are fewer than the mask tile's
/// words × 64, i.e. where positions save more than 1/9 of the tile (FORMAT.md §14.5). Decoding a
/// positions tile costs far more than a mask tile: on an H100 (201M i.i.d. ReLU² BF16, ρ = 0.176, where
/// positions save ~7 %) the version-2 decode took 0.2918 ms with positions tiles and 0.2158 with mask
/// tiles (version 1: 0.1964), the GPU writer 0.4091 and 0.3215; the stream grew from 0.886 to 0.951 of
/// its positions form (bound_fraction 1.128 -> 1.052, still above issue 16's 0.95). Sparser tiles,
/// where positions save far more (ρ <= 0.1), keep them (docs/PERFORMANCE.md, thirtieth session).
pub const POSITIONS_GAIN: u32 = 8;

/// One tile's descriptor word: `enc | eb << 2 | emin << 6 | count << 14`, bits 27–31 zero.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileDesc {
    /// Encoding ([`enc`]).
    pub enc: u8,
    /// Exponent-offset width of the value code, or [`PLAIN`].
    pub eb: u8,
    /// The smallest exponent field of the tile's coded values (0 with [`PLAIN`]).
    pub emin: u8,
    /// Values stored: the nonzeros (mask, positions), 0 (empty) or the tile length (raw).
    pub count: u32,
}

impl TileDesc {
    /// The descriptor of an empty tile.
    pub const EMPTY: TileDesc = TileDesc { enc: enc::EMPTY, eb: PLAIN, emin: 0, count: 0 };

    /// The descriptor word.
    pub fn word(&self) -> u32 {
        self.enc as u32 | (self.eb as u32) << 2 | (self.emin as u32) << 6 | self.count << 14
    }

    /// Splits a descriptor word into its fields (nothing checked; see [`TileDesc::check`]).
    pub fn from_word(w: u32) -> (TileDesc, u32) {
        let d = TileDesc {
            enc: (w & 3) as u8,
            eb: ((w >> 2) & 15) as u8,
            emin: ((w >> 6) & 0xff) as u8,
            count: (w >> 14) & 0x1fff,
        };
        (d, w >> 27)
    }

    /// Checks the descriptor of a tile of `len` elements against the rules of FORMAT.md §14.6.
    pub fn check(&self, dtype: DType, sign_pack: bool, len: u32) -> std::result::Result<(), String> {
        let e = dtype.exponent_bits();
        if self.eb == PLAIN {
            if self.emin != 0 {
                return Err("plain values with a nonzero exponent base".into());
            }
        } else {
            if self.eb as u32 >= e {
                return Err(format!("exponent-offset width {} not below the dtype's {e} exponent bits", self.eb));
            }
            if self.emin as u32 + (1u32 << self.eb) - 1 > (1u32 << e) - 1 {
                return Err(format!("exponent base {} + 2^{} - 1 past the largest exponent", self.emin, self.eb));
            }
        }
        match self.enc {
            enc::MASK if self.count > len => Err(format!("{} values in a tile of {len}", self.count)),
            enc::POSITIONS if self.count == 0 || self.count > len => {
                Err(format!("positions tile with {} values in a tile of {len}", self.count))
            }
            enc::EMPTY if self.count != 0 || self.eb != PLAIN => Err("empty tile with values or a value code".into()),
            enc::RAW if self.count != len => Err(format!("raw tile of {} values, not its {len} elements", self.count)),
            _ => {
                if self.words(dtype, sign_pack, len) > tile_capacity_words(dtype, sign_pack, len) {
                    return Err("tile larger than its mask and every value".into());
                }
                Ok(())
            }
        }
    }

    /// Bits per stored value.
    pub fn value_width(&self, dtype: DType, sign_pack: bool) -> u32 {
        if self.eb == PLAIN {
            dtype.value_width(sign_pack)
        } else {
            !sign_pack as u32 + self.eb as u32 + dtype.mantissa_bits()
        }
    }

    /// Elias–Fano low bits `L` of a positions tile: the largest `L` with `count · 2^L <= len`.
    pub fn low_bits(&self, len: u32) -> u32 {
        ef_low_bits(self.count, len)
    }

    /// Bits spent on positions: the mask's words, the Elias–Fano lower and upper bits, or 0.
    pub fn position_bits(&self, len: u32) -> u64 {
        match self.enc {
            enc::MASK => len.div_ceil(32) as u64 * 32,
            enc::POSITIONS => {
                let l = self.low_bits(len);
                self.count as u64 * l as u64 + ef_upper_bits(self.count, len, l)
            }
            _ => 0,
        }
    }

    /// Bits spent on values.
    pub fn value_bits(&self, dtype: DType, sign_pack: bool) -> u64 {
        self.count as u64 * self.value_width(dtype, sign_pack) as u64
    }

    /// Words of the tile's data.
    pub fn words(&self, dtype: DType, sign_pack: bool, len: u32) -> u64 {
        let v = self.value_bits(dtype, sign_pack);
        match self.enc {
            enc::MASK => len.div_ceil(32) as u64 + v.div_ceil(32),
            enc::POSITIONS => (self.position_bits(len) + v).div_ceil(32),
            enc::EMPTY => 0,
            _ => v.div_ceil(32),
        }
    }
}

/// Elias–Fano low bits for `count >= 1` positions below `len`.
pub fn ef_low_bits(count: u32, len: u32) -> u32 {
    let mut l = 0;
    while count > 0 && l < 31 && (count as u64) << (l + 1) <= len as u64 {
        l += 1;
    }
    l
}

/// Length of the Elias–Fano upper bit vector: one 1 per position and `((len - 1) >> l) + 1` zeros.
pub fn ef_upper_bits(count: u32, len: u32, l: u32) -> u64 {
    count as u64 + ((len.max(1) - 1) >> l) as u64 + 1
}

/// The largest valid tile of `len` elements: its mask and every element's plain value (version 1's
/// worst case), the bound that sizes output buffers and checks `DATA_WORDS`.
pub fn tile_capacity_words(dtype: DType, sign_pack: bool, len: u32) -> u64 {
    len.div_ceil(32) as u64 + (len as u64 * dtype.value_width(sign_pack) as u64).div_ceil(32)
}

/// Word-level layout of one version-2 tensor (offsets in words from its start).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LayoutV2 {
    /// Element type.
    pub dtype: DType,
    /// Element count.
    pub n: u64,
    /// Options.
    pub options: Options,
    /// The directory holds tile starts ([`flags::TILE_STARTS`]) rather than group bases.
    pub tile_starts: bool,
    /// Tiles, `ceil(n / 4096)`.
    pub tiles: u64,
    /// Word offset of the descriptors (= 8).
    pub desc_offset: u64,
    /// Word offset of the group bases or tile starts.
    pub dir_offset: u64,
    /// Words of the group bases (`ceil(T / 16)`) or tile starts (`T`).
    pub dir_words: u64,
    /// Word offset of the data section.
    pub data_offset: u64,
    /// Data words of the worst case (every tile at [`tile_capacity_words`]).
    pub data_capacity: u64,
}

impl LayoutV2 {
    /// The layout of `n` elements of `dtype`.
    pub fn new(dtype: DType, n: u64, options: Options, tile_starts: bool) -> Result<LayoutV2> {
        let tiles = n.div_ceil(TILE as u64);
        let full = n / TILE as u64;
        let tail = (n % TILE as u64) as u32;
        let sp = options.sign_pack;
        let data_capacity = full * tile_capacity_words(dtype, sp, TILE) + tile_capacity_words(dtype, sp, tail);
        if data_capacity > u32::MAX as u64 || tiles > u32::MAX as u64 {
            return Err(Error::TooLarge { elements: n });
        }
        let dir_words = if tile_starts { tiles } else { tiles.div_ceil(GROUP_TILES) };
        let desc_offset = HEADER_WORDS as u64;
        let dir_offset = desc_offset + tiles;
        let data_offset = dir_offset + dir_words;
        Ok(LayoutV2 {
            dtype,
            n,
            options,
            tile_starts,
            tiles,
            desc_offset,
            dir_offset,
            dir_words,
            data_offset,
            data_capacity,
        })
    }

    /// Elements in tile `t`.
    pub fn tile_len(&self, t: u64) -> u32 {
        (self.n - t * TILE as u64).min(TILE as u64) as u32
    }

    /// Bytes of a stream whose data section has `data_words` words.
    pub fn stream_bytes(&self, data_words: u64) -> u64 {
        (self.data_offset + data_words) * 4
    }

    /// Bytes of the worst case.
    pub fn capacity_bytes(&self) -> u64 {
        self.stream_bytes(self.data_capacity)
    }

    /// The header's `INFO` word.
    pub fn info_word(&self) -> u32 {
        let fl = if self.options.sign_pack { flags::SIGN_PACK } else { 0 }
            | if self.tile_starts { flags::TILE_STARTS } else { 0 };
        VERSION as u32 | (self.dtype.code() as u32) << 8 | (fl as u32) << 16 | TILE_LOG2 << 24
    }

    /// The eight header words.
    pub fn header(&self, data_words: u32, status: u32, amax: u32, scale: u32) -> [u32; 8] {
        [MAGIC, self.info_word(), self.n as u32, (self.n >> 32) as u32, data_words, status, amax, scale]
    }

    /// Parses and checks a version-2 header (magic, version, dtype, flags, tile size, `DATA_WORDS`
    /// within the worst case). Status bits are returned, not judged.
    pub fn from_header(h: &[u32]) -> Result<(LayoutV2, Header)> {
        let corrupt = |m: String| Error::Corrupt(m);
        if h.len() < HEADER_WORDS as usize {
            return Err(corrupt("header truncated".into()));
        }
        if h[0] != MAGIC {
            return Err(corrupt("bad tensor magic".into()));
        }
        let info = h[1];
        if info as u8 != VERSION {
            return Err(corrupt(format!("unsupported tensor format version {}", info as u8)));
        }
        let dtype = DType::from_code((info >> 8) as u8)
            .ok_or_else(|| corrupt(format!("unknown dtype code {}", (info >> 8) as u8)))?;
        let fl = (info >> 16) as u8;
        if fl & !(flags::SIGN_PACK | flags::TILE_STARTS) != 0 {
            return Err(corrupt(format!("unknown flags {fl:#x}")));
        }
        if info >> 24 != TILE_LOG2 {
            return Err(corrupt(format!("unsupported tile size 2^{}", info >> 24)));
        }
        let n = h[2] as u64 | (h[3] as u64) << 32;
        let options = Options { sign_pack: fl & flags::SIGN_PACK != 0 };
        let layout = LayoutV2::new(dtype, n, options, fl & flags::TILE_STARTS != 0)
            .map_err(|_| corrupt(format!("element count {n} too large")))?;
        let header = Header { value_words: h[4], status: h[5], amax: h[6], scale: h[7] };
        if header.value_words as u64 > layout.data_capacity {
            return Err(corrupt("data words exceed capacity".into()));
        }
        Ok((layout, header))
    }
}

/// The version byte of a stream (`INFO` bits 0–7), or `None` for fewer than 8 bytes.
pub fn stream_version(stream: &[u8]) -> Option<u8> {
    stream.get(4).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_round_trip() {
        let d = TileDesc { enc: enc::POSITIONS, eb: 4, emin: 0x70, count: 4096 };
        assert_eq!(TileDesc::from_word(d.word()), (d, 0));
        assert_eq!(TileDesc::from_word(d.word() | 1 << 27).1, 1);
    }

    #[test]
    fn elias_fano_sizes() {
        // k = 20 in 4096: L = floor(log2(204.8)) = 7; 4096 >> 7 = 32 upper zeros.
        assert_eq!(ef_low_bits(20, 4096), 7);
        assert_eq!(ef_upper_bits(20, 4096, 7), 20 + 32);
        assert_eq!(ef_low_bits(1, 4096), 12);
        assert_eq!(ef_upper_bits(1, 4096, 12), 2);
        assert_eq!(ef_low_bits(4096, 4096), 0);
        assert_eq!(ef_low_bits(3, 7), 1);
        assert_eq!(ef_upper_bits(1, 1, 0), 2);
    }

    #[test]
    fn widths_and_capacity() {
        let d = TileDesc { enc: enc::MASK, eb: 3, emin: 120, count: 10 };
        assert_eq!(d.value_width(DType::Bf16, true), 10);
        assert_eq!(d.value_width(DType::Bf16, false), 11);
        assert_eq!(d.value_width(DType::F32, true), 26);
        assert_eq!(d.words(DType::Bf16, true, 4096), 128 + 4);
        assert_eq!(tile_capacity_words(DType::Bf16, false, 4096), 128 + 2048);
        assert!(d.check(DType::Bf16, true, 4096).is_ok());
        assert!(TileDesc { eb: 8, ..d }.check(DType::Bf16, true, 4096).is_err());
        assert!(TileDesc { emin: 250, ..d }.check(DType::Bf16, true, 4096).is_err());
        assert!(TileDesc { enc: enc::RAW, ..d }.check(DType::Bf16, true, 4096).is_err());
        assert!(TileDesc { enc: enc::POSITIONS, count: 0, ..d }.check(DType::Bf16, true, 4096).is_err());
        // A positions tile of every element is bigger than its mask form: refused.
        assert!(TileDesc { enc: enc::POSITIONS, count: 4096, eb: PLAIN, emin: 0 }
            .check(DType::E4m3, true, 4096)
            .is_err());
    }

    #[test]
    fn layout_v2() {
        let l = LayoutV2::new(DType::Bf16, 4097, Options::default(), false).unwrap();
        assert_eq!((l.tiles, l.dir_words, l.data_offset), (2, 1, 8 + 2 + 1));
        assert_eq!(l.data_capacity, 128 + 2048 + 1 + 1);
        let s = LayoutV2::new(DType::Bf16, 4097, Options::default(), true).unwrap();
        assert_eq!(s.dir_words, 2);
        let (back, _) = LayoutV2::from_header(&s.header(3, 0, 0, 0)).unwrap();
        assert_eq!(back, s);
        let z = LayoutV2::new(DType::F16, 0, Options::SIGN_PACK, false).unwrap();
        assert_eq!((z.tiles, z.dir_words, z.data_capacity, z.data_offset), (0, 0, 0, 8));
    }
}
