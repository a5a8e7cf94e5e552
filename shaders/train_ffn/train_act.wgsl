// Demo trainer (demos/train_ffn): the dense ReLU² activation kernels of one FFN block.
//
// These are the exact formulas that the library's fused kernels (issue 3) compute from the compressed
// form, so that the dense-cache mode and the BitSparse mode of the trainer stay bit-identical:
//   forward   r = relu(z) "on bits" (NaN passes unchanged, any value with the sign bit set -> +0.0),
//             a = bf16_rne(r * r)                     (r * r is exact in f32 for a BF16 r)
//   backward  dz = bf16_rne(2.0 * r * g)              (exact in f32 too, before the rounding)
//             a  = bf16_rne(r * r) again where the cache did not keep a
// They come from the library's own `lib/act.wgsl` (relu_bits, act_bits, grad_bits: NaN results are the
// canonical quiet NaN), so the dense modes and the fused kernels cannot drift apart.
// BF16 tensors are packed two per u32 word (element i in word i/2, low half first); each invocation
// handles one word, i.e. two elements. Grids are 2-D (x up to 32768 workgroups) to stay under the
// 65535-per-dimension limit on large configurations.

struct Params {
    n_words: u32,
    flag: u32,
    _p2: u32,
    _p3: u32,
    _p4: u32,
    _p5: u32,
    _p6: u32,
    _p7: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> b1: array<u32>;
@group(0) @binding(2) var<storage, read_write> b2: array<u32>;
@group(0) @binding(3) var<storage, read_write> b3: array<u32>;
@group(0) @binding(4) var<storage, read_write> b4: array<u32>;

// Activation code of lib/act.wgsl for relu(z)².
const RELU2: u32 = 1u;

#include "lib/act.wgsl"

fn linear_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// b1 = z (in), b2 = r (out, written when flag != 0), b3 = a (out).
@compute @workgroup_size(256, 1, 1)
fn act_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wg, nwg, lid);
    if (i >= p.n_words) {
        return;
    }
    let zw = b1[i];
    let r0 = relu_bits(zw & 0xffffu);
    let r1 = relu_bits(zw >> 16u);
    if (p.flag != 0u) {
        b2[i] = r0 | (r1 << 16u);
    }
    b3[i] = act_bits(r0, RELU2) | (act_bits(r1, RELU2) << 16u);
}

// b1 = r (in), b2 = g (in), b3 = dz (out), b4 = a (out, written when flag != 0).
@compute @workgroup_size(256, 1, 1)
fn act_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wg, nwg, lid);
    if (i >= p.n_words) {
        return;
    }
    let rw = b1[i];
    let gw = b2[i];
    let r0 = rw & 0xffffu;
    let r1 = rw >> 16u;
    b3[i] = grad_bits(r0, gw & 0xffffu, RELU2) | (grad_bits(r1, gw >> 16u, RELU2) << 16u);
    if (p.flag != 0u) {
        b4[i] = act_bits(r0, RELU2) | (act_bits(r1, RELU2) << 16u);
    }
}
