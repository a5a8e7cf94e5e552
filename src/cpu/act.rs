//! ReLU / ReLU² on BF16 bits: the CPU port of `shaders/lib/act.wgsl`, the reference the fused kernels
//! are tested against. See that file for the rules (ReLU on bits, NaN handling, rounding).

pub use crate::activation::Activation;

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
        Activation::Relu2 if bf16_is_nan(r) => BF16_QNAN,
        Activation::Relu2 => {
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
        Activation::Relu2 if bf16_is_nan(r) || bf16_is_nan(g) => BF16_QNAN,
        Activation::Relu2 => f32_to_bf16(2.0 * to_f32(r) * to_f32(g)),
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
}
