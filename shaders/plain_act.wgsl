// Plain dense ReLU / ReLU² kernels: the baselines the fused kernels are benchmarked against, and what a
// trainer keeping a dense activation cache runs. Same math as the fused kernels (lib/act.wgsl), one vec4
// per thread: 8 BF16 elements, or with ACT_F16 8 F16 elements, or with BITS32 4 F32 elements.

#include "lib/act.wgsl"

struct Params {
    vecs: u32,   // vec4s to process
    act: u32,    // 0 relu, 1 relu²
    grid_x: u32, // threads per grid row (workgroups in x × 256)
    _pad: u32,
}

#if SHARED_IO
// SHARED_IO: an input shares a buffer with out0 (pooled tensors); wgpu refuses a buffer bound read-only
// and read-write in one dispatch, so the inputs are declared read_write (and only read). The ranges never
// overlap (checked on the host).
@group(0) @binding(0) var<storage, read_write> in0: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> in1: array<vec4<u32>>;
#else
@group(0) @binding(0) var<storage, read> in0: array<vec4<u32>>;  // z (forward) or r (backward)
@group(0) @binding(1) var<storage, read> in1: array<vec4<u32>>;  // g (backward only)
#endif
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<u32>>; // a (forward) or dL/dz (backward)
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(256)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * p.grid_x + gid.x;
    if i < p.vecs {
        out0[i] = relu_act_vec(in0[i], p.act).a;
    }
}

@compute @workgroup_size(256)
fn backward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * p.grid_x + gid.x;
    if i < p.vecs {
        out0[i] = grad_vec(in0[i], in1[i], p.act);
    }
}
