// ReLU / ReLU² on BF16 bits, exact and NaN-explicit (CONVENTIONS.md "ReLU on bits").
//
// * relu: NaN passes unchanged; any other value with the sign bit set (negatives, -0.0) becomes +0.0.
//   WGSL `max` is not used: it is undefined on NaN and -0.0.
// * r² and 2·r·g are exact in f32 for BF16 inputs and rounded to BF16 to nearest even. An arithmetic
//   result that is NaN is written as the canonical quiet NaN 0x7fc0 (GPUs differ in NaN payloads).
// * A GPU may flush f32 subnormal results to zero (WGSL allows it): r² or 2·r·g below 2^-126 may then
//   differ from the CPU reference. docs/FUSED.md documents it; the tests keep away from that range.
// The CPU port is src/cpu/act.rs.

const BF16_QNAN: u32 = 0x7fc0u;

fn bf16_is_nan(x: u32) -> bool {
    return (x & 0x7f80u) == 0x7f80u && (x & 0x007fu) != 0u;
}

fn relu_bits(x: u32) -> u32 {
    if (x & 0x8000u) != 0u && !bf16_is_nan(x) {
        return 0u;
    }
    return x;
}

fn bf16_to_f32(x: u32) -> f32 {
    return bitcast<f32>(x << 16u);
}

// f32 → BF16 bits, round to nearest even; NaN → canonical quiet NaN.
fn f32_to_bf16(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    if (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u {
        return BF16_QNAN;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// The dense activation a from r: r itself (ReLU) or r² (ReLU²).
fn act_bits(r: u32, act: u32) -> u32 {
    if act == 0u {
        return r;
    }
    if bf16_is_nan(r) {
        return BF16_QNAN;
    }
    let f = bf16_to_f32(r);
    return f32_to_bf16(f * f);
}

// dL/dz from r and g = dL/da: ReLU: g where r > 0, else +0; ReLU²: 2·r·g.
fn grad_bits(r: u32, g: u32, act: u32) -> u32 {
    if act == 0u {
        let pos = r != 0u && (r & 0x8000u) == 0u && !bf16_is_nan(r);
        return select(0u, g, pos);
    }
    if bf16_is_nan(r) || bf16_is_nan(g) {
        return BF16_QNAN;
    }
    return f32_to_bf16(2.0 * bf16_to_f32(r) * bf16_to_f32(g));
}

fn relu_word(w: u32) -> u32 {
    return relu_bits(w & 0xffffu) | (relu_bits(w >> 16u) << 16u);
}

fn act_word(w: u32, act: u32) -> u32 {
    return act_bits(w & 0xffffu, act) | (act_bits(w >> 16u, act) << 16u);
}

fn grad_word(r: u32, g: u32, act: u32) -> u32 {
    return grad_bits(r & 0xffffu, g & 0xffffu, act) | (grad_bits(r >> 16u, g >> 16u, act) << 16u);
}

fn relu_vec(v: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(relu_word(v.x), relu_word(v.y), relu_word(v.z), relu_word(v.w));
}

fn act_vec(r: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(act_word(r.x, act), act_word(r.y, act), act_word(r.z, act), act_word(r.w, act));
}

fn grad_vec(r: vec4<u32>, g: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(grad_word(r.x, g.x, act), grad_word(r.y, g.y, act), grad_word(r.z, g.z, act), grad_word(r.w, g.w, act));
}
