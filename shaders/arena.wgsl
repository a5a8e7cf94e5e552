// One-thread setup kernels of the GPU arena (vello-style): they move the arena's bookkeeping on the
// GPU so the host never needs a size it would have to read back.
//
// reserve: a new tensor's slot starts at the current head; if even its header, table and mask (sizes the
//          host knows) would pass the end, the slot is marked overflowed and its compress writes nothing.
//          An FP8-storage tensor (`fp8` != 0) also gets its scale here: delayed (FP8_MAX / the amax its
//          slot's previous FP8 compress recorded, 1.0 when there is none) or the caller's fixed one; the
//          amax accumulator is then cleared for this compress to fill (one pass: no wait for its own amax).
// pop:     LIFO release: the head goes back to the slot's base.
// gate:    the caller's indirect dispatch arguments: its grid when no failure happened this step, else
//          (0, 0, 0), so a weight update recorded behind it changes nothing after an overflow.

#include "lib/arena_ctrl.wgsl"
#include "lib/fp8.wgsl"

struct Params {
    slot: u32,          // word index of the slot descriptor
    values_offset: u32, // reserve: words of header + table + mask
    gx: u32,            // gate: the grid to pass through
    gy: u32,
    gz: u32,
    gate_idx: u32,      // gate: word index of the (x, y, z) arguments
    fp8: u32,           // reserve: 0 not FP8, 1 delayed e4m3, 2 delayed e5m2, 3 fixed scale
    fp8_scale: u32,     // reserve, fixed: the scale (f32 bits)
}

@group(0) @binding(0) var<storage, read_write> ctrl: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(1)
fn reserve() {
    let b = atomicLoad(&ctrl[CTRL_HEAD]);
    atomicStore(&ctrl[p.slot + SLOT_BASE], b);
    atomicStore(&ctrl[p.slot + SLOT_WORDS], 0u);
    var st = 0u;
    if b + p.values_offset > atomicLoad(&ctrl[CTRL_CAP]) || b + p.values_offset < b {
        st = STATUS_OVERFLOW;
    }
    atomicStore(&ctrl[p.slot + SLOT_STATUS], st);
    if p.fp8 != 0u {
        var scale = p.fp8_scale;
        if p.fp8 != 3u {
            scale = fp8_delayed_scale(atomicLoad(&ctrl[p.slot + SLOT_AMAX]), p.fp8 - 1u);
        }
        atomicStore(&ctrl[p.slot + SLOT_SCALE], scale);
        atomicStore(&ctrl[p.slot + SLOT_AMAX], 0u);
    }
}

@compute @workgroup_size(1)
fn pop() {
    atomicStore(&ctrl[CTRL_HEAD], atomicLoad(&ctrl[p.slot + SLOT_BASE]));
}

@compute @workgroup_size(1)
fn gate() {
    let ok = atomicLoad(&ctrl[CTRL_FAILED]) == 0u;
    atomicStore(&ctrl[p.gate_idx + 0u], select(0u, p.gx, ok));
    atomicStore(&ctrl[p.gate_idx + 1u], select(0u, p.gy, ok));
    atomicStore(&ctrl[p.gate_idx + 2u], select(0u, p.gz, ok));
}
