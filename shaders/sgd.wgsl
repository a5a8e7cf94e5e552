// A plain SGD step w -= lr · g on f32 weights, meant to be dispatched *indirectly* through the arena's
// gate (`arena.wgsl:gate`): after an arena overflow the gate's arguments are (0, 0, 0) and the step
// changes no weights. Grid-stride, so any grid the gate passes through covers every weight.

struct Params {
    n: u32,
    lr: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> w: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn sgd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        w[i] -= p.lr * g[i];
    }
}
