// Demo trainer (demos/train_ffn): per-step statistics written into a GPU-side history buffer, so the
// training step never reads anything back; the host copies the history out only at logging points.
//
// History layout (u32 words): step s owns words [s·stride, (s+1)·stride):
//   +0 mean loss (f32 bits), +1 / +2 two 32-bit hashes of every weight after the update,
//   +3 reserved (0), +4 + l nonzero count of relu(z) in layer l.
// The step number is word 0 of the step-info buffer, written by the host before each submit.
// Counts and hashes use u32 atomic adds, which commute, so they are deterministic.

#include "lib/train_params.wgsl"

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> step_info: array<u32>;

var<workgroup> wg_count: atomic<u32>;
var<workgroup> wg_hash_a: atomic<u32>;
var<workgroup> wg_hash_b: atomic<u32>;
var<workgroup> partial: array<f32, 256>;

fn linear_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// relu "on bits" is nonzero iff the BF16 value is NaN, or has the sign bit clear and is not +0.0.
fn relu_nonzero(h: u32) -> u32 {
    if ((h & 0x7fffu) > 0x7f80u) {
        return 1u;
    }
    if ((h & 0x8000u) != 0u || h == 0u) {
        return 0u;
    }
    return 1u;
}

// Nonzeros of relu(z). u0 = words of z (BF16 pairs), u1 = history stride, u2 = word within the step (4 + layer).
// src = z. One word per invocation.
@compute @workgroup_size(256, 1, 1)
fn count_relu_nonzero(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        atomicStore(&wg_count, 0u);
    }
    workgroupBarrier();
    let i = linear_index(wg, nwg, lid);
    if (i < p.u0) {
        let w = src[i];
        let c = relu_nonzero(w & 0xffffu) + relu_nonzero(w >> 16u);
        if (c != 0u) {
            atomicAdd(&wg_count, c);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let total = atomicLoad(&wg_count);
        if (total != 0u) {
            atomicAdd(&hist[step_info[0] * p.u1 + p.u2], total);
        }
    }
}

fn mix(x: u32) -> u32 {
    // lowbias32 (Chris Wellons): a good 32-bit integer finaliser.
    var h = x;
    h = h ^ (h >> 16u);
    h = h * 0x7feb352du;
    h = h ^ (h >> 15u);
    h = h * 0x846ca68bu;
    h = h ^ (h >> 16u);
    return h;
}

// Two order-independent hashes of the parameter words (sum of mixed (word, index) pairs).
// u0 = words, u1 = history stride. src = parameters. Grid-stride over the buffer.
@compute @workgroup_size(256, 1, 1)
fn hash_params(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        atomicStore(&wg_hash_a, 0u);
        atomicStore(&wg_hash_b, 0u);
    }
    workgroupBarrier();
    let total_threads = nwg.x * nwg.y * 256u;
    var ha = 0u;
    var hb = 0u;
    for (var i = linear_index(wg, nwg, lid); i < p.u0; i += total_threads) {
        let w = src[i];
        ha = ha + mix(w ^ mix(i));
        hb = hb + mix(w + 0x9e3779b9u * (i + 1u));
    }
    atomicAdd(&wg_hash_a, ha);
    atomicAdd(&wg_hash_b, hb);
    workgroupBarrier();
    if (lid == 0u) {
        let base = step_info[0] * p.u1;
        atomicAdd(&hist[base + 1u], atomicLoad(&wg_hash_a));
        atomicAdd(&hist[base + 2u], atomicLoad(&wg_hash_b));
    }
}

// Mean of the per-token losses, in a fixed tree order. u0 = T, u1 = history stride. src = per-token loss
// (f32). Dispatched as one workgroup.
@compute @workgroup_size(256, 1, 1)
fn loss_mean(@builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var t = lid; t < p.u0; t += 256u) {
        acc = acc + bitcast<f32>(src[t]);
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var width = 128u; width > 0u; width = width / 2u) {
        if (lid < width) {
            partial[lid] = partial[lid] + partial[lid + width];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        atomicStore(&hist[step_info[0] * p.u1], bitcast<u32>(partial[0] / f32(p.u0)));
    }
}
