//! Deterministic synthetic data: ReLU² activations for demos and benches, raw bit patterns for codec
//! tests. A tiny built-in PRNG (splitmix64) keeps them reproducible across platforms and crate versions.

use crate::format::DType;

/// splitmix64: small, fast, and good enough for test data (also used by the demos' data generators).
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in the open interval (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Uniform in [-1, 1), on a grid of 2^-23 (24 random bits).
    pub fn symmetric(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9),
/// for `p` in (0, 1).
fn inv_norm_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    const P_LOW: f64 = 0.02425;
    if p < P_LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -inv_norm_cdf(1.0 - p)
    }
}

/// A positive finite `x` rounded to nearest-even into an FP8 format with `m` mantissa bits and exponent
/// `bias`, saturating at `max_code` (the largest finite value). Zero and negatives give 0.
fn fp8_from_positive(x: f64, m: u32, bias: i32, max_code: u32) -> u8 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let emin = 1 - bias;
    let e = (((x.to_bits() >> 52) & 0x7FF) as i32 - 1023).max(emin);
    let q = (e - m as i32) as f64;
    let mut k = (x / q.exp2()).round_ties_even() as u64;
    let code = if k < 1 << m {
        k as u32 // subnormal (only reachable at e == emin), or zero
    } else {
        let mut e = e;
        if k == 2 << m {
            e += 1;
            k = 1 << m;
        }
        (((e + bias).max(0) as u32) << m | (k as u32 - (1 << m))).min(0xFFFF)
    };
    code.min(max_code) as u8
}

/// The bits of a non-negative `x` in `dtype`, rounded to nearest even (FP8 saturating).
fn encode_positive(x: f64, dtype: DType) -> u32 {
    match dtype {
        DType::Bf16 => half::bf16::from_f32(x as f32).to_bits() as u32,
        DType::F16 => half::f16::from_f32(x as f32).to_bits() as u32,
        DType::E4m3 => fp8_from_positive(x, 3, 7, 0x7E) as u32,
        DType::E5m2 => fp8_from_positive(x, 2, 15, 0x7B) as u32,
        DType::F32 => (x as f32).to_bits(),
    }
}

fn put(out: &mut Vec<u8>, v: u32, dtype: DType) {
    match dtype.bytes() {
        4 => out.extend_from_slice(&v.to_le_bytes()),
        2 => out.extend_from_slice(&(v as u16).to_le_bytes()),
        _ => out.push(v as u8),
    }
}

/// A deterministic synthetic ReLU² activation tensor of `n` elements: `relu(z)²` with
/// `z ~ N(μ, 1)` and `μ = Φ⁻¹(density)`, so that `P(z > 0) = density`, rounded to `dtype` (little-endian
/// bytes). No element has its sign bit set, so it can be sign-packed.
///
/// Each element draws one uniform `u`; it is nonzero iff `u > 1 − density`, and then
/// `z = μ + Φ⁻¹(u) > 0`. Where `z²` would round to zero in `dtype` (tiny `z`, mostly FP8) the smallest
/// positive subnormal is stored instead, so the expected density is exactly `density` in every dtype.
pub fn synthetic_relu2(n: usize, density: f64, dtype: DType, seed: u64) -> Vec<u8> {
    let density = if density.is_nan() { 0.0 } else { density.clamp(0.0, 1.0) };
    let mu = inv_norm_cdf(density.clamp(1e-12, 1.0 - 1e-12));
    let mut rng = SplitMix64(seed ^ 0x5EED_0000_0000_0001);
    let mut out = Vec::with_capacity(n * dtype.bytes() as usize);
    for _ in 0..n {
        let u = rng.unit();
        let v = if u > 1.0 - density {
            let z = (mu + inv_norm_cdf(u)).max(0.0);
            match encode_positive(z * z, dtype) {
                0 => 1,
                bits => bits,
            }
        } else {
            0
        };
        put(&mut out, v, dtype);
    }
    out
}

/// Raw bit patterns that must survive a round trip: signed zero, infinities, NaN payloads, subnormals,
/// all ones (for BF16 and F16 alike).
const SPECIAL16: [u16; 15] = [
    0x8000, 0xFFFF, 0x7FFF, 0x7FC0, 0x7FC1, 0xFFC1, 0x7F80, 0xFF80, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x8001, 0x03FF,
    0x007F,
];
/// The same for FP8 e4m3 (0x7F / 0xFF are NaN) and e5m2 (0x7C infinity, 0x7D NaN).
const SPECIAL8: [u16; 10] = [0x80, 0xFF, 0x7F, 0x01, 0x81, 0x7E, 0x7C, 0xFC, 0x7D, 0x08];
/// The same for F32: −0.0, ±infinity, quiet and signalling NaNs with payloads of both signs, the
/// smallest and largest subnormals of both signs, all ones, and words with only one 16-bit half set
/// (which a 16-bit reading would take for a zero element).
pub const SPECIAL32: [u32; 16] = [
    0x8000_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7FC0_0001,
    0xFFC0_1234,
    0x7F80_0001,
    0xFFBF_FFFF,
    0x0000_0001,
    0x8000_0001,
    0x007F_FFFF,
    0x807F_FFFF,
    0xFFFF_FFFF,
    0x7FFF_FFFF,
    0x0000_FFFF,
    0x3F80_0000,
];

/// `n` elements of `dtype` (little-endian bytes), each nonzero with probability `density`; a nonzero
/// is a special pattern (−0.0, ±inf, NaN payloads, subnormals, all ones) one time in four and uniform
/// random nonzero bits otherwise, sign bit included. For codec tests, not for sign packing.
pub fn synthetic_bits(n: usize, density: f64, dtype: DType, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64(seed ^ 0xB175_0000_0000_0002);
    let all = (1u64 << dtype.bits()) - 1;
    let mut out = Vec::with_capacity(n * dtype.bytes() as usize);
    for _ in 0..n {
        let v = if rng.unit() < density {
            let r = rng.next_u64();
            if r & 3 == 0 {
                let pick = |len: usize| ((r >> 2) % len as u64) as usize;
                match dtype.bytes() {
                    4 => SPECIAL32[pick(SPECIAL32.len())],
                    2 => SPECIAL16[pick(SPECIAL16.len())] as u32,
                    _ => SPECIAL8[pick(SPECIAL8.len())] as u32,
                }
            } else {
                ((r >> 8) & all).max(1) as u32
            }
        } else {
            0
        };
        put(&mut out, v, dtype);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::count_nonzeros;

    #[test]
    fn inverse_normal_cdf_known_points() {
        assert!(inv_norm_cdf(0.5).abs() < 1e-9);
        assert!((inv_norm_cdf(0.975) - 1.959963984540054).abs() < 1e-8);
        assert!((inv_norm_cdf(0.001) + 3.090232306167813).abs() < 1e-7);
    }

    #[test]
    fn fp8_rounding_and_saturation() {
        let e4 = |x| fp8_from_positive(x, 3, 7, 0x7E);
        let e5 = |x| fp8_from_positive(x, 2, 15, 0x7B);
        assert_eq!(e4(1.0), 0x38);
        assert_eq!(e4(448.0), 0x7E);
        assert_eq!(e4(1e6), 0x7E);
        assert_eq!(e4(2f64.powi(-9)), 0x01); // smallest subnormal
        assert_eq!(e4(2f64.powi(-10)), 0x00); // tie to even: 0
        assert_eq!(e4(1.0625), 0x38); // 1 + 1/16 is a tie between 1.0 and 1.125: even is 1.0
        assert_eq!(e4(1.1875), 0x3A); // tie between 1.125 (0x39) and 1.25 (0x3A): even
        assert_eq!(e4(0.875 * 2f64.powi(-6) + 2f64.powi(-10)), 0x08); // rounds up into the normals
        assert_eq!(e5(1.0), 0x3C);
        assert_eq!(e5(57344.0), 0x7B);
        assert_eq!(e5(1e9), 0x7B);
        assert_eq!(e5(2f64.powi(-16)), 0x01);
        // e5m2 is the top byte of f16 where no rounding is needed.
        assert_eq!(e5(3.5) as u16, half::f16::from_f32(3.5).to_bits() >> 8);
    }

    #[test]
    fn relu2_density_and_signs() {
        for dtype in DType::ALL {
            for density in [0.0, 0.01, 0.176, 0.5, 1.0] {
                let n = 20_000;
                let data = synthetic_relu2(n, density, dtype, 7);
                assert_eq!(data.len(), n * dtype.bytes() as usize);
                let measured = count_nonzeros(&data, dtype) as f64 / n as f64;
                let tol = 4.0 * (density * (1.0 - density) / n as f64).sqrt() + 1e-12;
                assert!((measured - density).abs() <= tol, "{dtype} {density}: {measured}");
                let sign = dtype.sign_bit();
                let signed = match dtype.bytes() {
                    4 => data.chunks_exact(4).any(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) & sign != 0),
                    2 => data.chunks_exact(2).any(|c| u16::from_le_bytes([c[0], c[1]]) as u32 & sign != 0),
                    _ => data.iter().any(|&b| b as u32 & sign != 0),
                };
                assert!(!signed, "{dtype}: sign bit set");
            }
        }
        assert_eq!(synthetic_relu2(1000, 0.3, DType::Bf16, 1), synthetic_relu2(1000, 0.3, DType::Bf16, 1));
        assert_ne!(synthetic_relu2(1000, 0.3, DType::Bf16, 1), synthetic_relu2(1000, 0.3, DType::Bf16, 2));
    }

    #[test]
    fn relu2_values_are_squares() {
        // Density 0.5 means μ = 0, so the median nonzero is z² with z the median of |N(0,1)| (≈ 0.674).
        let data = synthetic_relu2(40_000, 0.5, DType::F16, 3);
        let mut vals: Vec<f32> = data
            .chunks_exact(2)
            .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .filter(|&v| v != 0.0)
            .collect();
        vals.sort_by(f32::total_cmp);
        let median = vals[vals.len() / 2];
        assert!((median - 0.6745f32 * 0.6745).abs() < 0.03, "median {median}");
    }

    #[test]
    fn bits_density_and_specials() {
        let data = synthetic_bits(20_000, 0.25, DType::Bf16, 9);
        let nz = count_nonzeros(&data, DType::Bf16) as f64 / 20_000.0;
        assert!((nz - 0.25).abs() < 0.02);
        assert!(data.chunks_exact(2).any(|c| c == [0x00, 0x80]), "no -0.0");
        assert!(data.chunks_exact(2).any(|c| u16::from_le_bytes([c[0], c[1]]) & 0x8000 != 0 && c != [0, 0x80]));
        assert_eq!(count_nonzeros(&synthetic_bits(1000, 1.0, DType::E5m2, 1), DType::E5m2), 1000);
        assert_eq!(count_nonzeros(&synthetic_bits(1000, 0.0, DType::E4m3, 1), DType::E4m3), 0);
        let data = synthetic_bits(20_000, 0.25, DType::F32, 9);
        let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        for special in [0x8000_0000, 0xFFC0_1234, 0x7FC0_0001, 0x0000_0001, 0xFF80_0000, 0x7F80_0000] {
            assert!(words.contains(&special), "no {special:#x}");
        }
        assert!(words.iter().any(|&w| w > 0xFFFF && w & 0xFFFF != 0 && w >> 31 == 0), "no random 32-bit pattern");
    }

    #[test]
    fn relu2_f32_values_are_squares() {
        let data = synthetic_relu2(10_000, 0.5, DType::F32, 3);
        let mut vals: Vec<f32> =
            data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).filter(|&v| v != 0.0).collect();
        vals.sort_by(f32::total_cmp);
        let median = vals[vals.len() / 2];
        assert!((median - 0.6745f32 * 0.6745).abs() < 0.03, "median {median}");
    }
}
