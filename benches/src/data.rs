//! Benchmark data: synthetic ReLU² activations, and what the host can know about them without the GPU
//! (measured density, the compact stream's size) so that nothing needs reading back inside a timed region.

use bitsparse::format::{stream_words, DType, Layout, Options, TILE};

/// Elements per generation chunk. Chunks are seeded by their index, so the data do not depend on the
/// number of threads, and every size of the sweep is a prefix of the largest one.
const GEN_CHUNK: usize = 1 << 22;

/// `n` elements of ReLU² data of nominal `density` (little-endian bytes), generated in parallel.
pub fn synthetic(n: u64, density: f64, dtype: DType, seed: u64) -> Vec<u8> {
    let n = n as usize;
    let eb = dtype.bytes() as usize;
    let mut out = vec![0u8; n * eb];
    let chunks: Vec<&mut [u8]> = out.chunks_mut(GEN_CHUNK * eb).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let chunks: Vec<std::sync::Mutex<&mut [u8]>> = chunks.into_iter().map(std::sync::Mutex::new).collect();
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).min(chunks.len()).max(1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(slot) = chunks.get(i) else { break };
                let mut dst = slot.lock().unwrap_or_else(|e| e.into_inner());
                let len = dst.len() / eb;
                let chunk_seed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(i as u64);
                dst.copy_from_slice(&bitsparse::cpu::synthetic_relu2(len, density, dtype, chunk_seed));
            });
        }
    });
    out
}

/// Nonzero (not all-bits-zero) elements of each [`TILE`]-element tile (the CPU reference's count, for
/// every element width: a 4-byte F32 element counted byte by byte made the F32 rows' density, bound
/// and GB/s four times too high in the first H200 run).
pub fn tile_nonzeros(data: &[u8], dtype: DType) -> Vec<u32> {
    let eb = dtype.bytes() as usize;
    data.chunks(TILE as usize * eb).map(|tile| bitsparse::cpu::count_nonzeros(tile, dtype) as u32).collect()
}

/// Facts about one tensor of the sweep, computed on the host.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Elements.
    pub n: u64,
    /// Nonzero elements ÷ elements.
    pub measured_density: f64,
    /// Nonzeros per tile.
    pub tile_nnz: Vec<u32>,
}

impl Stats {
    /// The stats of `data`.
    pub fn of(data: &[u8], dtype: DType) -> Stats {
        let n = data.len() as u64 / dtype.bytes();
        let tile_nnz = tile_nonzeros(data, dtype);
        let nnz: u64 = tile_nnz.iter().map(|&c| c as u64).sum();
        Stats { n, measured_density: if n == 0 { 0.0 } else { nnz as f64 / n as f64 }, tile_nnz }
    }

    /// Value words of the compact stream: each tile's stream padded to a whole word (docs/FORMAT.md).
    pub fn value_words(&self, dtype: DType, options: Options) -> u64 {
        let w = dtype.value_width(options.sign_pack);
        self.tile_nnz.iter().map(|&c| stream_words(c as u64, w)).sum()
    }

    /// Bytes of mask plus values: what compress writes besides the header and tile table, and what
    /// decompress reads (the "bytes that must move" of docs/CONVENTIONS.md, beside the dense side).
    pub fn mask_and_values_bytes(&self, layout: &Layout) -> u64 {
        (layout.mask_words + self.value_words(layout.dtype, layout.options)) * 4
    }
}

/// A pre-activation `z` of `dtype` (BF16, F16 or F32: the dtypes of the fused kernels) with the same
/// support as `a` (ReLU² data): `z = √a` where `a ≠ 0` (kept nonzero where the root rounds to zero), and
/// −1.0 elsewhere, so `relu(z)` has exactly `a`'s density. For the fused and plain kernels' rows.
pub fn pre_activation(a: &[u8], dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => a
            .chunks_exact(4)
            .flat_map(|e| {
                let bits = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                let z = if bits == 0 { -1.0f32 } else { f32::from_bits(bits).sqrt() };
                let z = if z.to_bits() == 0 { f32::from_bits(1) } else { z };
                z.to_bits().to_le_bytes()
            })
            .collect(),
        DType::F16 => a
            .chunks_exact(2)
            .flat_map(|e| {
                let bits = u16::from_le_bytes([e[0], e[1]]);
                let z = if bits == 0 {
                    half::f16::from_f32(-1.0)
                } else {
                    half::f16::from_f32(half::f16::from_bits(bits).to_f32().sqrt())
                };
                let z = if z.to_bits() == 0 { half::f16::from_bits(1) } else { z };
                z.to_bits().to_le_bytes()
            })
            .collect(),
        _ => a
            .chunks_exact(2)
            .flat_map(|e| {
                let bits = u16::from_le_bytes([e[0], e[1]]);
                let z = if bits == 0 {
                    half::bf16::from_f32(-1.0)
                } else {
                    let r = half::bf16::from_bits(bits).to_f32().sqrt();
                    // sqrt of a tiny subnormal can round to zero in BF16: keep the element nonzero.
                    let z = half::bf16::from_f32(r);
                    if z.to_bits() == 0 {
                        half::bf16::from_bits(1)
                    } else {
                        z
                    }
                };
                z.to_bits().to_le_bytes()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_is_prefix_stable_and_near_density() {
        let big = synthetic(3 * GEN_CHUNK as u64 / 2, 0.176, DType::Bf16, 7);
        let small = synthetic(1000, 0.176, DType::Bf16, 7);
        assert_eq!(&big[..2000], &small[..]);
        let s = Stats::of(&big, DType::Bf16);
        assert!((s.measured_density - 0.176).abs() < 0.01, "{}", s.measured_density);
    }

    #[test]
    fn value_words_pad_each_tile() {
        // Two tiles: 3 nonzeros and 0 nonzeros; 16-bit values → 2 words; 15-bit → 2 words (45 bits).
        let mut data = vec![0u8; 2 * TILE as usize * 2];
        data[0] = 1;
        data[2] = 1;
        data[4] = 1;
        let s = Stats::of(&data, DType::Bf16);
        assert_eq!(s.tile_nnz, vec![3, 0]);
        assert_eq!(s.value_words(DType::Bf16, Options::default()), 2);
        assert_eq!(s.value_words(DType::E4m3, Options::default()), 1);
        // 32-bit elements: each counted once whatever its bytes; 32-bit values → one word each.
        let mut data = vec![0u8; TILE as usize * 4 + 8];
        data[0..4].copy_from_slice(&[1, 2, 3, 4]);
        data[4 * 7 + 3] = 0x80;
        data[TILE as usize * 4 + 5] = 9;
        let s = Stats::of(&data, DType::F32);
        assert_eq!(s.tile_nnz, vec![2, 1]);
        assert_eq!(s.value_words(DType::F32, Options::default()), 3);
    }

    #[test]
    fn pre_activation_keeps_support() {
        let a = synthetic(10_000, 0.3, DType::Bf16, 3);
        let z = pre_activation(&a, DType::Bf16);
        for (x, y) in a.chunks_exact(2).zip(z.chunks_exact(2)) {
            let a_nz = x != [0, 0];
            let z_pos = half::bf16::from_le_bytes([y[0], y[1]]).to_f32() > 0.0;
            assert_eq!(a_nz, z_pos);
        }
        for dtype in [DType::F16, DType::F32] {
            let a = synthetic(10_000, 0.3, dtype, 4);
            let z = pre_activation(&a, dtype);
            let eb = dtype.bytes() as usize;
            for (x, y) in a.chunks_exact(eb).zip(z.chunks_exact(eb)) {
                let a_nz = x.iter().any(|&b| b != 0);
                let z_pos = match dtype {
                    DType::F16 => half::f16::from_le_bytes([y[0], y[1]]).to_f32() > 0.0,
                    _ => f32::from_le_bytes([y[0], y[1], y[2], y[3]]) > 0.0,
                };
                assert_eq!(a_nz, z_pos, "{dtype}");
            }
        }
    }
}
