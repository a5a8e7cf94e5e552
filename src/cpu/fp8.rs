//! FP8 storage conversions: the CPU port of `shaders/lib/fp8.wgsl`, the reference the FP8-storage
//! kernels are tested against (`docs/FUSED.md`, "FP8 storage (lossy)").
//!
//! Every conversion here is integer arithmetic on the bit patterns, so the GPU (which may flush f32
//! subnormals and whose f32 division is not correctly rounded) computes exactly the same bits:
//! * [`quantize_bf16`]: q = fp8(r · scale), the *exact* product rounded once to nearest even, saturating
//!   to the largest finite value (±inf too); NaN → [`nan_code`] (0x7F e4m3, 0x7E e5m2, sign dropped).
//! * [`dequantize_bf16`]: r' = bf16(q / scale), the exact quotient rounded once to nearest even.
//! * [`delayed_scale`]: FP8_MAX / amax correctly rounded to f32, or 1.0 when amax is not a positive
//!   normal f32 or the quotient is not a normal finite f32.
//! * [`encode`] / [`decode`]: f32 ↔ FP8 (encode rounds to nearest even and saturates; decode is exact).

use crate::format::DType;

/// Parameters of an FP8 format: mantissa bits, exponent bias, largest finite code, canonical NaN.
#[derive(Copy, Clone, Debug)]
struct Fmt {
    man: u32,
    bias: i32,
    max_code: u32,
    nan: u8,
}

fn fmt(dtype: DType) -> Fmt {
    match dtype {
        DType::E5m2 => Fmt { man: 2, bias: 15, max_code: 0x7b, nan: 0x7e },
        // E4m3 (and, defensively, anything else): OCP e4m3fn.
        _ => Fmt { man: 3, bias: 7, max_code: 0x7e, nan: 0x7f },
    }
}

/// Is `dtype` an FP8 storage format?
pub fn is_fp8(dtype: DType) -> bool {
    matches!(dtype, DType::E4m3 | DType::E5m2)
}

/// Largest finite value: 448 (e4m3fn) or 57344 (e5m2).
pub fn max_finite(dtype: DType) -> f32 {
    decode(fmt(dtype).max_code as u8, dtype)
}

/// The NaN code written for a NaN input: 0x7F (e4m3fn), 0x7E (e5m2, a quiet NaN).
pub fn nan_code(dtype: DType) -> u8 {
    fmt(dtype).nan
}

/// Is `code` a NaN of `dtype`? (e4m3fn: 0x7F/0xFF; e5m2: exponent all ones and a nonzero mantissa.)
pub fn is_nan(code: u8, dtype: DType) -> bool {
    match dtype {
        DType::E5m2 => code & 0x7c == 0x7c && code & 0x03 != 0,
        _ => code & 0x7f == 0x7f,
    }
}

/// FP8 → f32, exact (e5m2 ±inf → ±inf; NaN → f32 NaN).
pub fn decode(code: u8, dtype: DType) -> f32 {
    f32::from_bits(decode_bits(code, dtype))
}

/// FP8 → f32 bits, exact. NaN → 0x7FC00000 (sign kept).
pub fn decode_bits(code: u8, dtype: DType) -> u32 {
    let f = fmt(dtype);
    let c = code as u32;
    let sign = (c & 0x80) << 24;
    if is_nan(code, dtype) {
        return sign | 0x7fc0_0000;
    }
    let e = (c & 0x7f) >> f.man;
    let m = c & ((1 << f.man) - 1);
    if dtype == DType::E5m2 && e == 31 {
        return sign | 0x7f80_0000;
    }
    if e == 0 {
        if m == 0 {
            return sign;
        }
        // Subnormal: m · 2^(1 - bias - man); normalise.
        let l = 31 - m.leading_zeros(); // msb position of m
        let exp = 1 - f.bias - f.man as i32 + l as i32; // unbiased exponent of the leading bit
        let frac = (m ^ (1 << l)) << (23 - l);
        return sign | (((exp + 127) as u32) << 23) | frac;
    }
    let exp = e as i32 - f.bias;
    sign | (((exp + 127) as u32) << 23) | (m << (23 - f.man))
}

/// Rounds the positive value `m · 2^e` (m ≠ 0) to the FP8 code of `dtype`: nearest even, saturating to
/// the largest finite code.
fn round_to_fp8(mut m: u32, mut e: i32, f: Fmt) -> u32 {
    let mut l = 31 - m.leading_zeros() as i32;
    if l > 23 {
        // Keep 24 bits, folding the dropped ones into a sticky bit (far below the rounding position).
        let d = l - 23;
        let sticky = (m & ((1u32 << d) - 1) != 0) as u32;
        m = (m >> d) | sticky;
        e += d;
        l = 23;
    }
    let x = l + e; // unbiased exponent of the leading bit
    let emin = 1 - f.bias; // smallest normal exponent
    let sub_ulp = emin - f.man as i32; // exponent of the smallest subnormal
    if x > f.bias + 1 {
        return f.max_code; // ≥ 2^(bias+2): past every finite value
    }
    if x < sub_ulp - 1 {
        return 0; // below half the smallest subnormal
    }
    let xe = x.max(emin);
    let ulp = xe - f.man as i32;
    let sh = ulp - e; // low bits of m to drop; ≤ 24 here
    let k = if sh <= 0 {
        m << (-sh) as u32
    } else {
        let sh = sh as u32;
        let k = m >> sh;
        let rest = m & ((1u32 << sh) - 1);
        let half = 1u32 << (sh - 1);
        k + (rest > half || (rest == half && k & 1 == 1)) as u32
    };
    let code = (((xe + f.bias - 1) as u32) << f.man) + k;
    code.min(f.max_code)
}

/// f32 → FP8 of `dtype`: round to nearest even, saturate to ±largest finite (±inf too), NaN →
/// [`nan_code`]. f32 subnormal inputs are far below the smallest FP8 subnormal and give ±0.
pub fn encode(x: f32, dtype: DType) -> u8 {
    let f = fmt(dtype);
    if x.is_nan() {
        return f.nan;
    }
    let b = x.to_bits();
    let sign = ((b >> 24) & 0x80) as u8;
    let a = b & 0x7fff_ffff;
    if a == 0x7f80_0000 {
        return sign | f.max_code as u8;
    }
    let (m, e) = match a >> 23 {
        0 if a == 0 => return sign,
        0 => (a, -126 - 23),
        ex => ((a & 0x7f_ffff) | 0x80_0000, ex as i32 - 127 - 23),
    };
    sign | round_to_fp8(m, e, f) as u8
}

/// Is `s` (f32 bits) usable as a scale: a positive, normal, finite f32?
pub fn valid_scale(s: f32) -> bool {
    s.is_normal() && s > 0.0
}

/// q = fp8(r · scale) for a BF16 `r` (bits): the exact product rounded once to nearest even,
/// saturating; NaN → [`nan_code`]; ±inf → ±largest finite. `scale` must satisfy [`valid_scale`].
pub fn quantize_bf16(r: u16, scale: f32, dtype: DType) -> u8 {
    let f = fmt(dtype);
    let sign = ((r >> 8) & 0x80) as u8;
    let a = (r & 0x7fff) as u32;
    let ex = a >> 7;
    if ex == 0xff {
        return if a & 0x7f != 0 { f.nan } else { sign | f.max_code as u8 };
    }
    if a == 0 {
        return sign;
    }
    let (mr, er) = if ex == 0 { (a, -126 - 7) } else { ((a & 0x7f) | 0x80, ex as i32 - 127 - 7) };
    let s = scale.to_bits();
    let ms = (s & 0x7f_ffff) | 0x80_0000;
    let es = ((s >> 23) & 0xff) as i32 - 127 - 23;
    // mr < 2^8, ms < 2^24: the product fits in 32 bits and is exact.
    sign | round_to_fp8(mr * ms, er + es, f) as u8
}

/// `a / b` for positive normal finite f32 bit patterns, rounded to nearest even to `p` significant
/// bits (24: f32; 8: BF16 as the high half of the f32 bits) in the f32 exponent range, with
/// subnormals; overflow → +inf. Integer long division: exact on any GPU.
pub fn div_rne(a: u32, b: u32, p: u32) -> u32 {
    let ma = (a & 0x7f_ffff) | 0x80_0000;
    let mb = (b & 0x7f_ffff) | 0x80_0000;
    let mut e = ((a >> 23) & 0xff) as i32 - ((b >> 23) & 0xff) as i32 + 127; // biased exponent
    let mut r = ma;
    if r < mb {
        r <<= 1;
        e -= 1;
    }
    // p + 2 quotient bits (leading 1, p - 1 more, guard, round); the remainder is the sticky.
    let mut q = 0u32;
    for _ in 0..p + 2 {
        q <<= 1;
        if r >= mb {
            r -= mb;
            q |= 1;
        }
        r <<= 1;
    }
    let sticky = r != 0;
    let sh = if e >= 1 { 2 } else { (3 - e).min(p as i32 + 3) as u32 };
    let mut k = q >> sh;
    let rest = q & ((1u32 << sh) - 1);
    let half = 1u32 << (sh - 1);
    if rest > half || (rest == half && (sticky || k & 1 == 1)) {
        k += 1;
    }
    if e >= 1 {
        if k == 1 << p {
            k >>= 1;
            e += 1;
        }
        if e >= 255 {
            return 0x7f80_0000;
        }
        ((e as u32) << 23) | ((k & ((1 << (p - 1)) - 1)) << (24 - p))
    } else {
        k << (24 - p)
    }
}

/// r' = bf16(q / scale): the exact quotient rounded once to nearest even. NaN → BF16 quiet NaN
/// 0x7FC0; ±0 → ±0; e5m2 ±inf → ±inf. `scale` must satisfy [`valid_scale`].
pub fn dequantize_bf16(q: u8, scale: f32, dtype: DType) -> u16 {
    let sign = ((q as u16) & 0x80) << 8;
    if is_nan(q, dtype) {
        return super::act::BF16_QNAN;
    }
    let f = decode_bits(q, dtype) & 0x7fff_ffff;
    if f == 0 || f == 0x7f80_0000 {
        return sign | (f >> 16) as u16;
    }
    sign | (div_rne(f, scale.to_bits(), 8) >> 16) as u16
}

/// The delayed scale from the amax the previous compress recorded: FP8_MAX / amax correctly rounded,
/// or 1.0 when amax is not a positive normal f32 (0, subnormal, inf, NaN) or the quotient would not be
/// a normal finite f32.
pub fn delayed_scale(amax_bits: u32, dtype: DType) -> f32 {
    let amax = f32::from_bits(amax_bits);
    if !valid_scale(amax) {
        return 1.0;
    }
    let s = f32::from_bits(div_rne(max_finite(dtype).to_bits(), amax_bits, 24));
    if valid_scale(s) {
        s
    } else {
        1.0
    }
}

/// amax of BF16 bytes (already through ReLU) as f32 bits: the largest non-NaN value with the sign bit
/// clear, +inf included (what the GPU's `atomicMax` on the bits computes).
pub fn amax_bits(r: &[u8]) -> u32 {
    r.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .filter(|&x| x & 0x8000 == 0 && !super::act::bf16_is_nan(x))
        .map(|x| (x as u32) << 16)
        .max()
        .unwrap_or(0)
}

/// Quantizes BF16 bytes to FP8 bytes.
pub fn quantize(r: &[u8], scale: f32, dtype: DType) -> Vec<u8> {
    r.chunks_exact(2).map(|c| quantize_bf16(u16::from_le_bytes([c[0], c[1]]), scale, dtype)).collect()
}

/// Dequantizes FP8 bytes to BF16 bytes.
pub fn dequantize(q: &[u8], scale: f32, dtype: DType) -> Vec<u8> {
    q.iter().flat_map(|&x| dequantize_bf16(x, scale, dtype).to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes() {
        assert_eq!(max_finite(DType::E4m3), 448.0);
        assert_eq!(max_finite(DType::E5m2), 57344.0);
        assert_eq!(decode(0x01, DType::E4m3), 2f32.powi(-9));
        assert_eq!(decode(0x01, DType::E5m2), 2f32.powi(-16));
        assert_eq!(encode(1.0, DType::E4m3), 0x38);
        assert_eq!(encode(1e9, DType::E4m3), 0x7e);
        assert_eq!(encode(-f32::INFINITY, DType::E5m2), 0xfb);
        assert_eq!(encode(f32::NAN, DType::E5m2), 0x7e);
        assert_eq!(div_rne(1.0f32.to_bits(), 3.0f32.to_bits(), 24), (1.0f32 / 3.0).to_bits());
        assert_eq!(delayed_scale(448.0f32.to_bits(), DType::E4m3), 1.0);
    }
}
