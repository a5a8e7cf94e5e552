// Demo trainer (demos/train_ffn): C[M×N] = op(A)[M×K] · op(B)[K×N], f32 accumulation.
//
// Every buffer is `array<u32>`: an f32 element is one word (bitcast), a BF16 element is one half of a
// word (element i lives in word i/2, low half for even i), so one shader serves every mix of f32 and
// BF16 operands through the override constants below. Correctness over speed: each invocation computes
// a 4×4 register tile with no workgroup memory (which keeps it simple and fast enough on lavapipe, where
// barriers are expensive). The k loop runs in order, so results are deterministic run to run: the two
// cache modes of the trainer share these exact pipelines, which is what makes their losses bit-identical.
//
// Layouts (row-major): !TRANS_A: A is M×K with row stride lda; TRANS_A: A is K×M (stride lda).
//                      !TRANS_B: B is K×N with row stride ldb; TRANS_B: B is N×K (stride ldb).
// C is M×N with row stride ldc. M and N are multiples of 4; with OUT_BF16 each invocation writes whole words.

override TRANS_A: bool = false;
override TRANS_B: bool = false;
override A_BF16: bool = false;
override B_BF16: bool = false;
override OUT_BF16: bool = false;

struct Dims {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read_write> a_buf: array<u32>;
@group(0) @binding(2) var<storage, read_write> b_buf: array<u32>;
@group(0) @binding(3) var<storage, read_write> c_buf: array<u32>;

fn bf16_half(word: u32, index: u32) -> f32 {
    if ((index & 1u) == 1u) {
        return bitcast<f32>(word & 0xffff0000u);
    }
    return bitcast<f32>(word << 16u);
}

// f32 -> BF16 bits, round to nearest even; NaN stays NaN (quiet bit set).
fn to_bf16(x: f32) -> u32 {
    let u = bitcast<u32>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (u >> 16u) | 0x40u;
    }
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}

fn load_a(i: u32) -> f32 {
    if (A_BF16) {
        return bf16_half(a_buf[i >> 1u], i);
    }
    return bitcast<f32>(a_buf[i]);
}

fn load_b(i: u32) -> f32 {
    if (B_BF16) {
        return bf16_half(b_buf[i >> 1u], i);
    }
    return bitcast<f32>(b_buf[i]);
}

fn a_at(m: u32, k: u32) -> f32 {
    if (TRANS_A) {
        return load_a(k * dims.lda + m);
    }
    return load_a(m * dims.lda + k);
}

fn b_at(k: u32, n: u32) -> f32 {
    if (TRANS_B) {
        return load_b(n * dims.ldb + k);
    }
    return load_b(k * dims.ldb + n);
}

fn store_row(m: u32, n0: u32, v: vec4<f32>) {
    let base = m * dims.ldc + n0;
    if (OUT_BF16) {
        c_buf[base >> 1u] = to_bf16(v.x) | (to_bf16(v.y) << 16u);
        c_buf[(base >> 1u) + 1u] = to_bf16(v.z) | (to_bf16(v.w) << 16u);
    } else {
        c_buf[base] = bitcast<u32>(v.x);
        c_buf[base + 1u] = bitcast<u32>(v.y);
        c_buf[base + 2u] = bitcast<u32>(v.z);
        c_buf[base + 3u] = bitcast<u32>(v.w);
    }
}

// M and N are multiples of 4 (the trainer checks its shapes), so a 4×4 tile is either wholly inside C
// or wholly outside. The accumulators are four named vectors, not an indexed array: a dynamically
// indexed local array becomes scratch memory on CPU drivers such as lavapipe.
@compute @workgroup_size(16, 16, 1)
fn gemm(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m0 = gid.y * 4u;
    let n0 = gid.x * 4u;
    if (m0 >= dims.m || n0 >= dims.n) {
        return;
    }
    var c0 = vec4<f32>(0.0);
    var c1 = vec4<f32>(0.0);
    var c2 = vec4<f32>(0.0);
    var c3 = vec4<f32>(0.0);
    for (var k = 0u; k < dims.k; k++) {
        let bv = vec4<f32>(b_at(k, n0), b_at(k, n0 + 1u), b_at(k, n0 + 2u), b_at(k, n0 + 3u));
        c0 = c0 + a_at(m0, k) * bv;
        c1 = c1 + a_at(m0 + 1u, k) * bv;
        c2 = c2 + a_at(m0 + 2u, k) * bv;
        c3 = c3 + a_at(m0 + 3u, k) * bv;
    }
    store_row(m0, n0, c0);
    store_row(m0 + 1u, n0, c1);
    store_row(m0 + 2u, n0, c2);
    store_row(m0 + 3u, n0, c3);
}
