// Demo trainer (demos/train_ffn): the dense ReLU² activation kernels of one FFN block.
//
// These are the exact formulas that the library's fused kernels (issue 3) compute from the compressed
// form, so that the dense-cache mode and the BitSparse mode of the trainer stay bit-identical:
//   forward   r = relu(z) "on bits" (NaN passes unchanged, any value with the sign bit set -> +0.0),
//             a = bf16_rne(r * r)                     (r * r is exact in f32 for a BF16 r)
//   backward  dz = bf16_rne(2.0 * r * g)              (exact in f32 too, before the rounding)
//             a  = bf16_rne(r * r) again where the cache did not keep a
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

fn to_bf16(x: f32) -> u32 {
    let u = bitcast<u32>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (u >> 16u) | 0x40u;
    }
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}

fn relu_bits(h: u32) -> u32 {
    if ((h & 0x7fffu) > 0x7f80u) {
        return h; // NaN propagates unchanged
    }
    if ((h & 0x8000u) != 0u) {
        return 0u; // negatives and -0.0
    }
    return h;
}

fn bf16_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}

fn square_bf16(r: u32) -> u32 {
    let x = bf16_f32(r);
    return to_bf16(x * x);
}

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
    b3[i] = square_bf16(r0) | (square_bf16(r1) << 16u);
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
    let d0 = to_bf16(2.0 * bf16_f32(r0) * bf16_f32(gw & 0xffffu));
    let d1 = to_bf16(2.0 * bf16_f32(r1) * bf16_f32(gw >> 16u));
    b3[i] = d0 | (d1 << 16u);
    if (p.flag != 0u) {
        b4[i] = square_bf16(r0) | (square_bf16(r1) << 16u);
    }
}
