// Bandwidth reference for the benchmarks: copies `params.words4` vec4<u32> from `src` to `dst`.
// `fill_only` and `read_only` split that bandwidth by direction for the roofline
// demo (demos/roofline.rs): the codec's kernels move very uneven mixes (decompress mostly writes,
// compress mostly reads), and the copy moves equal halves.
//
// Why a shader and not `copy_buffer_to_buffer`: on the H200 wgpu's buffer copy ran at 0.85 TB/s against
// 4.27 TB/s for this kind of shader (see docs/DEVICE.md), and the codec's kernels are shaders too, so the
// copy they are compared with must be the fastest a shader gets.
//
// One vec4 (16 bytes) per invocation and iteration of a grid-stride loop. The host caps the grid at
// 32768 workgroups (measured on the H200: a grid covering every word, 2-D past 65535 workgroups, copied
// 201M BF16 elements at 3.74 TB/s, the capped grid at 4.01 TB/s; four vec4 per invocation did no better).
// The grid may still be 2-D on a device with a smaller per-dimension limit; the linear index is rebuilt
// from (x, y).

struct Params {
    words4: u32,
    seed: u32,     // fill: the pattern; read: a value the XOR of everything read never equals in practice
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

const WG: u32 = 256u;

// This invocation's first vec4 index and the grid's stride, for the grid-stride loop of every entry point.
fn grid_stride(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> vec2<u32> {
    return vec2<u32>((wid.y * nwg.x + wid.x) * WG + lid, nwg.x * nwg.y * WG);
}

@compute @workgroup_size(256)
fn copy(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = grid_stride(wid, nwg, lid);
    for (var i = g.x; i < params.words4; i += g.y) {
        dst[i] = src[i];
    }
}

// Writes `params.words4` vec4<u32> of a pattern derived from the index, reading nothing.
@compute @workgroup_size(256)
fn fill_only(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = grid_stride(wid, nwg, lid);
    for (var i = g.x; i < params.words4; i += g.y) {
        dst[i] = vec4<u32>(i, i ^ params.seed, i + params.seed, params.seed);
    }
}

// Reads `params.words4` vec4<u32>; the XOR of what an invocation read is stored only if it equals
// `params.seed`, so the loads cannot be removed and (nearly) nothing is written.
@compute @workgroup_size(256)
fn read_only(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = grid_stride(wid, nwg, lid);
    var acc = vec4<u32>(0u);
    for (var i = g.x; i < params.words4; i += g.y) {
        acc ^= src[i];
    }
    let x = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if x == params.seed {
        dst[0] = acc;
    }
}
