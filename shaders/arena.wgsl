// One-thread setup kernels of the GPU arena (vello-style): they move the arena's bookkeeping on the
// GPU so the host never needs a size it would have to read back.
//
// reserve: a new tensor's slot starts at the current head; if even its header, table and mask (sizes the
//          host knows) would pass the end, the slot is marked overflowed and its compress writes nothing.
//          An FP8-storage tensor (`fp8` != 0) also gets its scale here: delayed (FP8_MAX / the amax its
//          slot's previous FP8 compress recorded, 1.0 when there is none) or the caller's fixed one; the
//          amax accumulator is then cleared for this compress to fill (one pass: no wait for its own amax).
// pop:     LIFO release: the head goes back to where it was before the slot's reservation.
// release_front: FIFO release (ring use across micro-batches): the tail moves past the oldest slot.
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
    worst: u32,         // reserve: words of the tensor's worst case (decides a ring wrap)
    next: u32,          // release_front: word index of the next live slot, 0xffffffff if none
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> ctrl: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(1)
fn reserve() {
    let head = atomicLoad(&ctrl[CTRL_HEAD]);
    let tail = atomicLoad(&ctrl[CTRL_TAIL]);
    let cap = atomicLoad(&ctrl[CTRL_CAP]);
    // Free space: [head, cap) and, once a ring has released its front, [0, tail - gap); after a wrap
    // (head < tail) only [head, tail - gap). A tensor whose worst case fits before the end stays there;
    // otherwise it goes to the larger of the two free regions (its real size is known only after the
    // compress). If it then does not fit, the compress flags an overflow: never silent.
    var b = head;
    var limit = cap;
    if head < tail {
        limit = tail - RING_GAP;
    } else if head + p.worst > cap && tail > RING_GAP && tail - RING_GAP > cap - head {
        b = 0u;
        limit = tail - RING_GAP;
    }
    atomicStore(&ctrl[p.slot + SLOT_BASE], b);
    atomicStore(&ctrl[p.slot + SLOT_LIMIT], limit);
    atomicStore(&ctrl[p.slot + SLOT_PREV_HEAD], head);
    atomicStore(&ctrl[p.slot + SLOT_WORDS], 0u);
    var st = 0u;
    if b + p.values_offset > limit || b + p.values_offset < b {
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
    atomicStore(&ctrl[CTRL_HEAD], atomicLoad(&ctrl[p.slot + SLOT_PREV_HEAD]));
}

// FIFO release of the oldest live slot: the tail moves to the next live slot's base; with none left
// the ring is empty and starts over at 0.
@compute @workgroup_size(1)
fn release_front() {
    if p.next == 0xffffffffu {
        atomicStore(&ctrl[CTRL_HEAD], 0u);
        atomicStore(&ctrl[CTRL_TAIL], 0u);
    } else {
        atomicStore(&ctrl[CTRL_TAIL], atomicLoad(&ctrl[p.next + SLOT_BASE]));
    }
}

@compute @workgroup_size(1)
fn gate() {
    let ok = atomicLoad(&ctrl[CTRL_FAILED]) == 0u;
    atomicStore(&ctrl[p.gate_idx + 0u], select(0u, p.gx, ok));
    atomicStore(&ctrl[p.gate_idx + 1u], select(0u, p.gy, ok));
    atomicStore(&ctrl[p.gate_idx + 2u], select(0u, p.gz, ok));
}
