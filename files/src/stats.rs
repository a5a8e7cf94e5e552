//! What `analyze` counts on the host: nonzeros, values with the sign bit set, and how density varies from
//! tile to tile (a tensor at 18% overall can be 0% in some tiles and 60% in others, which is what a
//! per-tile mode, or a different tile size, would exploit).

use bitsparse::format::{DType, TILE};

/// Bins of the per-tile density histogram: `[0, 0.1)`, `[0.1, 0.2)`, …, `[0.9, 1.0]`.
pub const HIST_BINS: usize = 10;

/// Counts of one tensor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TensorStats {
    /// Elements.
    pub elements: u64,
    /// Elements that are not all bits zero.
    pub nonzeros: u64,
    /// Elements with the sign bit set (−0.0 and negative NaNs included): sign packing is possible iff 0.
    pub negatives: u64,
    /// Tiles (of [`TILE`] elements; the last may be shorter and is measured on its own length).
    pub tiles: u64,
    /// Tiles per density bin (see [`HIST_BINS`]).
    pub tile_histogram: [u64; HIST_BINS],
}

impl TensorStats {
    /// Density, `None` without elements.
    pub fn density(&self) -> Option<f64> {
        (self.elements > 0).then(|| self.nonzeros as f64 / self.elements as f64)
    }
}

/// The bin of a tile with `nz` nonzeros out of `len`: `floor(10·ρ)`, with ρ = 1 in the last bin.
/// Integer arithmetic, so ρ = 0.3 exactly lands in bin 3 whatever the float rounding.
pub fn bin_of(nz: u64, len: u64) -> usize {
    if len == 0 {
        return 0;
    }
    ((nz * HIST_BINS as u64 / len) as usize).min(HIST_BINS - 1)
}

/// Counts `data` (little-endian elements of `dtype`; a trailing partial element is ignored).
pub fn stats(data: &[u8], dtype: DType) -> TensorStats {
    let eb = dtype.bytes() as usize;
    let sign = (dtype.sign_bit() >> (8 * (eb - 1))) as u8;
    let mut s = TensorStats { elements: (data.len() / eb) as u64, ..Default::default() };
    for tile in data[..data.len() / eb * eb].chunks(TILE as usize * eb) {
        let mut nz = 0u64;
        for e in tile.chunks_exact(eb) {
            if e.iter().any(|&b| b != 0) {
                nz += 1;
            }
            if e[eb - 1] & sign != 0 {
                s.negatives += 1;
            }
        }
        s.nonzeros += nz;
        s.tiles += 1;
        s.tile_histogram[bin_of(nz, (tile.len() / eb) as u64)] += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histogram() {
        // Two tiles of BF16: the first all zero but one −0.0, the second 30% nonzero, plus a 10-element tail
        // that is all nonzero.
        let n = 2 * TILE as usize + 10;
        let mut d = vec![0u8; n * 2];
        d[1] = 0x80; // element 0: −0.0 (nonzero, sign bit)
        for i in 0..(TILE as usize * 3 / 10 + 1) {
            d[(TILE as usize + i) * 2] = 1;
        }
        for i in 2 * TILE as usize..n {
            d[i * 2 + 1] = 0x3f;
        }
        let s = stats(&d, DType::Bf16);
        assert_eq!(s.elements, n as u64);
        assert_eq!(s.negatives, 1);
        assert_eq!(s.nonzeros, 1 + (TILE as u64 * 3 / 10 + 1) + 10);
        assert_eq!(s.tiles, 3);
        let mut want = [0u64; HIST_BINS];
        want[0] = 1;
        want[3] = 1;
        want[9] = 1;
        assert_eq!(s.tile_histogram, want);
        assert_eq!(stats(&[], DType::E4m3).density(), None);
        assert_eq!(stats(&[0x80, 0, 1], DType::E5m2).negatives, 1);
    }
}
