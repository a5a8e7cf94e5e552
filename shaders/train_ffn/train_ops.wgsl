// Demo trainer (demos/train_ffn): every non-GEMM op of the model except the ReLU² activation
// (train_act.wgsl) and the statistics (train_stats.wgsl): context embedding, RMS norm, residual add,
// softmax cross-entropy and Adam.
//
// Buffers are `array<u32>`: f32 tensors one element per word (bitcast), BF16 tensors two per word
// (element i in word i/2, low half first). Each op documents what b1..b5 hold. Every reduction runs in a
// fixed order inside one invocation (no float atomics), so results are the same on every run: the two
// cache modes of the trainer share these pipelines and must produce bit-identical weights.

#include "lib/train_params.wgsl"

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> b1: array<u32>;
@group(0) @binding(2) var<storage, read_write> b2: array<u32>;
@group(0) @binding(3) var<storage, read_write> b3: array<u32>;
@group(0) @binding(4) var<storage, read_write> b4: array<u32>;
@group(0) @binding(5) var<storage, read_write> b5: array<u32>;

fn to_bf16(x: f32) -> u32 {
    let u = bitcast<u32>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (u >> 16u) | 0x40u;
    }
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}

fn bf16_at(word: u32, index: u32) -> f32 {
    if ((index & 1u) == 1u) {
        return bitcast<f32>(word & 0xffff0000u);
    }
    return bitcast<f32>(word << 16u);
}

fn f(i: u32) -> f32 {
    return bitcast<f32>(i);
}

fn linear_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// x0[t] = sum_j E[ids[t*k + j]] in BF16. u0 = T, u1 = d, u2 = k.
// b1 = ids (u32, T×k, row index into E), b2 = E (f32 rows of d), b3 = x0 (BF16, T×d). One word per invocation.
@compute @workgroup_size(256, 1, 1)
fn embed_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wg, nwg, lid);
    let half_d = p.u1 / 2u;
    if (i >= p.u0 * half_d) {
        return;
    }
    let t = i / half_d;
    let c = 2u * (i % half_d);
    var v0 = 0.0;
    var v1 = 0.0;
    for (var j = 0u; j < p.u2; j++) {
        let row = b1[t * p.u2 + j];
        v0 = v0 + f(b2[row * p.u1 + c]);
        v1 = v1 + f(b2[row * p.u1 + c + 1u]);
    }
    b3[i] = to_bf16(v0) | (to_bf16(v1) << 16u);
}

// dE[row][c] = sum over tokens t whose slot j = row / V holds `row` of dx0[t][c]. u0 = T, u1 = d, u2 = k, u3 = V.
// b1 = ids, b2 = dx0 (f32, T×d), b3 = dE (f32, (k·V)×d). One element per invocation, tokens in order.
@compute @workgroup_size(256, 1, 1)
fn embed_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wg, nwg, lid);
    if (i >= p.u2 * p.u3 * p.u1) {
        return;
    }
    let row = i / p.u1;
    let c = i % p.u1;
    let j = row / p.u3;
    var acc = 0.0;
    for (var t = 0u; t < p.u0; t++) {
        if (b1[t * p.u2 + j] == row) {
            acc = acc + f(b2[t * p.u1 + c]);
        }
    }
    b3[i] = bitcast<u32>(acc);
}

fn rms_scale(t: u32) -> f32 {
    var ss = 0.0;
    for (var c = 0u; c < p.u1; c++) {
        let e = t * p.u1 + c;
        let x = bf16_at(b1[e >> 1u], e);
        ss = ss + x * x;
    }
    return inverseSqrt(ss / f32(p.u1) + f(p.u2));
}

// h = x · (mean(x²) + eps)^-1/2, no gain. u0 = T, u1 = d, u2 = eps (f32 bits).
// b1 = x (BF16, T×d), b2 = h (f32, T×d). One token per invocation.
@compute @workgroup_size(64, 1, 1)
fn rms_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    if (t >= p.u0) {
        return;
    }
    let s = rms_scale(t);
    for (var c = 0u; c < p.u1; c++) {
        let e = t * p.u1 + c;
        b2[e] = bitcast<u32>(bf16_at(b1[e >> 1u], e) * s);
    }
}

// dx = (u3 != 0 ? dx : 0) + s·(dh − h·mean(dh·h)) with h = x·s. u0 = T, u1 = d, u2 = eps, u3 = accumulate.
// b1 = x (BF16), b2 = dh (f32), b3 = dx (f32, in/out). One token per invocation.
@compute @workgroup_size(64, 1, 1)
fn rms_backward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    if (t >= p.u0) {
        return;
    }
    let s = rms_scale(t);
    var dot = 0.0;
    for (var c = 0u; c < p.u1; c++) {
        let e = t * p.u1 + c;
        dot = dot + f(b2[e]) * bf16_at(b1[e >> 1u], e) * s;
    }
    let mean_dot = dot / f32(p.u1);
    for (var c = 0u; c < p.u1; c++) {
        let e = t * p.u1 + c;
        let h = bf16_at(b1[e >> 1u], e) * s;
        var v = s * (f(b2[e]) - h * mean_dot);
        if (p.u3 != 0u) {
            v = f(b3[e]) + v;
        }
        b3[e] = bitcast<u32>(v);
    }
}

// x_out = bf16(x_in + y). u0 = words (elements / 2). b1 = x_in (BF16), b2 = y (f32), b3 = x_out (BF16).
@compute @workgroup_size(256, 1, 1)
fn residual_add(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wg, nwg, lid);
    if (i >= p.u0) {
        return;
    }
    let xw = b1[i];
    let v0 = bf16_at(xw, 0u) + f(b2[2u * i]);
    let v1 = bf16_at(xw, 1u) + f(b2[2u * i + 1u]);
    b3[i] = to_bf16(v0) | (to_bf16(v1) << 16u);
}

// Per-token softmax cross-entropy and its gradient. u0 = T, u1 = V, u2 = 1/T (f32 bits).
// b1 = logits (f32, T×V), b2 = targets (u32, T), b3 = dlogits (f32, T×V, already divided by T),
// b4 = per-token loss (f32, T). One token per invocation.
@compute @workgroup_size(64, 1, 1)
fn softmax_xent(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    if (t >= p.u0) {
        return;
    }
    let base = t * p.u1;
    var mx = f(b1[base]);
    for (var v = 1u; v < p.u1; v++) {
        mx = max(mx, f(b1[base + v]));
    }
    var sum = 0.0;
    for (var v = 0u; v < p.u1; v++) {
        sum = sum + exp(f(b1[base + v]) - mx);
    }
    let tgt = b2[t];
    let inv_t = f(p.u2);
    for (var v = 0u; v < p.u1; v++) {
        var prob = exp(f(b1[base + v]) - mx) / sum;
        if (v == tgt) {
            prob = prob - 1.0;
        }
        b3[base + v] = bitcast<u32>(prob * inv_t);
    }
    b4[t] = bitcast<u32>(log(sum) + mx - f(b1[base + tgt]));
}

// Adam over the whole parameter buffer. u0 = n. b1 = params, b2 = grads, b3 = m, b4 = v (all f32),
// b5 = step info: [step, lr_t (bias-corrected, f32), beta1, beta2, eps].
@compute @workgroup_size(256, 1, 1)
fn adam(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wg, nwg, lid);
    if (i >= p.u0) {
        return;
    }
    let lr_t = f(b5[1]);
    let beta1 = f(b5[2]);
    let beta2 = f(b5[3]);
    let eps = f(b5[4]);
    let g = f(b2[i]);
    let m = beta1 * f(b3[i]) + (1.0 - beta1) * g;
    let v = beta2 * f(b4[i]) + (1.0 - beta2) * g * g;
    b3[i] = bitcast<u32>(m);
    b4[i] = bitcast<u32>(v);
    b1[i] = bitcast<u32>(f(b1[i]) - lr_t * m / (sqrt(v) + eps));
}
