// FP8 storage conversions (docs/FUSED.md "FP8 storage (lossy)"); CPU port: src/cpu/fp8.rs.
//
// Integer arithmetic on bit patterns only, so every GPU computes the CPU's bits: WGSL lets a GPU flush
// f32 subnormals and does not round f32 division correctly, and neither matters here.
// * quantize: q = fp8(r * scale), the exact product (8 x 24 bits fits a u32) rounded once to nearest
//   even, saturating to the largest finite code (inf too); NaN -> 0x7f (e4m3fn) / 0x7e (e5m2).
// * dequantize: r' = bf16(q / scale), the exact quotient (long division) rounded once to nearest even.
// * delayed scale: FP8_MAX / amax correctly rounded (24-bit long division), 1.0 when unusable.
// `fmt`: 0 = e4m3fn, 1 = e5m2.

fn fp8_man(fmt: u32) -> u32 { return select(3u, 2u, fmt == 1u); }
fn fp8_bias(fmt: u32) -> i32 { return select(7, 15, fmt == 1u); }
fn fp8_max_code(fmt: u32) -> u32 { return select(0x7eu, 0x7bu, fmt == 1u); }
fn fp8_nan_code(fmt: u32) -> u32 { return select(0x7fu, 0x7eu, fmt == 1u); }
// Largest finite value as f32 bits: 448 or 57344.
fn fp8_max_f32(fmt: u32) -> u32 { return select(0x43e00000u, 0x47600000u, fmt == 1u); }

fn fp8_is_nan(c: u32, fmt: u32) -> bool {
    if fmt == 1u {
        return (c & 0x7cu) == 0x7cu && (c & 3u) != 0u;
    }
    return (c & 0x7fu) == 0x7fu;
}

// Rounds the positive value m * 2^e (m != 0) to an FP8 code: nearest even, saturating.
fn fp8_round(m_in: u32, e_in: i32, fmt: u32) -> u32 {
    var m = m_in;
    var e = e_in;
    var l = i32(firstLeadingBit(m));
    if l > 23 {
        // Keep 24 bits; the dropped ones become a sticky bit far below the rounding position.
        let d = u32(l - 23);
        let sticky = select(0u, 1u, (m & ((1u << d) - 1u)) != 0u);
        m = (m >> d) | sticky;
        e += i32(d);
        l = 23;
    }
    let man = fp8_man(fmt);
    let bias = fp8_bias(fmt);
    let x = l + e;
    let emin = 1 - bias;
    let sub_ulp = emin - i32(man);
    if x > bias + 1 {
        return fp8_max_code(fmt);
    }
    if x < sub_ulp - 1 {
        return 0u;
    }
    let xe = max(x, emin);
    let sh = xe - i32(man) - e; // <= 24
    var k: u32;
    if sh <= 0 {
        k = m << u32(-sh);
    } else {
        let s = u32(sh);
        k = m >> s;
        let rest = m & ((1u << s) - 1u);
        let half = 1u << (s - 1u);
        if rest > half || (rest == half && (k & 1u) == 1u) {
            k += 1u;
        }
    }
    let code = (u32(xe + bias - 1) << man) + k;
    return min(code, fp8_max_code(fmt));
}

// q = fp8(r * scale) for BF16 bits r; `scale` is a positive normal finite f32 (bits).
fn fp8_quantize_bf16(r: u32, scale: u32, fmt: u32) -> u32 {
    let sign = (r >> 8u) & 0x80u;
    let a = r & 0x7fffu;
    let ex = a >> 7u;
    if ex == 0xffu {
        return select(sign | fp8_max_code(fmt), fp8_nan_code(fmt), (a & 0x7fu) != 0u);
    }
    if a == 0u {
        return sign;
    }
    var mr = a;
    var er = -133;
    if ex != 0u {
        mr = (a & 0x7fu) | 0x80u;
        er = i32(ex) - 134;
    }
    let ms = (scale & 0x7fffffu) | 0x800000u;
    let es = i32((scale >> 23u) & 0xffu) - 150;
    return sign | fp8_round(mr * ms, er + es, fmt);
}

// FP8 code -> f32 bits, exact (NaN -> 0x7fc00000 with the sign; e5m2 inf -> inf).
fn fp8_decode_bits(c: u32, fmt: u32) -> u32 {
    let sign = (c & 0x80u) << 24u;
    if fp8_is_nan(c, fmt) {
        return sign | 0x7fc00000u;
    }
    let man = fp8_man(fmt);
    let bias = fp8_bias(fmt);
    let e = (c & 0x7fu) >> man;
    let m = c & ((1u << man) - 1u);
    if fmt == 1u && e == 31u {
        return sign | 0x7f800000u;
    }
    if e == 0u {
        if m == 0u {
            return sign;
        }
        let l = firstLeadingBit(m);
        let exp = 1 - bias - i32(man) + i32(l);
        return sign | (u32(exp + 127) << 23u) | ((m ^ (1u << l)) << (23u - l));
    }
    return sign | (u32(i32(e) - bias + 127) << 23u) | (m << (23u - man));
}

// a / b for positive normal finite f32 bits, rounded to nearest even to `p` significant bits in the f32
// exponent range (subnormals kept, overflow -> inf). p = 24: f32; p = 8: BF16 in the high half.
fn div_rne(a: u32, b: u32, p: u32) -> u32 {
    let ma = (a & 0x7fffffu) | 0x800000u;
    let mb = (b & 0x7fffffu) | 0x800000u;
    var e = i32((a >> 23u) & 0xffu) - i32((b >> 23u) & 0xffu) + 127;
    var r = ma;
    if r < mb {
        r <<= 1u;
        e -= 1;
    }
    var q = 0u;
    for (var i = 0u; i < p + 2u; i++) {
        q <<= 1u;
        if r >= mb {
            r -= mb;
            q |= 1u;
        }
        r <<= 1u;
    }
    let sticky = r != 0u;
    var sh = 2u;
    if e < 1 {
        sh = u32(min(3 - e, i32(p) + 3));
    }
    var k = q >> sh;
    let rest = q & ((1u << sh) - 1u);
    let half = 1u << (sh - 1u);
    if rest > half || (rest == half && (sticky || (k & 1u) == 1u)) {
        k += 1u;
    }
    if e >= 1 {
        if k == (1u << p) {
            k >>= 1u;
            e += 1;
        }
        if e >= 255 {
            return 0x7f800000u;
        }
        return (u32(e) << 23u) | ((k & ((1u << (p - 1u)) - 1u)) << (24u - p));
    }
    return k << (24u - p);
}

// r' = bf16(q / scale): NaN -> 0x7fc0, +-0 -> +-0, e5m2 inf -> inf.
fn fp8_dequantize_bf16(q: u32, scale: u32, fmt: u32) -> u32 {
    let sign = (q & 0x80u) << 8u;
    if fp8_is_nan(q, fmt) {
        return 0x7fc0u;
    }
    let f = fp8_decode_bits(q, fmt) & 0x7fffffffu;
    if f == 0u || f == 0x7f800000u {
        return sign | (f >> 16u);
    }
    return sign | (div_rne(f, scale, 8u) >> 16u);
}

fn fp8_valid_scale(s: u32) -> bool {
    let ex = (s >> 23u) & 0xffu;
    return (s & 0x80000000u) == 0u && ex != 0u && ex != 0xffu;
}

// The delayed scale (f32 bits) from the previous compress's amax (f32 bits).
fn fp8_delayed_scale(amax: u32, fmt: u32) -> u32 {
    if !fp8_valid_scale(amax) {
        return 0x3f800000u;
    }
    let s = div_rne(fp8_max_f32(fmt), amax, 24u);
    return select(0x3f800000u, s, fp8_valid_scale(s));
}

// Per 16-bit lane of a vec4 of BF16 words: q in the lane's low byte.
fn fp8_quant_word(w: u32, scale: u32, fmt: u32) -> u32 {
    return fp8_quantize_bf16(w & 0xffffu, scale, fmt) | (fp8_quantize_bf16(w >> 16u, scale, fmt) << 16u);
}
fn fp8_quant_vec(v: vec4<u32>, scale: u32, fmt: u32) -> vec4<u32> {
    return vec4<u32>(fp8_quant_word(v.x, scale, fmt), fp8_quant_word(v.y, scale, fmt),
                     fp8_quant_word(v.z, scale, fmt), fp8_quant_word(v.w, scale, fmt));
}
fn fp8_dequant_lane(c: u32, scale: u32, fmt: u32) -> u32 {
    if c == 0u {
        return 0u;
    }
    return fp8_dequantize_bf16(c, scale, fmt);
}
// The non-NaN maximum of the BF16 lanes with the sign bit clear, as f32 bits (the amax of relu(z)).
fn amax_word(w: u32) -> u32 {
    var m = 0u;
    let lo = w & 0xffffu;
    let hi = w >> 16u;
    if (lo & 0x8000u) == 0u && !((lo & 0x7f80u) == 0x7f80u && (lo & 0x7fu) != 0u) { m = lo; }
    if (hi & 0x8000u) == 0u && !((hi & 0x7f80u) == 0x7f80u && (hi & 0x7fu) != 0u) { m = max(m, hi); }
    return m << 16u;
}
fn amax_vec(v: vec4<u32>) -> u32 {
    return max(max(amax_word(v.x), amax_word(v.y)), max(amax_word(v.z), amax_word(v.w)));
}
