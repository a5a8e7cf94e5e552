//! ReLU / ReLU² on BF16, F16 and F32 bits: the CPU port of `shaders/lib/act.wgsl`, the reference the
//! fused and dense kernels are tested against. See that file and docs/FUSED.md for the rules (ReLU on
//! bits, NaN handling, rounding).
//!
//! BF16: r² and 2·r·g are exact in f32 and rounded once to BF16. F32 and F16 follow the dense ops a
//! trainer (Burn) runs, in the same order with the same single roundings: forward a = r * r; backward
//! t = g * r, dr = t + t, dL/dz = dr where r > 0 (bits: nonzero, sign clear, not NaN), else +0.0. F16
//! math is done in f32 (the product of two F16 is exact there) and rounded once to F16, to nearest even.

pub use crate::activation::Activation;
use crate::error::{Error, Result};
use crate::format::DType;

/// Canonical BF16 quiet NaN, written for arithmetic results that are NaN.
pub const BF16_QNAN: u16 = 0x7fc0;

/// Is `x` a BF16 NaN?
pub fn bf16_is_nan(x: u16) -> bool {
    x & 0x7f80 == 0x7f80 && x & 0x007f != 0
}

/// ReLU on bits: NaN passes, anything else with the sign bit set becomes +0.0.
pub fn relu_bits(x: u16) -> u16 {
    if x & 0x8000 != 0 && !bf16_is_nan(x) {
        0
    } else {
        x
    }
}

fn to_f32(x: u16) -> f32 {
    f32::from_bits((x as u32) << 16)
}

/// f32 → BF16, round to nearest even, NaN → [`BF16_QNAN`].
pub fn f32_to_bf16(f: f32) -> u16 {
    if f.is_nan() {
        return BF16_QNAN;
    }
    let b = f.to_bits();
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// a from r.
pub fn act_bits(r: u16, act: Activation) -> u16 {
    match act {
        Activation::Relu => r,
        Activation::Relu2 | Activation::Relu2Stepwise if bf16_is_nan(r) => BF16_QNAN,
        Activation::Relu2 | Activation::Relu2Stepwise => {
            let f = to_f32(r);
            f32_to_bf16(f * f)
        }
    }
}

/// dL/dz from r and g = dL/da.
pub fn grad_bits(r: u16, g: u16, act: Activation) -> u16 {
    match act {
        Activation::Relu => {
            if r != 0 && r & 0x8000 == 0 && !bf16_is_nan(r) {
                g
            } else {
                0
            }
        }
        // BF16 products are exact in f32: one rounding either way (both ReLU² variants).
        Activation::Relu2 | Activation::Relu2Stepwise if bf16_is_nan(r) || bf16_is_nan(g) => BF16_QNAN,
        Activation::Relu2 | Activation::Relu2Stepwise => f32_to_bf16(2.0 * to_f32(r) * to_f32(g)),
    }
}

fn u16s(b: &[u8]) -> impl Iterator<Item = u16> + '_ {
    b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]))
}

/// Forward on little-endian BF16 bytes: `(r, a)`.
pub fn forward(z: &[u8], act: Activation) -> (Vec<u8>, Vec<u8>) {
    let r: Vec<u16> = u16s(z).map(relu_bits).collect();
    let a: Vec<u8> = r.iter().flat_map(|&x| act_bits(x, act).to_le_bytes()).collect();
    (r.iter().flat_map(|x| x.to_le_bytes()).collect(), a)
}

/// Backward on little-endian BF16 bytes: `(dz, a)`.
pub fn backward(r: &[u8], g: &[u8], act: Activation) -> (Vec<u8>, Vec<u8>) {
    let dz = u16s(r).zip(u16s(g)).flat_map(|(r, g)| grad_bits(r, g, act).to_le_bytes()).collect();
    let a = u16s(r).flat_map(|r| act_bits(r, act).to_le_bytes()).collect();
    (dz, a)
}

/// Canonical F32 quiet NaN, written for arithmetic results that are NaN.
pub const F32_QNAN: u32 = 0x7fc0_0000;
/// Canonical F16 quiet NaN, written for arithmetic results that are NaN.
pub const F16_QNAN: u16 = 0x7e00;

/// Is `x` an F32 NaN?
pub fn f32_is_nan(x: u32) -> bool {
    x & 0x7fff_ffff > 0x7f80_0000
}

/// Is `x` an F16 NaN?
pub fn f16_is_nan(x: u16) -> bool {
    x & 0x7fff > 0x7c00
}

/// ReLU on F32 bits: NaN passes, anything else with the sign bit set becomes +0.0.
pub fn relu_bits32(x: u32) -> u32 {
    if x & 0x8000_0000 != 0 && !f32_is_nan(x) {
        0
    } else {
        x
    }
}

/// ReLU on F16 bits: NaN passes, anything else with the sign bit set becomes +0.0.
pub fn relu_bits_f16(x: u16) -> u16 {
    if x & 0x8000 != 0 && !f16_is_nan(x) {
        0
    } else {
        x
    }
}

/// "z > 0" of relu's backward, on the stored r = relu(z): r's bits are a positive nonzero value (not
/// NaN, not ±0).
fn f32_pos(r: u32) -> bool {
    r != 0 && r & 0x8000_0000 == 0 && !f32_is_nan(r)
}

fn f16_pos(r: u16) -> bool {
    r != 0 && r & 0x8000 == 0 && !f16_is_nan(r)
}

fn canon32(x: f32) -> u32 {
    if x.is_nan() {
        F32_QNAN
    } else {
        x.to_bits()
    }
}

/// f32 → F16, round to nearest even (overflow to ±inf, F16 subnormals), NaN → [`F16_QNAN`].
pub fn f32_to_f16(f: f32) -> u16 {
    if f.is_nan() {
        F16_QNAN
    } else {
        half::f16::from_f32(f).to_bits()
    }
}

fn f16_to_f32(x: u16) -> f32 {
    half::f16::from_bits(x).to_f32()
}

/// F32 a from r: r (ReLU) or r * r (ReLU², one f32 rounding); a NaN result is [`F32_QNAN`].
pub fn act_bits32(r: u32, act: Activation) -> u32 {
    match act {
        Activation::Relu => r,
        Activation::Relu2 | Activation::Relu2Stepwise => {
            let f = f32::from_bits(r);
            canon32(f * f)
        }
    }
}

/// F32 dL/dz from r and g = dL/da. ReLU: g where r > 0, else +0. ReLU²: t = g * r, dr = t + t (each
/// one f32 rounding; t + t is exact), dL/dz = dr where r > 0, else +0; a NaN dr is [`F32_QNAN`].
pub fn grad_bits32(r: u32, g: u32, act: Activation) -> u32 {
    if !f32_pos(r) {
        return 0;
    }
    match act {
        Activation::Relu => g,
        Activation::Relu2 | Activation::Relu2Stepwise => {
            let t = f32::from_bits(g) * f32::from_bits(r);
            canon32(t + t)
        }
    }
}

/// F16 a from r: r (ReLU) or f16(r * r) (ReLU²: the f32 product is exact, one rounding to F16); a NaN
/// result is [`F16_QNAN`].
pub fn act_bits_f16(r: u16, act: Activation) -> u16 {
    match act {
        Activation::Relu => r,
        Activation::Relu2 | Activation::Relu2Stepwise => {
            let f = f16_to_f32(r);
            f32_to_f16(f * f)
        }
    }
}

/// F16 dL/dz from r and g: as [`grad_bits32`], but dr = f16(2 · g · r) with one rounding: g · r and its
/// double are exact in f32, and Burn 0.22.1's fused element-wise kernel (its default configuration)
/// evaluates mul's backward, the gradient sum and `relu_backward` in one kernel without rounding g · r to
/// F16 in between on lavapipe (measured: rounding t first differed from Burn there in dW₁,
/// `docs/FUSED.md`). [`Activation::Relu2Stepwise`] rounds t = f16(g · r) first and doubles it (exact, or
/// ∞), as IEEE F16 arithmetic and Burn's backward on the H200 do.
pub fn grad_bits_f16(r: u16, g: u16, act: Activation) -> u16 {
    if !f16_pos(r) {
        return 0;
    }
    match act {
        Activation::Relu => g,
        Activation::Relu2 => f32_to_f16(2.0 * (f16_to_f32(g) * f16_to_f32(r))),
        // A NaN t (g = ±0, r = ∞) is F16_QNAN, which f16_to_f32 reads as a NaN again.
        Activation::Relu2Stepwise => f32_to_f16(2.0 * f16_to_f32(f32_to_f16(f16_to_f32(g) * f16_to_f32(r)))),
    }
}

fn unsupported(dtype: DType) -> Error {
    Error::InvalidArgument(format!("the fused and dense activations take BF16, F16 or F32, not {dtype}"))
}

fn u32s(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Forward on little-endian bytes of `dtype` (BF16, F16 or F32): `(r, a)`.
pub fn forward_dtype(z: &[u8], dtype: DType, act: Activation) -> Result<(Vec<u8>, Vec<u8>)> {
    match dtype {
        DType::Bf16 => Ok(forward(z, act)),
        DType::F16 => {
            let r: Vec<u16> = u16s(z).map(relu_bits_f16).collect();
            let a = r.iter().flat_map(|&x| act_bits_f16(x, act).to_le_bytes()).collect();
            Ok((r.iter().flat_map(|x| x.to_le_bytes()).collect(), a))
        }
        DType::F32 => {
            let r: Vec<u32> = u32s(z).map(relu_bits32).collect();
            let a = r.iter().flat_map(|&x| act_bits32(x, act).to_le_bytes()).collect();
            Ok((r.iter().flat_map(|x| x.to_le_bytes()).collect(), a))
        }
        _ => Err(unsupported(dtype)),
    }
}

/// Backward on little-endian bytes of `dtype` (BF16, F16 or F32): `(dz, a)`.
pub fn backward_dtype(r: &[u8], g: &[u8], dtype: DType, act: Activation) -> Result<(Vec<u8>, Vec<u8>)> {
    match dtype {
        DType::Bf16 => Ok(backward(r, g, act)),
        DType::F16 => {
            let dz = u16s(r).zip(u16s(g)).flat_map(|(r, g)| grad_bits_f16(r, g, act).to_le_bytes()).collect();
            let a = u16s(r).flat_map(|r| act_bits_f16(r, act).to_le_bytes()).collect();
            Ok((dz, a))
        }
        DType::F32 => {
            let dz = u32s(r).zip(u32s(g)).flat_map(|(r, g)| grad_bits32(r, g, act).to_le_bytes()).collect();
            let a = u32s(r).flat_map(|r| act_bits32(r, act).to_le_bytes()).collect();
            Ok((dz, a))
        }
        _ => Err(unsupported(dtype)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relu_on_bits() {
        assert_eq!(relu_bits(0x8000), 0); // -0.0
        assert_eq!(relu_bits(0xbf80), 0); // -1.0
        assert_eq!(relu_bits(0xffc1), 0xffc1); // NaN with sign: propagates
        assert_eq!(relu_bits(0x3f80), 0x3f80);
        assert_eq!(relu_bits(0xff80), 0); // -inf
    }

    #[test]
    fn square_and_grad_round_to_nearest_even() {
        // 1.5² = 2.25 exactly representable.
        assert_eq!(act_bits(0x3fc0, Activation::Relu2), 0x4010);
        // (1 + 2^-7)² = 1 + 2^-6 + 2^-14: rounds to 1 + 2^-6.
        assert_eq!(act_bits(0x3f81, Activation::Relu2), 0x3f82);
        assert_eq!(grad_bits(0x3f80, 0x4000, Activation::Relu2), 0x4080); // 2·1·2 = 4
        assert_eq!(grad_bits(0, 0x4000, Activation::Relu), 0);
        assert_eq!(grad_bits(0x3f80, 0xc000, Activation::Relu), 0xc000);
        assert_eq!(act_bits(0x7fc1, Activation::Relu2), BF16_QNAN);
    }

    /// Random bits with many special values mixed in.
    fn bits32(seed: &mut u64) -> u32 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        const SPECIAL: [u32; 14] = [
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0xffc1_2345,
            0x0000_0001,
            0x807f_ffff,
            0x7f7f_ffff,
            0x5f80_0000, // 2^64: its square overflows
            0x1f80_0000, // 2^-64: its square is subnormal
            0x3f80_0000,
            0x4000_0000,
        ];
        match *seed % 4 {
            0 => SPECIAL[(*seed >> 8) as usize % SPECIAL.len()],
            _ => (*seed >> 16) as u32,
        }
    }

    fn bits16(seed: &mut u64) -> u16 {
        const SPECIAL: [u16; 14] =
            [0, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd23, 0x0001, 0x83ff, 0x7bff, 0x5c00, 0x0400, 0x3c00, 0x2000];
        let w = bits32(seed);
        match w % 4 {
            0 => SPECIAL[(w >> 8) as usize % SPECIAL.len()],
            _ => (w >> 16) as u16,
        }
    }

    /// Equal bits, or both NaN (the port canonicalizes NaN results; the dense ops' payloads vary).
    fn same32(a: u32, b: u32) -> bool {
        a == b || (f32_is_nan(a) && f32_is_nan(b))
    }

    #[test]
    fn f32_port_equals_the_dense_ops() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            let (z, g) = (bits32(&mut seed), bits32(&mut seed));
            // Burn: relu = mask_fill(z <= 0, 0) (the port's ReLU on bits: a NaN passes, -0.0 -> +0.0).
            let zf = f32::from_bits(z);
            let r = if zf <= 0.0 { 0.0f32 } else { zf };
            assert_eq!(relu_bits32(z), r.to_bits(), "relu {z:#x}");
            let rb = relu_bits32(z);
            assert!(same32(act_bits32(rb, Activation::Relu2), (r * r).to_bits()), "r² {z:#x}");
            assert_eq!(act_bits32(rb, Activation::Relu), r.to_bits());
            // Backward: t = g * r, dr = t + t, dz = dr where r > 0 else 0 (r NaN: 0, see docs/FUSED.md).
            let gf = f32::from_bits(g);
            let t = gf * r;
            let dr = t + t;
            let pos = r > 0.0;
            let want2 = if pos { dr.to_bits() } else { 0 };
            assert!(same32(grad_bits32(rb, g, Activation::Relu2), want2), "grad {z:#x} {g:#x}");
            let want1 = if pos { g } else { 0 };
            assert_eq!(grad_bits32(rb, g, Activation::Relu), want1, "relu grad {z:#x} {g:#x}");
        }
    }

    #[test]
    fn f16_port_equals_the_dense_ops() {
        use half::f16;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            let (z, g) = (bits16(&mut seed), bits16(&mut seed));
            let zf = f16::from_bits(z);
            let r = if zf <= f16::ZERO { f16::ZERO } else { zf };
            assert_eq!(relu_bits_f16(z), r.to_bits(), "relu {z:#x}");
            let rb = relu_bits_f16(z);
            // half's f16 `*` rounds the result once to F16.
            let sq = r * r;
            let a = act_bits_f16(rb, Activation::Relu2);
            assert!(a == sq.to_bits() || (f16_is_nan(a) && sq.is_nan()), "r² {z:#x}");
            // dr = f16(2·g·r), one rounding (Burn's fused kernel; the f32 value is exact).
            let gf = f16::from_bits(g);
            let dr = f16::from_f32(2.0 * (gf.to_f32() * r.to_f32()));
            let want = if r > f16::ZERO { dr.to_bits() } else { 0 };
            let got = grad_bits_f16(rb, g, Activation::Relu2);
            assert!(got == want || (f16_is_nan(got) && f16_is_nan(want)), "grad {z:#x} {g:#x}: {got:#x} {want:#x}");
            // Relu2Stepwise: half's own F16 arithmetic, t = g * r; dr = t + t, each rounded.
            let t = gf * r;
            let want = if r > f16::ZERO { (t + t).to_bits() } else { 0 };
            let got = grad_bits_f16(rb, g, Activation::Relu2Stepwise);
            assert!(got == want || (f16_is_nan(got) && f16_is_nan(want)), "stepwise {z:#x} {g:#x}: {got:#x} {want:#x}");
            assert_eq!(act_bits_f16(rb, Activation::Relu2Stepwise), a);
            assert_eq!(grad_bits_f16(rb, g, Activation::Relu), if r > f16::ZERO { g } else { 0 });
        }
    }

    #[test]
    fn f32_and_f16_special_values() {
        // r² overflows to +inf; 0 · inf in t = g · r is NaN (masked where r = 0).
        assert_eq!(act_bits32(0x5f80_0000, Activation::Relu2), 0x7f80_0000);
        assert_eq!(grad_bits32(0, 0x7f80_0000, Activation::Relu2), 0);
        assert_eq!(grad_bits32(0x7f80_0000, 0, Activation::Relu2), F32_QNAN);
        assert_eq!(grad_bits32(0x7fc1_0000, 0x3f80_0000, Activation::Relu2), 0); // r NaN: not > 0
        assert_eq!(grad_bits32(0x3f80_0000, 0xffc1_0000, Activation::Relu2), F32_QNAN);
        assert_eq!(grad_bits32(0x3f80_0000, 0xffc1_0000, Activation::Relu), 0xffc1_0000); // g passes as bits
        assert_eq!(grad_bits32(0x3f80_0000, 0x8000_0000, Activation::Relu2), 0x8000_0000); // -0 · 1 · 2
        assert_eq!(act_bits32(0x7fc1_2345, Activation::Relu2), F32_QNAN);
        assert_eq!(act_bits32(0x7fc1_2345, Activation::Relu), 0x7fc1_2345);
        // F16: 256² = 65536 overflows; 255² = 65025 rounds to 65024 (0x7bf0).
        assert_eq!(act_bits_f16(0x5c00, Activation::Relu2), 0x7c00);
        assert_eq!(act_bits_f16(0x5bf8, Activation::Relu2), 0x7bf0);
        // 2^-7 squared is 2^-14 (smallest normal); 2^-8 squared is 2^-16, a subnormal (0x0100).
        assert_eq!(act_bits_f16(0x2000, Activation::Relu2), 0x0400);
        assert_eq!(act_bits_f16(0x1c00, Activation::Relu2), 0x0100);
        // t = 32768 · 1 is finite, t + t = 65536 overflows.
        assert_eq!(grad_bits_f16(0x7800, 0x3c00, Activation::Relu2), 0x7c00);
        assert_eq!(grad_bits_f16(0x7c00, 0, Activation::Relu2), F16_QNAN);
        assert_eq!(grad_bits_f16(0x7e01, 0x3c00, Activation::Relu2), 0);
        // g · r = 1.375 · 2^-24 (r = 2^-12, g = 1.375 · 2^-12): one rounding of 2.75 · 2^-24 gives 3 · 2^-24;
        // t rounded first gives 2^-24, doubled 2 · 2^-24 — the probe bitsparse-burn runs on Burn.
        assert_eq!(grad_bits_f16(0x0c00, 0x0d80, Activation::Relu2), 0x0003);
        assert_eq!(grad_bits_f16(0x0c00, 0x0d80, Activation::Relu2Stepwise), 0x0002);
        assert_eq!(grad_bits_f16(0x7800, 0x3c00, Activation::Relu2Stepwise), 0x7c00);
        assert_eq!(grad_bits_f16(0x7c00, 0, Activation::Relu2Stepwise), F16_QNAN);
        // BF16 and F32: both variants alike.
        assert_eq!(grad_bits(0x0080, 0x0080, Activation::Relu2Stepwise), grad_bits(0x0080, 0x0080, Activation::Relu2));
        assert_eq!(
            grad_bits32(0x3f80_0001, 0x3f80_0003, Activation::Relu2Stepwise),
            grad_bits32(0x3f80_0001, 0x3f80_0003, Activation::Relu2)
        );
        assert!(forward_dtype(&[0; 4], DType::E4m3, Activation::Relu).is_err());
    }
}
