// Decompress one chunk of a tensor back to dense elements: one workgroup per tile.
//
// Each tile decodes on its own from its table entry and mask words (random access), so there is no
// inter-workgroup communication at all. A tensor whose header carries any status bit (sign-bit error,
// arena overflow) is invalid: nothing is written.
//
// The CPU port of this stage is src/cpu/decompress.rs.

#include "lib/tile.wgsl"

struct Params {
    tiles: u32,       // tiles in this chunk
    full_tiles: u32,  // tiles written through `dst4`
    tail_len: u32,    // elements of the final partial tile, 0 if none
    sign_pack: u32,
    table_idx: u32,   // index in `head` of this chunk's first table entry
    mask_idx: u32,    // index in `mask_in` of this chunk's first mask word
    val_idx: u32,     // index in `vals_in` of value word `val_base`
    val_base: u32,    // value-word offset (from the values section) where the `vals_in` window starts
    hdr_idx: u32,     // index in `head` of the header
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    slot: u32,        // arena mode: word index in `ctrl` of the slot descriptor
    act: u32,         // fused backward: 0 relu, 1 relu²
    write_a: u32,     // fused backward: 1 to also write the dense activation
    fp8_fmt: u32,     // FP8 storage: 0 e4m3fn, 1 e5m2
}

@group(0) @binding(3) var<storage, read_write> dst4: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> dst_tail: array<u32>;
@group(0) @binding(5) var<uniform> p: Params;

// SIGN_MODE, ACT_MODE: AT_RUN_TIME reads sign packing and the fused backward's activation from the
// params; a value (0 / 1; an activation code) fixes it for a pipeline the host builds for calls of that
// mode (kernels.rs `Modes`), so the driver folds the other modes' code away. Measured on an H100 (201M
// BF16, unpacked, ReLU², two runs each in one call, against both read at run time;
// benches/results/ab-thirtyfirst, call 2): decompress 0.2412 / 0.1970 / 0.1819 -> 0.2281 / 0.1864 /
// 0.1702 ms at ρ = 0.5 / 0.176 / 0.05 (-5.4 / -5.4 / -6.4 %), the fused backward (dL/dz only) -0.4 /
// -1.3 / -1.4 %, with `a` -0.1 to -0.2 %. Dropping the partial tile's code as well (compress's
// ALL_FULL) made this kernel slower: the fused backward +7 to +9 % (80 B of local memory), the
// decompress +2 to +3 % against SIGN_MODE and ACT_MODE alone.
#include "lib/modes.wgsl"
override ACT_MODE: u32 = AT_RUN_TIME;
fn act_of() -> u32 { return select(ACT_MODE, p.act, ACT_MODE == AT_RUN_TIME); }

#include "lib/arena_ctrl.wgsl"

#if ARENA
// Arena mode: the stream lives in the arena at the word offset recorded in its slot descriptor.
@group(0) @binding(0) var<storage, read> arena: array<u32>;
// The control words are read with plain loads, not atomics: nothing in a decompress dispatch writes the
// slot's base or scale, and its status only by one invocation (below), when it is nonzero already. A
// plain load can hit in L1; an atomic one goes to L2, at the head of each tile's chain (base -> table
// entry -> values). Measured on an H100 (201M BF16, one call, two runs each, the fused backward dL/dz
// only at ρ = 0.5 / 0.176 / 0.05): every thread's atomic loads 0.3601 / 0.3291 / 0.3201 ms, these plain
// loads 0.3556 / 0.3222 / 0.3156 (-1.3 / -2.1 / -1.4 %), with `a` -0.2 to -0.3 % (call 2); in call 1
// the same loads through a second binding -1.1 / -2.1 / -1.6 %, one thread's atomic loads and a
// barrier -1.1 / -1.4 / -0.4 % (benches/results/ab-thirtysecond). In the fused forward plain loads
// made it 5-12 % slower (call 1), so compress keeps its atomics.
@group(0) @binding(6) var<storage, read_write> ctrl: array<u32>;
var<private> base: u32;
fn get_head(i: u32) -> u32 { return arena[base + i]; }
fn get_mask(i: u32) -> u32 { return arena[base + i]; }
fn get_val(i: u32) -> u32 { return arena[base + i]; }
// The largest `i` that `get_val` may read.
fn val_limit() -> u32 { return arrayLength(&arena) - 1u - base; }
#else
#if SHARED_IO
// SHARED_IO: the caller's input ranges share a buffer with an output range (pooled tensors). wgpu refuses
// a buffer bound read-only and read-write in one dispatch, so the inputs are declared read_write (and only
// read); the ranges themselves never overlap (checked on the host).
@group(0) @binding(0) var<storage, read_write> head: array<u32>;
@group(0) @binding(1) var<storage, read_write> mask_in: array<u32>;
@group(0) @binding(2) var<storage, read_write> vals_in: array<u32>;
#else
@group(0) @binding(0) var<storage, read> head: array<u32>;
@group(0) @binding(1) var<storage, read> mask_in: array<u32>;
@group(0) @binding(2) var<storage, read> vals_in: array<u32>;
#endif
fn get_head(i: u32) -> u32 { return head[i]; }
fn get_mask(i: u32) -> u32 { return mask_in[i]; }
fn get_val(i: u32) -> u32 { return vals_in[i]; }
// The largest `i` that `get_val` may read.
fn val_limit() -> u32 { return arrayLength(&vals_in) - 1u; }
#endif

#if FUSED_BWD
// Fused backward (BF16 only): `dst` receives dL/dz computed from the decoded r and g = dL/da, and
// optionally `a4`/`a_tail` the dense activation a (r or r²) that the dW2 GEMM needs.
#include "lib/act.wgsl"
#if SHARED_IO
// SHARED_IO: g shares a buffer with dL/dz or a (pooled tensors); wgpu refuses a buffer bound read-only
// and read-write in one dispatch, so g is declared read_write (and only read).
@group(0) @binding(7) var<storage, read_write> g4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> g_tail: array<u32>;
#else
@group(0) @binding(7) var<storage, read> g4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read> g_tail: array<u32>;
#endif
@group(0) @binding(9) var<storage, read_write> a4: array<vec4<u32>>;
@group(0) @binding(10) var<storage, read_write> a_tail: array<u32>;

fn load_g(tile: u32, q: u32) -> vec4<u32> {
    if tile < p.full_tiles {
        return g4[tile * VECS_PER_TILE + q];
    }
    var v = vec4<u32>(0u);
    let words = (p.tail_len * BITS + 31u) / 32u;
    for (var k = 0u; k < 4u; k++) {
        if q * 4u + k < words {
            v[k] = g_tail[q * 4u + k];
        }
    }
    return v;
}
#endif

#if FP8_STORE
// FP8 storage (with FUSED_BWD): the stream holds q = fp8(r * scale) (8- or 7-bit values) while g, dL/dz
// and a keep the BF16 geometry: each q is decoded into the low byte of a 16-bit lane and dequantized to
// r' = bf16(q / scale) (scale from the slot descriptor) before the same activation math.
#include "lib/fp8.wgsl"
const STORE_BITS: u32 = 8u;
#if ARENA
fn fp8_slot_scale() -> u32 { return ctrl[p.slot + SLOT_SCALE]; }
#else
// FP8 storage exists only in the arena; the stub keeps the variants that are never built valid WGSL.
fn fp8_slot_scale() -> u32 { return 0x3f800000u; }
#endif
// r' of every FP8 code, built once per tile (2 codes per thread) instead of a division per element.
var<workgroup> fp8_lut: array<u32, 256>;
fn fp8_lut_vec(v: vec4<u32>) -> vec4<u32> {
    var o = vec4<u32>(0u);
    for (var k = 0u; k < 4u; k++) {
        o[k] = fp8_lut[v[k] & 0xffu] | (fp8_lut[(v[k] >> 16u) & 0xffu] << 16u);
    }
    return o;
}
#else
const STORE_BITS: u32 = BITS;
#endif

// Word offset (in `vals_in` / the arena) of this workgroup's tile stream.
var<private> stream_base: u32;

// How a round's output words are decoded (measured on the H200, docs/PERFORMANCE.md): each output
// word's values lie in at most two stream words, which are loaded unconditionally (words past a tile's
// stream are read but never used; clamped to the binding only in the tiles near its end) and all
// before any is decoded, so a tile costs one memory latency for its values instead of one per word
// behind branches; the stream is read straight from memory (neighbouring threads read neighbouring
// words: coalesced, L1 hits), not staged in workgroup memory. The width is passed to the decoding functions as a constant (the
// stored width, or one less under sign packing) so the compiler specialises their arithmetic, and
// unpacked 16-bit values take a loop-free path. Each of these steps was measured faster; the
// decompress is issue-bound as much as latency-bound.

// Four stream words; with `clamp` (a constant at each call) each index clamped to `lim` (the last word
// the binding holds).
fn get_vals(wi: vec4<u32>, lim: u32, clamp: bool) -> vec4<u32> {
    var i = wi;
    if clamp {
        i = min(wi, vec4<u32>(lim));
    }
    return vec4<u32>(get_val(i.x), get_val(i.y), get_val(i.z), get_val(i.w));
}

// How far past its table entry a tile's gathers can read, in words: a value index is at most TILE, at
// the stored width, and a gather also loads the word after the one its value starts in.
const GATHER_REACH: u32 = TILE * STORE_BITS / 32u + 1u;

// Whether no gather of this tile can read past the binding, so its loads need no clamp: every tile but
// those whose stream starts within GATHER_REACH words of the binding's end. Without the clamps (eight
// `min`s a round) on the H200 (201M, ρ = 0.5 / 0.176 / 0.05, the same call as the clamped code): BF16
// decompress 0.193 / 0.172 / 0.166 -> 0.192 / 0.168 / 0.160 ms, sign-packed 0.198 / 0.190 / 0.186 ->
// 0.194 / 0.182 / 0.178, e4m3 0.134 / 0.131 / 0.130 -> 0.132 / 0.128 / 0.127, the fused backward with
// `a` 0.438 / 0.432 / 0.431 -> 0.432 / 0.426 / 0.424 (docs/PERFORMANCE.md, nineteenth session).
// F32 (eight rounds) and the arena's plain decompress keep the clamps everywhere: with both forms
// compiled the driver gave them more registers (F32 48 -> 64, 4-5 % slower; the arena's BF16 decompress
// 32 -> 38), where the fused backward went 38 -> 31.
fn gathers_in_binding() -> bool {
#if BITS32
    return false;
#else
#if ARENA
#if !FUSED_BWD
    return false;
#else
    return in_binding_checked();
#endif
#else
    return in_binding_checked();
#endif
#endif
}

fn in_binding_checked() -> bool {
    let lim = val_limit();
    return lim >= GATHER_REACH && stream_base <= lim - GATHER_REACH;
}

// For each of a round's four output words: the stream bits from its first value on (its values
// packed from bit 0). `k0`: the thread's first value index in the round.
fn gather_vec(mr: u32, k0: u32, width: u32, clamp: bool) -> vec4<u32> {
    let c = countOneBits(word_bits(mr));
    let k = vec4<u32>(k0, k0 + c.x, k0 + c.x + c.y, k0 + c.x + c.y + c.z);
    let lim = val_limit();
    if BITS == 16u && width == 16u {
        // Unpacked 16-bit values: value k is half k & 1 of word k >> 1.
        let wi = vec4<u32>(stream_base) + (k >> vec4<u32>(1u));
        let lo = get_vals(wi, lim, clamp);
        let hi = get_vals(wi + vec4<u32>(1u), lim, clamp);
        return select(lo, (lo >> vec4<u32>(16u)) | (hi << vec4<u32>(16u)), (k & vec4<u32>(1u)) != vec4<u32>(0u));
    }
    let pos = k * width;
    let wi = vec4<u32>(stream_base) + (pos >> vec4<u32>(5u));
    let sh = pos & vec4<u32>(31u);
    let lo = get_vals(wi, lim, clamp);
    let hi = get_vals(wi + vec4<u32>(1u), lim, clamp);
    // `hi << (32 - sh)` for sh in 1..31 and 0 for sh = 0 (a shift by 32 is not one in WGSL), written
    // as two shifts instead of a select: sign-packed BF16 decompress 0.199 / 0.194 / 0.191 -> 0.196 /
    // 0.189 / 0.186 ms, e4m3 0.138 / 0.136 / 0.136 -> 0.134 / 0.132 / 0.130 (H200, 201M, ρ = 0.5 /
    // 0.176 / 0.05; benches/results/ab-fifteenth).
    return (lo >> sh) | ((hi << vec4<u32>(1u)) << (vec4<u32>(31u) - sh));
}

// Deposits the values packed from bit 0 of `x` (`width` bits each) into the elements of a word that
// `bits` selects, in order; the other elements are zero.
fn take_values(bits: u32, x_in: u32, width: u32) -> u32 {
#if BITS32
    // A shift by 32 is a shift by 0 in WGSL: width 32 needs its all-ones mask spelled out.
    let vmask = select((1u << width) - 1u, 0xffffffffu, width >= 32u);
#else
    let vmask = (1u << width) - 1u;
#endif
    var x = x_in;
    var w = 0u;
    for (var e = 0u; e < EPW; e++) {
        let take = ((bits >> e) & 1u) != 0u;
        w |= select(0u, (x & vmask) << (e * BITS), take);
        x = select(x, x >> width, take);
    }
    return w;
}

// take_values for unpacked 16-bit values: the word is x itself, its low half, or its low half moved up.
fn take16(bits: u32, x: u32) -> u32 {
    let b0 = (bits & 1u) != 0u;
    let hi = select(x << 16u, x & 0xffff0000u, b0);
    return select(0u, x & 0xffffu, b0) | select(0u, hi, (bits & 2u) != 0u);
}

// A round's four output words from the mask bits `mr` and what `gather_vec` returned for them.
fn deposit_vec(mr: u32, x: vec4<u32>, width: u32) -> vec4<u32> {
    let b = word_bits(mr);
    if BITS == 16u && width == 16u {
        return vec4<u32>(take16(b.x, x.x), take16(b.y, x.y), take16(b.z, x.z), take16(b.w, x.w));
    }
    return vec4<u32>(take_values(b.x, x.x, width), take_values(b.y, x.y, width), take_values(b.z, x.z, width), take_values(b.w, x.w, width));
}

// `gather_vec` / `deposit_vec` with the width as a constant in each call (and `clamp` for gathers).
fn gather_round(mr: u32, k0: u32, width: u32, clamp: bool) -> vec4<u32> {
    if width == STORE_BITS {
        return gather_vec(mr, k0, STORE_BITS, clamp);
    }
    return gather_vec(mr, k0, STORE_BITS - 1u, clamp);
}

// gather_round with the clamp chosen for the tile (`in_binding`: gathers_in_binding), each form compiled
// with `clamp` a constant.
fn gather_tile_round(mr: u32, k0: u32, width: u32, in_binding: bool) -> vec4<u32> {
    if in_binding {
        return gather_round(mr, k0, width, false);
    }
    return gather_round(mr, k0, width, true);
}

fn deposit_round(mr: u32, x: vec4<u32>, width: u32) -> vec4<u32> {
    if width == STORE_BITS {
        return deposit_vec(mr, x, STORE_BITS);
    }
    return deposit_vec(mr, x, STORE_BITS - 1u);
}

@compute @workgroup_size(128)
fn decompress(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
#if SUBGROUP
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
#endif
) {
#if !SUBGROUP
    let sg_id = 0u;
    let sg_lane = 0u;
    let sg_size = 1u;
#endif
    let tile = wid.y * nwg.x + wid.x;
    let li = logical_index(lid, sg_id, sg_lane, sg_size);
#if ARENA
    base = ctrl[p.slot + SLOT_BASE];
    let status = ctrl[p.slot + SLOT_STATUS];
    if status != 0u {
        // An invalid tensor (overflowed, sign error): write nothing, and say so.
        if tile == 0u && lid == 0u {
            // The only write of the dispatch to `ctrl`: every reader sees a nonzero status either way.
            ctrl[p.slot + SLOT_STATUS] = status | STATUS_SKIPPED;
        }
        return;
    }
    if tile >= p.tiles {
        return;
    }
#else
    if tile >= p.tiles || get_head(p.hdr_idx + 5u) != 0u {
        return;
    }
#endif
    let width = STORE_BITS - sign_pack_of();
#if FP8_STORE
    // Published to the decode loop by the barriers of the scan below.
    let scale = fp8_slot_scale();
    for (var c = lid; c < 256u; c += WG) {
        fp8_lut[c] = fp8_dequant_lane(c, scale, p.fp8_fmt);
    }
#endif
    let tile_len = select(TILE, p.tail_len, tile >= p.full_tiles);

    stream_base = p.val_idx + (get_head(p.table_idx + tile) - p.val_base);
    let in_binding = gathers_in_binding();

    var m: array<u32, ROUNDS>;
    for (var r = 0u; r < ROUNDS; r++) {
        let mw = mask_word_of(r, li);
        var bits = 0u;
        if mw * 32u < tile_len {
            bits = (get_mask(p.mask_idx + tile * TILE_MASK_WORDS + mw) >> mask_shift_of(li)) & ROUND_BITS_MASK;
        }
        m[r] = bits;
    }
    // Round r's first value: this thread's exclusive prefix in round r plus the totals of rounds < r.
#if BITS32
    // 32-bit elements keep no array across the decode loop: the eight rounds' 4-bit masks in one word
    // and their starts packed two per component (16 bits each), both rotated a round at a time, so
    // every index is a constant, and each round is gathered in the round that decodes it. The fused
    // backward's earlier form (the rounds' masks, starts and gathered words in arrays, gathered two
    // rounds at a time) held 38 registers and 192 B of local memory on the H200, this one 32 and none;
    // 201M F32, ρ = 0.5 / 0.176 / 0.05, the same call, each binary twice: dL/dz only 0.848 / 0.787 /
    // 0.748 -> 0.526 / 0.480 / 0.451 ms, with `a` 1.083 / 1.023 / 0.995 -> 0.738 / 0.678 / 0.651 (the
    // plain backward 0.602 / 0.601 / 0.600). The plain decompress, which gathered every round before
    // decoding any (48 registers and 4 KB of shared memory in the driver's statistics), 0.353 / 0.306 /
    // 0.280 -> 0.343 / 0.285 / 0.258 (32 registers, 512 B; docs/PERFORMANCE.md, twenty-first session).
    var mrot = 0u;
    for (var r = 0u; r < ROUNDS; r++) {
        mrot |= m[r] << (r * EPV);
    }
    var srot = round_starts_packed(m, li, sg_lane, sg_size);
#else
    let starts = round_starts(m, li, sg_lane, sg_size).starts;
    // Every round's stream words are loaded before any round is decoded (in the same loop, one round at
    // a time, the plain decompress was 1-8 % slower on the H200: BF16 0.189 / 0.164 / 0.161 -> 0.191 /
    // 0.172 / 0.170 ms at ρ = 0.5 / 0.05 / 0.01, e4m3 7-8 %; F32 too while its rounds lived in arrays,
    // see above). The fused backward, whose g loads and activation math need registers too, gathers
    // each round in the round that uses it.
    var xs: array<vec4<u32>, ROUNDS>;
#if !FUSED_BWD
    if in_binding {
        for (var r = 0u; r < ROUNDS; r++) {
            xs[r] = gather_round(m[r], starts[r], width, false);
        }
    } else {
        for (var r = 0u; r < ROUNDS; r++) {
            xs[r] = gather_round(m[r], starts[r], width, true);
        }
    }
#endif
#endif
    for (var r = 0u; r < ROUNDS; r++) {
        let q = r * WG + li;
#if FUSED_BWD
        // Each round's g is loaded before its gathers, so its DRAM latency overlaps theirs (after the
        // deposit, the round waited for the gathers, then for g). On an H100 (201M BF16, one call, two
        // runs each, 32 registers either way): dL/dz only 0.3512 -> 0.3341 ms at ρ = 0.176 (-4.8 %),
        // -3.3 % at 0.05, -2.7 % at 0.5; with `a` -0.4 to -1.0 % (docs/PERFORMANCE.md, twenty-ninth
        // session). Every round's g loaded at the kernel's start held 16 more registers and was far
        // slower (tenth session).
        let g = load_g(tile, q);
#endif
#if BITS32
        let mr = mrot & ROUND_BITS_MASK;
        mrot >>= EPV;
        let k0 = srot.x & 0xffffu;
        srot = vec4<u32>(srot.y, srot.z, srot.w, srot.x >> 16u);
        var v = deposit_round(mr, gather_tile_round(mr, k0, width, in_binding), width);
#else
        let mr = m[r];
#if FUSED_BWD
        // One round at a time, not two (the two-round form held 32 registers, this one 38: not an
        // occupancy gain): dL/dz only 0.406 / 0.378 / 0.367 -> 0.343 / 0.339 / 0.336 ms at ρ = 0.5 /
        // 0.176 / 0.05, with `a` 0.512 / 0.481 / 0.467 -> 0.435 / 0.431 / 0.429 (201M BF16 on the H200;
        // sign-packed 0.382 -> 0.359 and 0.478 -> 0.454 at 0.05; docs/PERFORMANCE.md, eighteenth session).
        xs[r] = gather_tile_round(mr, starts[r], width, in_binding);
#endif
        var v = deposit_round(mr, xs[r], width);
#endif
#if FP8_STORE
        v = fp8_lut_vec(v);
#endif
#if FUSED_BWD
        if p.write_a != 0u {
            let a = act_vec(v, act_of());
            if tile < p.full_tiles {
                a4[tile * VECS_PER_TILE + q] = a;
            } else {
                for (var k4 = 0u; k4 < 4u; k4++) {
                    let w = q * 4u + k4;
                    let first = w * EPW;
                    if first < p.tail_len {
                        let n_in = min(p.tail_len - first, EPW);
                        let keep = select(~((1u << (n_in * BITS)) - 1u), 0u, n_in == EPW);
                        a_tail[w] = (a_tail[w] & keep) | (a[k4] & ~keep);
                    }
                }
            }
        }
        v = grad_vec(v, g, act_of());
#endif
        if tile < p.full_tiles {
            dst4[tile * VECS_PER_TILE + q] = v;
        } else {
            // Final partial tile: whole words, and a read-modify-write of a last word the tensor only
            // partly covers, so bytes past the range are preserved.
            let elems = p.tail_len;
            for (var k4 = 0u; k4 < 4u; k4++) {
                let w = q * 4u + k4;
                let first = w * EPW;
                if first < elems {
                    let n_in = min(elems - first, EPW);
                    if n_in == EPW {
                        dst_tail[w] = v[k4];
                    } else {
                        let keep = ~((1u << (n_in * BITS)) - 1u);
                        dst_tail[w] = (dst_tail[w] & keep) | (v[k4] & ~keep);
                    }
                }
            }
        }
    }
}
