// ReLU / ReLU² on BF16 bits, exact and NaN-explicit (docs/CONVENTIONS.md "ReLU on bits").
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

// ---- the same functions on a word of two BF16 values at once (what the codec kernels use) ----
// Bit 15 / bit 31 of a "flags" word stand for the low / high value. The per-value functions above stay
// the definition (and the demo trainer's); these compute the same bits with fewer integer operations,
// which the plain and fused kernels are bound by on the H200 (docs/PERFORMANCE.md).

const SIGNS: u32 = 0x80008000u;
const MAGS: u32 = 0x7fff7fffu;

// Flags of the NaN values of `w`: |x| > 0x7f80 sets bit 15 of its half (no carry crosses halves:
// 0x7fff + 0x7f < 0x10000).
fn nan_flags(w: u32) -> u32 {
    return ((w & MAGS) + 0x007f007fu) & SIGNS;
}

// The halves whose flag is set, as a mask of 0xffff per half.
fn halves(flags: u32) -> u32 {
    return (flags >> 15u) * 0xffffu;
}

// f32 bits → BF16 bits in the high half (round to nearest even), for a non-NaN `b`.
fn rne_high(b: u32) -> u32 {
    return (b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u;
}

// f32 bits with a NaN (either sign, any payload) replaced by the canonical quiet NaN 0x7fc00000, which
// rne_high turns into the canonical BF16 NaN 0x7fc0.
fn nan_canon32(b: u32) -> u32 {
    return select(b, 0x7fc00000u, (b & 0x7fffffffu) > 0x7f800000u);
}

// Two f32 results (bits), each rounded to BF16 (nearest even) with a NaN made the canonical 0x7fc0: the
// low one into the word's low half, the high one into its high half.
fn bf16_pair(lo: u32, hi: u32) -> u32 {
    return (rne_high(nan_canon32(lo)) >> 16u) | rne_high(nan_canon32(hi));
}

// The halves relu_bits zeroes, as a mask of 0xffff per half: sign bit set and not a NaN (`nan`: the
// NaN flags of `w`).
fn relu_zeroed(w: u32, nan: u32) -> u32 {
    return halves(w & SIGNS & ~nan);
}

// relu_bits on both halves: a value with its sign bit set becomes +0 unless it is a NaN.
fn relu_word(w: u32) -> u32 {
    return w & ~relu_zeroed(w, nan_flags(w));
}

// act_bits on both halves. r² of a non-NaN r is never NaN, so only NaN inputs need the canonical NaN.
fn act_word(w: u32, act: u32) -> u32 {
    if act == 0u {
        return w;
    }
    let lo = bitcast<f32>(w << 16u);
    let hi = bitcast<f32>(w & 0xffff0000u);
    let sq = (rne_high(bitcast<u32>(lo * lo)) >> 16u) | rne_high(bitcast<u32>(hi * hi));
    let nan = halves(nan_flags(w));
    return (sq & ~nan) | (0x7fc07fc0u & nan);
}

// Which form the BF16 ReLU² forward's square takes (relu_act_word; the fused and the plain forward): 0,
// its NaNs from the product, canonical before rounding (b3614a5); 1, NaN inputs flagged and the rounded
// word masked (the form before it). The same bits either way, and the same driver builds each form with
// the same registers and code size on the H100 and the H200 (fused forward: 37, 21,248 B; 35, 20,736 B),
// yet each card is faster with a different one (201M BF16, unordered, ms at ρ = 0.5 / 0.176 / 0.05,
// interleaved runs in one call each; docs/PERFORMANCE.md, fortieth session): on an H200 the flags form
// takes the fused forward 0.3493 / 0.2990 / 0.2886 -> 0.3325 / 0.2823 / 0.2719 (-4.8 / -5.6 / -5.8 %)
// and the plain forward 0.2302 / 0.2297 / 0.2294 -> 0.2214 / 0.2210 / 0.2208 (-3.8 %; one run's ρ = 0.5
// rows, 5-9 % slow in every kernel, left out); on an H100 it takes the fused forward 0.4271 / 0.3645 /
// 0.3457 -> 0.4608 / 0.3944 / 0.3704 (+7.9 / +8.2 / +7.1 %), the plain forward unchanged (memory-bound
// there). The host sets 1 on an H200 and 0 elsewhere (`kernels::square_nan_flags`);
// `compress.SQUARE_NAN_FLAGS` and `forward.SQUARE_NAN_FLAGS` override it.
override SQUARE_NAN_FLAGS: u32 = 0u;

// relu_word and act_word of it at once (the forward's first step): the NaN flags are found once,
// and the square is taken of z itself, a negative z's square masked to +0 with the relu's own mask.
// The same bits as act_word(relu_word(z)), with fewer integer instructions.
struct ReluActWord {
    r: u32,
    a: u32,
}

fn relu_act_word(z: u32, act: u32) -> ReluActWord {
    let nan = nan_flags(z);
    let neg = relu_zeroed(z, nan);
    let r = z & ~neg;
    if act == 0u {
        return ReluActWord(r, r);
    }
    // The square of z itself, a negative z's square masked to +0 with the relu's own mask. Two forms,
    // the same bits: SQUARE_NAN_FLAGS (above) says which one this pipeline takes.
    let lo = bitcast<f32>(z << 16u);
    let hi = bitcast<f32>(z & 0xffff0000u);
    if SQUARE_NAN_FLAGS != 0u {
        // NaN inputs flagged and the rounded word masked: the form before b3614a5.
        let sq = (rne_high(bitcast<u32>(lo * lo)) >> 16u) | rne_high(bitcast<u32>(hi * hi));
        let nanh = halves(nan);
        return ReluActWord(r, (sq & ~(nanh | neg)) | (0x7fc07fc0u & nanh));
    }
    // A NaN z squares to a NaN, replaced by the canonical f32 quiet NaN before rounding as in grad_word
    // (the NaN flags are the relu's only). The squares' NaNs made canonical by one unsigned min instead
    // of bf16_pair's compare and select (a square's sign bit is set only for a NaN) was +7.2 / +7.9 /
    // +6.5 % on an H100 (three interleaved pairs; benches/results/experiments/thirtysixth).
    return ReluActWord(r, bf16_pair(bitcast<u32>(lo * lo), bitcast<u32>(hi * hi)) & ~neg);
}

// grad_bits on both halves.
fn grad_word(r: u32, g: u32, act: u32) -> u32 {
    if act == 0u {
        // g where r > 0: magnitude nonzero, sign clear, not NaN.
        let nonzero = ((r & MAGS) + MAGS) & SIGNS;
        return g & halves(nonzero & ~r & ~nan_flags(r));
    }
    // 2·r·g, evaluated as (2·r)·g like grad_bits; it is NaN for 0·∞ as well as for NaN inputs (the
    // multiply makes a NaN of any NaN operand), so a NaN product, replaced by the canonical f32 quiet
    // NaN, is the only case to mend: 0x7fc00000 rounds to 0x7fc0. The products' NaNs alone, not the
    // inputs' flags as well, and no mask over the rounded word: fewer integer instructions, and the fused
    // backward is bound by its instructions, not its bytes (it took the same time on an H100 as on the
    // H200). On the H200 (201M BF16, ρ = 0.5 / 0.176 / 0.05, one call, benches/results/ab-thirtythird):
    // the fused backward, dL/dz only, 0.3126 / 0.3105 / 0.3085 -> 0.2824 / 0.2769 / 0.2755 ms (-9.7 /
    // -10.8 / -10.7 %), with `a` 0.3985 / 0.3954 / 0.3933 -> 0.3699 / 0.3603 / 0.3576 (-7 to -9 %); the
    // plain backward (memory-bound) unchanged.
    let p_lo = bitcast<u32>(2.0 * bitcast<f32>(r << 16u) * bitcast<f32>(g << 16u));
    let p_hi = bitcast<u32>(2.0 * bitcast<f32>(r & 0xffff0000u) * bitcast<f32>(g & 0xffff0000u));
    return bf16_pair(p_lo, p_hi);
}

// relu(z) and the activation of it, as the forward kernels need them.
struct ReluAct {
    r: vec4<u32>,
    a: vec4<u32>,
}

// The vec4 functions the codec and plain kernels call. BF16 (below, the default) works on words of two
// values; BITS32 (F32) and ACT_F16 (F16) select the functions of those dtypes, defined after it.
#if BITS32
fn relu_vec(v: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(relu32(v.x), relu32(v.y), relu32(v.z), relu32(v.w));
}

fn act_vec(r: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(act32(r.x, act), act32(r.y, act), act32(r.z, act), act32(r.w, act));
}

fn relu_act_vec(z: vec4<u32>, act: u32) -> ReluAct {
    let r = relu_vec(z);
    return ReluAct(r, act_vec(r, act));
}

fn grad_vec(r: vec4<u32>, g: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(grad32(r.x, g.x, act), grad32(r.y, g.y, act), grad32(r.z, g.z, act), grad32(r.w, g.w, act));
}
#else
#if ACT_F16
fn relu_vec(v: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(relu_word_f16(v.x), relu_word_f16(v.y), relu_word_f16(v.z), relu_word_f16(v.w));
}

fn act_vec(r: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(act_word_f16(r.x, act), act_word_f16(r.y, act), act_word_f16(r.z, act), act_word_f16(r.w, act));
}

fn relu_act_vec(z: vec4<u32>, act: u32) -> ReluAct {
    let r = relu_vec(z);
    return ReluAct(r, act_vec(r, act));
}

fn grad_vec(r: vec4<u32>, g: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(grad_word_f16(r.x, g.x, act), grad_word_f16(r.y, g.y, act), grad_word_f16(r.z, g.z, act), grad_word_f16(r.w, g.w, act));
}
#else
fn relu_vec(v: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(relu_word(v.x), relu_word(v.y), relu_word(v.z), relu_word(v.w));
}

// (Where no value of the vec is a NaN, its squares need no canonical NaN: a fast path for such vecs,
// one branch a vec, took the driver's fused forward from 37 registers to 32 and was 14-17 % slower on an
// H100; benches/results/experiments, thirty-seventh session.)
fn relu_act_vec(z: vec4<u32>, act: u32) -> ReluAct {
    let x = relu_act_word(z.x, act);
    let y = relu_act_word(z.y, act);
    let zz = relu_act_word(z.z, act);
    let w = relu_act_word(z.w, act);
    return ReluAct(vec4<u32>(x.r, y.r, zz.r, w.r), vec4<u32>(x.a, y.a, zz.a, w.a));
}

fn act_vec(r: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(act_word(r.x, act), act_word(r.y, act), act_word(r.z, act), act_word(r.w, act));
}

fn grad_vec(r: vec4<u32>, g: vec4<u32>, act: u32) -> vec4<u32> {
    return vec4<u32>(grad_word(r.x, g.x, act), grad_word(r.y, g.y, act), grad_word(r.z, g.z, act), grad_word(r.w, g.w, act));
}
#endif
#endif

// ---- F32 and F16: the dense ops a trainer (Burn) runs, in the same order with the same roundings ----
// forward a = r * r (ReLU²) or r; backward t = g * r, dr = t + t (F16: 2·g·r rounded once), dL/dz = dr where r > 0 (bits: nonzero,
// sign clear, not NaN), else +0.0; ReLU: g where r > 0, else +0.0. t + t is computed as t * 2.0 (exact,
// equal to t + t) so that no multiply-add pair exists for a compiler to contract into an fma. An
// arithmetic result that is NaN is written as the canonical quiet NaN (0x7fc00000 / 0x7e00). A GPU may
// flush f32 subnormals (inputs or results) of the F32 math; the F16 math never meets an f32 subnormal
// (conversions are integer or exact power-of-two scalings, products of two F16 are at least 2^-48) and
// is exact on every GPU.
// CPU port: src/cpu/act.rs (relu_bits32, act_bits32, grad_bits32, *_f16).

#if BITS32
const F32_QNAN: u32 = 0x7fc00000u;

fn f32_nan_bits(x: u32) -> bool {
    return (x & 0x7fffffffu) > 0x7f800000u;
}

fn relu32(x: u32) -> u32 {
    return select(x, 0u, (x & 0x80000000u) != 0u && !f32_nan_bits(x));
}

fn act32(r: u32, act: u32) -> u32 {
    if act == 0u {
        return r;
    }
    let f = bitcast<f32>(r);
    let s = bitcast<u32>(f * f);
    return select(s, F32_QNAN, f32_nan_bits(s));
}

fn grad32(r: u32, g: u32, act: u32) -> u32 {
    let pos = r != 0u && (r & 0x80000000u) == 0u && !f32_nan_bits(r);
    if act == 0u {
        return select(0u, g, pos);
    }
    let t = bitcast<f32>(g) * bitcast<f32>(r);
    let d = bitcast<u32>(t * 2.0);
    return select(0u, select(d, F32_QNAN, f32_nan_bits(d)), pos);
}

#endif

#if ACT_F16
const F16_QNAN: u32 = 0x7e00u;

// The F16 conversions below have no branches: a branch on the element's class (zero, subnormal,
// normal) diverges within a subgroup of activations, so both sides ran for every word. Each class is
// computed and the right one selected; every step stays exact on every adapter (integer arithmetic,
// products exact in f32, and WGSL's `round`, which rounds half to even by definition: not WGSL's own f32
// -> f16 conversion, whose rounding is left to the implementation). On the H200 (201M F16, ρ = 0.5 /
// 0.176 / 0.05, the same call as the branching form): plain forward 0.566 / 0.566 / 0.560 -> 0.354 ms
// at every ρ, fused forward 0.786 / 0.733 / 0.716 -> 0.572 / 0.515 / 0.504, fused backward with `a`
// 1.139 / 1.135 / 1.054 -> 0.933 / 0.932 / 0.861; the backward without `a` 0.4-1.6 % slower and the
// plain backward 2.5-5 % (docs/PERFORMANCE.md, twentieth session), so `grad_f16` converts with the
// branching forms below (twenty-first session).

// F16 bits (low 16 bits of `h`) -> f32 (no f32 subnormal is formed: an F16 subnormal m · 2^-24 is an
// f32 normal). Not for NaN.
fn f16_to_f32(h: u32) -> f32 {
    let m = h & 0x7fffu;
    let s = (h & 0x8000u) << 16u;
    let normal = select((m << 13u) + 0x38000000u, 0x7f800000u, m >= 0x7c00u);
    let sub = bitcast<u32>(f32(m) * 5.9604644775390625e-8);
    return bitcast<f32>(s | select(normal, sub, m < 0x400u));
}

// |f| -> F16 bits (sign clear), round to nearest even: overflow to inf, F16 subnormals. For an f that is
// not NaN and not an f32 subnormal (products of F16 values are at least 2^-48).
fn f16_magnitude(f: f32) -> u32 {
    let a = bitcast<u32>(f) & 0x7fffffffu;
    // Normal F16: drop 13 mantissa bits, rounding to nearest even (a carry into the exponent is right).
    let normal = (a - 0x38000000u + 0xfffu + ((a >> 13u) & 1u)) >> 13u;
    // Below 2^-14: the value in units of 2^-24 (exact: a power-of-two scaling of an f32 normal), rounded
    // half to even by `round`; 1024 (2^-14 itself) is the smallest normal's encoding.
    let sub = u32(round(abs(f) * 16777216.0));
    return select(select(sub, normal, a >= 0x38800000u), 0x7c00u, a >= 0x477ff000u);
}

// f32 -> F16 bits, round to nearest even: overflow to ±inf, F16 subnormals, NaN -> the canonical quiet
// NaN. (Matches half::f16::from_f32.) For an f that is not an f32 subnormal.
fn f32_to_f16(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    let s = (b >> 16u) & 0x8000u;
    return select(s | f16_magnitude(f), F16_QNAN, (b & 0x7fffffffu) > 0x7f800000u);
}

fn f16_nan(x: u32) -> bool {
    return (x & 0x7fffu) > 0x7c00u;
}

fn relu_f16(x: u32) -> u32 {
    return select(x, 0u, (x & 0x8000u) != 0u && !f16_nan(x));
}

fn act_f16(r: u32, act: u32) -> u32 {
    if act == 0u {
        return r;
    }
    // r to f32 by a shift and an add alone: exact for normal r; inf is read as 2^16, whose square
    // overflows to inf as inf's does; zero and subnormal r land in [2^-15, 2^-14), and their squares,
    // like the true ones (below 2^-28), round to +0.
    let m = r & 0x7fffu;
    let f = bitcast<f32>(select((m << 13u) + 0x38000000u, 0x47800000u, m >= 0x7c00u));
    return select(f16_magnitude(f * f), F16_QNAN, f16_nan(r));
}

fn grad_f16(r: u32, g: u32, act: u32) -> u32 {
    let pos = r != 0u && (r & 0x8000u) == 0u && !f16_nan(r);
    if act == 0u {
        return select(0u, g, pos);
    }
    if !pos {
        return 0u;
    }
    if f16_nan(g) {
        return F16_QNAN;
    }
    // dr = f16(2 · g · r), rounded once: g · r and its double are exact in f32, and Burn's fused
    // element-wise kernel does not round g · r to F16 before the sum (docs/FUSED.md). Here, past the
    // early outs, the conversions branch on the class (`_by_class`): only positive r reach them, and the
    // branching forms were faster in the backward (H200, 201M F16, ρ = 0.5 / 0.176 / 0.05, the same call,
    // each binary twice: fused backward dL/dz 0.700 / 0.699 / 0.628 -> 0.694 / 0.689 / 0.615 ms, with `a`
    // 0.933 / 0.933 / 0.862 -> 0.924 / 0.919 / 0.845, plain backward 0.580 / 0.579 / 0.517 -> 0.566 /
    // 0.562 / 0.490; docs/PERFORMANCE.md, twenty-first session). The forward's branch-free forms stay
    // above.
    let t = f16_to_f32_by_class(g) * f16_to_f32_by_class(r);
    if act == 2u {
        // Activation::Relu2Stepwise: t rounded to F16 first, then doubled (exact, or ∞ past 65504), as
        // IEEE F16 arithmetic computes t = g * r; dr = t + t. A NaN t (g = ±0, r = ∞) stays NaN.
        let t16 = f32_to_f16_by_class(t);
        if f16_nan(t16) {
            return F16_QNAN;
        }
        return f32_to_f16_by_class(f16_to_f32_by_class(t16) * 2.0);
    }
    return f32_to_f16_by_class(t * 2.0);
}

// `f16_to_f32` with a branch per class (zero and subnormal, inf, normal). Not for NaN.
fn f16_to_f32_by_class(h: u32) -> f32 {
    let m = h & 0x7fffu;
    let s = (h & 0x8000u) << 16u;
    if m < 0x400u {
        return bitcast<f32>(s | bitcast<u32>(f32(m) * 5.9604644775390625e-8));
    }
    if m >= 0x7c00u {
        return bitcast<f32>(s | 0x7f800000u);
    }
    return bitcast<f32>(s | ((m << 13u) + 0x38000000u));
}

// `f32_to_f16` with a branch per class (NaN, overflow, normal, subnormal); the subnormal's rounding
// to nearest even by integer arithmetic. For an f that is not an f32 subnormal.
fn f32_to_f16_by_class(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    let s = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if a > 0x7f800000u {
        return F16_QNAN;
    }
    if a >= 0x477ff000u {
        return s | 0x7c00u;
    }
    if a >= 0x38800000u {
        return s | ((a - 0x38000000u + 0xfffu + ((a >> 13u) & 1u)) >> 13u);
    }
    let e = a >> 23u;
    let m = (a & 0x7fffffu) | 0x800000u;
    let sh = min(126u - e, 25u);
    return s | ((m + (1u << (sh - 1u)) - 1u + ((m >> sh) & 1u)) >> sh);
}

fn relu_word_f16(w: u32) -> u32 {
    return relu_f16(w & 0xffffu) | (relu_f16(w >> 16u) << 16u);
}

fn act_word_f16(w: u32, act: u32) -> u32 {
    return act_f16(w & 0xffffu, act) | (act_f16(w >> 16u, act) << 16u);
}

fn grad_word_f16(r: u32, g: u32, act: u32) -> u32 {
    return grad_f16(r & 0xffffu, g & 0xffffu, act) | (grad_f16(r >> 16u, g >> 16u, act) << 16u);
}
#endif
