// Compress one chunk of a tensor: mask + tile table + compacted values, in one pass over the input.
//
// Each workgroup takes one tile, builds the tile's mask and compacts its nonzeros into workgroup
// memory, and finds the tile's output offset with a chained scan over the per-tile status words. The scan uses *decoupled fallback* (Smith, Levien, Owens, SPAA 2025): a
// workgroup whose look-back stalls on a predecessor that has not published yet recomputes that
// predecessor's size from the input itself and publishes it, so no workgroup ever depends on another
// one making progress. Every inter-workgroup message is one 32-bit atomic word holding both the flag and
// the value, so no ordering between different memory locations is assumed either.
//
// Status word of tile t: bits 30-31 flag (0 none, 1 aggregate, 2 inclusive prefix), bits 0-29 value words.
// Output bytes are deterministic: they do not depend on which workgroup handled which tile.
//
// UNORDERED (FORMAT.md §7 "Unordered"): no chain at all. Tile t is workgroup t, and it claims its value
// words with one atomicAdd on a counter (scan[1]); the table records where each tile landed. Nothing
// waits on another workgroup, so no forward-progress assumption is made; bytes depend on the order the
// tiles reached the counter, decoded tensors do not (decoders follow the table).
//
// The CPU port of this stage is src/cpu/compress.rs.

#if STAGE16
enable wgpu_int16;
#else
#if DIRECT
#if !BITS32
enable wgpu_int16;
#endif
#endif
#endif

#include "lib/tile.wgsl"

struct Params {
    tiles: u32,       // tiles in this chunk
    full_tiles: u32,  // tiles read through `src4` (all but a final partial tile)
    tail_len: u32,    // elements of the final partial tile, 0 if none
    sign_pack: u32,   // 1: store values without the sign bit; a set sign bit is an error
    table_idx: u32,   // index in `head` of this chunk's first table entry
    mask_idx: u32,    // index in `mask_out` of this chunk's first mask word
    val_idx: u32,     // index in `vals_out` of this chunk's value base
    val_base: u32,    // value-word offset of this chunk's base from the values section (table entries add it)
    hdr_idx: u32,     // index in `head` of the header (finish)
    info: u32,        // header INFO word (finish)
    n_lo: u32,        // element count of the whole tensor (finish)
    n_hi: u32,
    slot: u32,        // arena mode: word index in `ctrl` of this tensor's slot descriptor
    act: u32,         // fused forward: 0 relu, 1 relu²
    values_offset: u32, // arena mode: words before the values section (header + table + mask)
    fp8_fmt: u32,     // FP8 storage: 0 e4m3fn, 1 e5m2
}

const FLAG_AGG: u32 = 0x40000000u;
const FLAG_INC: u32 = 0x80000000u;
const VALUE_BITS: u32 = 0x3fffffffu;
const SIGN_BIT_SET: u32 = 1u;
// scan[] layout: [0] status bits, [1] ticket, [2 + t] status word of tile t.
const SCAN_STATUS: u32 = 0u;
const SCAN_TICKET: u32 = 1u;
// UNORDERED: scan[1] is the chunk's value-word counter instead of the ticket.
const SCAN_VALUES: u32 = 1u;
const SCAN_TILES: u32 = 2u;

#include "lib/arena_ctrl.wgsl"

// Look-back attempts on an unpublished predecessor before falling back to recomputing it.
override SPIN_LIMIT: u32 = 64u;
// Status words each look-back lane reads per round (subgroup path), at most LOOKBACK_MAX.
const LOOKBACK_MAX: u32 = 8u;
override LOOKBACK_PER_LANE: u32 = 1u;

#if SHARED_IO
// SHARED_IO: the caller's input ranges share a buffer with an output range (pooled tensors). wgpu refuses
// a buffer bound read-only and read-write in one dispatch, so the inputs are declared read_write (and only
// read); the ranges themselves never overlap (checked on the host).
@group(0) @binding(0) var<storage, read_write> src4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> src_tail: array<u32>;
#else
@group(0) @binding(0) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> src_tail: array<u32>;
#endif
@group(0) @binding(5) var<storage, read_write> scan: array<atomic<u32>>;
@group(0) @binding(6) var<uniform> p: Params;

// SIGN_MODE, ACT_MODE: AT_RUN_TIME reads sign packing and the fused forward's activation from the
// params; a value (0 / 1; an activation code) fixes it for a pipeline the host builds for calls of that
// mode (kernels.rs `Modes`), and ALL_FULL (lib/dense_in.wgsl) drops the partial tile's code from
// dispatches without one, so the driver folds the other modes' code away. Measured on an H100 (201M
// BF16 = 49,152 whole tiles, unordered, unpacked, ReLU², two runs each in one call, against all read at
// run time; benches/results/ab-thirtyfirst, call 2): fused forward 0.4772 / 0.4070 / 0.3593 -> 0.4291
// / 0.3573 / 0.3354 ms at ρ = 0.5 / 0.176 / 0.05 (-10.1 / -12.2 / -6.6 %), compress 0.2698 / 0.2166 /
// 0.1996 -> 0.2578 / 0.2078 / 0.1939 (-4.4 / -4.1 / -2.8 %). The three go together: without ALL_FULL
// the fused forward gained only +1.3 / -3.0 / -1.5 %, and with the activation read at run time it was
// slower than today's kernel (+0 / +3.9 / +9.5 %, call 3). The driver's code for the BF16 fused
// forward: 31,488 -> 20,736 bytes, 32 -> 35 registers.
#include "lib/modes.wgsl"
override ACT_MODE: u32 = AT_RUN_TIME;
fn act_of() -> u32 { return select(ACT_MODE, p.act, ACT_MODE == AT_RUN_TIME); }

// DIRECT (unpacked 16- and 32-bit values, chosen by the host): no staging at all. Each value is stored
// straight into its place in the stream by the thread that owns it, 16-bit values through a `u16` view
// of the stream (`Features::SHADER_I16`), 32-bit ones as words. `UNIT`: the values per stream word.
#if BITS32
const UNIT: u32 = 1u;
#else
const UNIT: u32 = 2u;
#endif

#if ARENA
// Arena mode: header, table, mask and values all live in one arena binding at a word offset (`base`)
// that only the GPU knows: `arena.wgsl:reserve` wrote it into the slot descriptor in `ctrl`.
@group(0) @binding(7) var<storage, read_write> ctrl: array<atomic<u32>>;
var<private> base: u32;
#if DIRECT
#if BITS32
@group(0) @binding(2) var<storage, read_write> arena: array<u32>;
fn put_word(i: u32, v: u32) { arena[base + i] = v; }
fn put_unit(i: u32, v: u32) { arena[base + i] = v; }
#else
// The arena seen as 16-bit halves (little-endian: the low half of word i is half 2i).
@group(0) @binding(2) var<storage, read_write> arena: array<u16>;
fn put_word(i: u32, v: u32) {
    arena[2u * (base + i)] = u16(v & 0xffffu);
    arena[2u * (base + i) + 1u] = u16(v >> 16u);
}
fn put_unit(i: u32, v: u32) { arena[2u * base + i] = u16(v & 0xffffu); }
#endif
#else
@group(0) @binding(2) var<storage, read_write> arena: array<u32>;
fn put_word(i: u32, v: u32) { arena[base + i] = v; }
#endif
fn put_head(i: u32, v: u32) { put_word(i, v); }
fn put_mask(i: u32, v: u32) { put_word(i, v); }
fn put_val(i: u32, v: u32) { put_word(i, v); }
#else
@group(0) @binding(2) var<storage, read_write> head: array<u32>;
@group(0) @binding(3) var<storage, read_write> mask_out: array<u32>;
fn put_head(i: u32, v: u32) { head[i] = v; }
fn put_mask(i: u32, v: u32) { mask_out[i] = v; }
#if DIRECT
#if BITS32
@group(0) @binding(4) var<storage, read_write> vals_out: array<u32>;
fn put_unit(i: u32, v: u32) { vals_out[i] = v; }
#else
@group(0) @binding(4) var<storage, read_write> vals_out: array<u16>;
fn put_unit(i: u32, v: u32) { vals_out[i] = u16(v & 0xffffu); }
#endif
#else
@group(0) @binding(4) var<storage, read_write> vals_out: array<u32>;
fn put_val(i: u32, v: u32) { vals_out[i] = v; }
#endif
#endif

#if DIRECT
// Stores the elements of word `w` selected by `bits` at stream units `k`, `k + 1`, ...; returns the
// unit after them.
fn direct_word(w: u32, bits: u32, k: u32) -> u32 {
    var s = k;
    for (var e = 0u; e < EPW; e++) {
        if ((bits >> e) & 1u) != 0u {
            put_unit(s, (w >> (e * BITS)) & ELEM_MASK);
            s += 1u;
        }
    }
    return s;
}
#endif

#if FUSED_FWD
// Fused forward (BF16 only): the input is the pre-activation z; the kernel compresses r = relu(z) and
// writes the dense activation a = r or r² for the next GEMM, at the same element positions as z.
#include "lib/act.wgsl"
@group(0) @binding(8) var<storage, read_write> a4: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read_write> a_tail: array<u32>;

// Stores the words of vec `q` of the partial tile that hold elements below `len`; a last word the
// tensor only partly covers is merged so bytes past the range survive.
fn store_tail_vec(q: u32, v: vec4<u32>, len: u32) {
    for (var k = 0u; k < 4u; k++) {
        let w = q * 4u + k;
        let first = w * EPW;
        if first < len {
            let n_in = min(len - first, EPW);
            if n_in == EPW {
                a_tail[w] = v[k];
            } else {
                let keep = ~((1u << (n_in * BITS)) - 1u);
                a_tail[w] = (a_tail[w] & keep) | (v[k] & ~keep);
            }
        }
    }
}
#endif

#if FP8_STORE
// FP8 storage (with FUSED_FWD): the tile geometry stays that of the BF16 z and a (16-bit lanes); the
// stored r becomes q = fp8(r * scale), kept in the low byte of each 16-bit lane, so the mask (from q: an
// r that rounds to zero is a zero) and the compaction work unchanged with 8- (7-) bit values. The scale
// comes from the slot descriptor (`arena.wgsl:reserve`); every tile atomicMax-es the amax of r into the
// slot (non-negative f32 bits order like u32), which `finish` copies into the header with the scale.
#include "lib/fp8.wgsl"
const STORE_BITS: u32 = 8u;
var<private> fp8_scale: u32;
// The 16-bit lanes of a vec4 whose element bits (`valid_bits`, element i of the vec at bit i) are set.
fn lane_mask16(bits: u32) -> vec4<u32> {
    var m = vec4<u32>(0u);
    for (var k = 0u; k < 4u; k++) {
        m[k] = select(0u, 0xffffu, (bits & (1u << (2u * k))) != 0u)
            | select(0u, 0xffff0000u, (bits & (2u << (2u * k))) != 0u);
    }
    return m;
}
var<workgroup> wg_amax: atomic<u32>;
#if ARENA
fn fp8_slot_scale() -> u32 { return atomicLoad(&ctrl[p.slot + SLOT_SCALE]); }
fn fp8_slot_amax() -> u32 { return atomicLoad(&ctrl[p.slot + SLOT_AMAX]); }
fn fp8_record_amax(a: u32) { atomicMax(&ctrl[p.slot + SLOT_AMAX], a); }
#else
// FP8 storage exists only in the arena (the scale lives in a slot descriptor); these stubs only keep
// the variants that are never built valid WGSL.
fn fp8_slot_scale() -> u32 { return 0x3f800000u; }
fn fp8_slot_amax() -> u32 { return 0u; }
fn fp8_record_amax(a: u32) {}
#endif
#else
const STORE_BITS: u32 = BITS;
#endif

// Values are staged in passes of consecutive rounds whose values fit what one full round
// (WG * EPV elements, all nonzero) needs, not a whole tile: workgroup memory is what limits how many
// workgroups an SM keeps resident on the H200, and a whole tile's 8 KB of staging halved the kernel's
// speed (docs/PERFORMANCE.md). A pass's stream is contiguous, so its complete words are stored as soon
// as it is staged and its last partial word is carried into the next pass.
#if !DIRECT
#if STAGE16
// STAGE16 (`Features::SHADER_I16`): one value per `u16` slot, written with a plain store by the one
// thread that owns it, instead of OR-ing packed fields into `u32` words with workgroup atomics. The
// stores take fewer instructions per value than `compact_word` plus `atomicOr`; the stream words are
// gathered from the slots when they are stored. A pass holds the values carried from the previous
// pass (those of its partial last word, at most CARRY_MAX; slot 0's value starts `oc` bits before the
// pass's first word) and up to one full round; GATHER_K - 1 zero slots after the last value let the
// gather read past it without a bound test.
const WIDTH_MIN: u32 = STORE_BITS - 1u;
const CARRY_MAX: u32 = (32u + WIDTH_MIN - 1u) / WIDTH_MIN;
const GATHER_K: u32 = (2u * WIDTH_MIN + 30u) / WIDTH_MIN;
const STAGE_VALUES: u32 = WG * EPV + CARRY_MAX;
const STAGE_SLOTS: u32 = STAGE_VALUES + GATHER_K - 1u;
var<workgroup> stage16: array<u16, STAGE_SLOTS>;

// `b / width` for the two widths a stream can have, with constant divisors.
fn div_width(b: u32, width: u32) -> u32 {
    return select(b / WIDTH_MIN, b / STORE_BITS, width == STORE_BITS);
}

// Stages the elements of word `w` selected by `bits` at slots `slot`, `slot + 1`, ...; returns the
// slot after them.
fn stage_word(w: u32, bits: u32, slot: u32, vmask: u32) -> u32 {
    var s = slot;
    for (var e = 0u; e < EPW; e++) {
        if ((bits >> e) & 1u) != 0u {
            stage16[s] = u16((w >> (e * BITS)) & vmask);
            s += 1u;
        }
    }
    return s;
}

// Word `i` of the pass's stream, whose slot 0 value starts `oc` bits before the stream.
fn gather_word(i: u32, oc: u32, width: u32) -> u32 {
    if width == 16u {
        return u32(stage16[2u * i]) | (u32(stage16[2u * i + 1u]) << 16u);
    }
    // Each packed width with the width a constant, so the division and every shift bound fold.
    if width == WIDTH_MIN {
        return gather_packed(i, oc, WIDTH_MIN);
    }
    // Unpacked 8-bit values (16-bit ones returned above, so width 16 never reaches gather_packed).
    return gather_packed(i, oc, STORE_BITS);
}

// gather_word for a packed `width` (a constant at each call): slot j + k starts at bit
// sh = k·width − o of the word, with (k − 1)·width < sh <= k·width since 0 <= o < width. Where
// k·width < 32 the shift is always in range; otherwise 16 <= sh <= 47 (for the widths that reach it:
// 7, 8 and 15) and the slot's 16-bit value is shifted in two steps, which leaves nothing once
// sh >= 32 (a single WGSL shift by sh would take sh mod 32): no per-slot test. Measured on the H200 (201M, ρ = 0.5 / 0.176 / 0.05, against the
// runtime width with a test per slot): sign-packed BF16 compress 0.325 / 0.233 / 0.210 -> 0.311 / 0.230 /
// 0.210 ms, e4m3 0.230 / 0.186 / 0.172 -> 0.204 / 0.177 / 0.168 (benches/results/ab-fifteenth).
fn gather_packed(i: u32, oc: u32, width: u32) -> u32 {
    let b = i * 32u + oc;
    let j = b / width;
    let o = b - j * width;
    var w = u32(stage16[j]) >> o;
    for (var k = 1u; k < GATHER_K; k++) {
        let x = u32(stage16[j + k]);
        let sh = k * width - o;
        if k * width < 32u {
            w |= x << sh;
        } else {
            w |= (x << 16u) << (sh - 16u);
        }
    }
    return w;
}
#else
// Packed `u32` staging words (devices without 16-bit types): a round's values plus the carried bits
// (< 32), which go to word 0 of the next pass.
const STAGE_WORDS: u32 = WG * EPV * BITS / 32u + 1u;
var<workgroup> stage: array<atomic<u32>, STAGE_WORDS>;
#endif
#endif
#if UNORDERED && SUBGROUP && !FP8_STORE
// LANE_MASK (the unordered subgroup path without FP8 storage): each mask word is assembled across the
// lanes that hold its elements by subgroup shuffles and stored straight from registers (`lane_masks`),
// so there is no workgroup mask, no barrier before the loads and no mask store after the scan (516 B
// less workgroup memory). Measured on an H100 (201M BF16, ρ = 0.5 / 0.176 / 0.05, unordered, A/B in one
// call, two runs each; benches/results/ab-thirtieth): fused forward 0.4936 / 0.4234 / 0.3944 -> 0.4868
// / 0.4065 / 0.3671 ms (-1.4 / -4.0 / -6.9 %), compress 0.2716 / 0.2185 / 0.2051 -> 0.2671 / 0.2144 /
// 0.2001 (-1.7 / -1.9 / -2.4 %), at the same register counts (32 for the BF16 fused forward).
// Below, `#if UNORDERED && SUBGROUP && !FP8_STORE` marks LANE_MASK code, and the same test with an empty
// first branch and an `#else` marks what only the other variants keep (the preprocessor has no `||`).
#else
var<workgroup> wg_mask: array<atomic<u32>, TILE_MASK_WORDS>;
#endif
#if UNORDERED && SUBGROUP && !FP8_STORE
#else
var<workgroup> wg_tile: u32;
#endif
// Look-back result: `state` 0 done (then `prefix` is the tile's exclusive prefix), else 1 + the tile
// that needs the fallback. One struct so one uniform load (two barriers) publishes both. Unordered
// tiles use it for their claim: `prefix` the claimed place, `state` bit 0 a failed tensor (write
// nothing, CLAIM_DEAD), bit 1 an arena tile whose words would pass the slot's limit (CLAIM_PAST_LIMIT).
struct LookOut {
    state: u32,
    prefix: u32,
}
const CLAIM_DEAD: u32 = 1u;
const CLAIM_PAST_LIMIT: u32 = 2u;
var<workgroup> wg_look: LookOut;
var<workgroup> wg_count: atomic<u32>;

#if !DIRECT
#if !STAGE16
// The fields of word `w`'s elements selected by `bits` (one bit per element), `width` bits each,
// packed from bit 0 in element order; and how many there are. At most 32 bits (EPW * width <= 32).
fn compact_word(w: u32, bits: u32, width: u32) -> vec2<u32> {
#if BITS32
    // A shift by 32 is a shift by 0 in WGSL: width 32 needs its all-ones mask spelled out.
    let vmask = select((1u << width) - 1u, 0xffffffffu, width >= 32u);
#else
    let vmask = (1u << width) - 1u;
#endif
    var y = 0u;
    var c = 0u;
    for (var e = 0u; e < EPW; e++) {
        let take = ((bits >> e) & 1u) != 0u;
        y |= select(0u, ((w >> (e * BITS)) & vmask) << (c * width), take);
        c += select(0u, 1u, take);
    }
    return vec2<u32>(y, c);
}

// Stages the elements of word `w` selected by `bits` at bit `pos` of the round's staging words;
// returns the bit position after them.
fn emit_word(w: u32, bits: u32, pos: u32, width: u32) -> u32 {
    if bits == 0u {
        return pos;
    }
    let yc = compact_word(w, bits, width);
    let wi = pos >> 5u;
    let sh = pos & 31u;
    atomicOr(&stage[wi], yc.x << sh);
    if sh + yc.y * width > 32u {
        atomicOr(&stage[wi + 1u], yc.x >> (32u - sh));
    }
    return pos + yc.y * width;
}
#endif
#endif

#include "lib/dense_in.wgsl"

// The stored form of vec `q` of tile `t`: the input itself, or in the fused forward relu(z), and
// under FP8 storage its FP8 code q. What the tile's mask and values are made of.
fn stored_vec(t: u32, q: u32) -> vec4<u32> {
    var x = load_vec(t, q);
#if FUSED_FWD
    x = relu_vec(x);
#endif
#if FP8_STORE
    // q is never negative (NaN -> 0x7f / 0x7e), so its lanes' sign bits stay clear.
    x = fp8_quant_vec(x, fp8_scale, p.fp8_fmt);
#endif
    return x;
}

// The extent of the staging pass that starts at round `r0` with `start` units already staged: round
// `r0` and as many following rounds as fit `cap` units, a round's values costing `unit` each.
// Returns (the round after the pass, the units staged at its end). Both stagings use it: slots
// (`unit` 1) and packed bits (`unit` the width).
#if BITS32
fn pass_extent(totals: array<u32, 8>, r0: u32, start: u32, unit: u32, cap: u32) -> vec2<u32> {
#else
fn pass_extent(totals: array<u32, 4>, r0: u32, start: u32, unit: u32, cap: u32) -> vec2<u32> {
#endif
    var end = start;
    var r1 = r0;
    for (var r = 0u; r < ROUNDS; r++) {
        if r == r1 && (r == r0 || end + totals[r] * unit <= cap) {
            end += totals[r] * unit;
            r1 += 1u;
        }
    }
    return vec2<u32>(r1, end);
}

// `stored_vec` where only the elements the mask selects are used (the staging's re-read): in the
// fused forward z itself, since relu(z) equals z on every element it keeps nonzero (FP8 storage
// keeps the relu: its quantization is not checked for negative lanes).
fn staged_vec(t: u32, q: u32) -> vec4<u32> {
#if FUSED_FWD
#if !FP8_STORE
    return load_vec(t, q);
#else
    return stored_vec(t, q);
#endif
#else
    return stored_vec(t, q);
#endif
}

#if !DIRECT
#if STAGE16
// Stages the values of vec `q` of tile `t` that `mr` selects (read again, from the cache) at slots
// `slot`, `slot + 1`, ...
fn stage_round(t: u32, q: u32, mr: u32, slot: u32, vmask: u32) {
    let v = staged_vec(t, q);
    // The value mask (a full element, or one bit less under sign packing) as a constant in each copy, so
    // a full element's mask folds into the `u16` store. Measured on the H200 (201M BF16, unordered,
    // ρ = 0.5 / 0.176 / 0.05, the same binary with the mask passed at run time): compress 0.258 / 0.207 /
    // 0.197 -> 0.252 / 0.202 / 0.191 ms, sign-packed 0.312 / 0.230 / 0.209 -> 0.308 / 0.225 / 0.206; the
    // fused forward unchanged (benches/results/ab-fifteenth, call 5).
    if vmask == FULL_VMASK {
        stage_vec(v, mr, slot, FULL_VMASK);
    } else {
        stage_vec(v, mr, slot, FULL_VMASK >> 1u);
    }
}

// The value mask of unpacked values (`(1 << STORE_BITS) - 1`, written so 32 bits does not overflow).
const FULL_VMASK: u32 = 0xffffffffu >> (32u - STORE_BITS);

// Stages the elements of `v` that `mr` selects, `vmask` of each, at slots `slot`, `slot + 1`, ...
fn stage_vec(v: vec4<u32>, mr: u32, slot: u32, vmask: u32) {
    var k = stage_word(v.x, mr & WORD_BITS_MASK, slot, vmask);
    k = stage_word(v.y, (mr >> EPW) & WORD_BITS_MASK, k, vmask);
    k = stage_word(v.z, (mr >> (2u * EPW)) & WORD_BITS_MASK, k, vmask);
    stage_word(v.w, (mr >> (3u * EPW)) & WORD_BITS_MASK, k, vmask);
}

// Stages one pass: the `kc` values `cv` carried from the previous pass at slots 0 .. kc (thread 0),
// then the values of round `r0` and of as many following rounds as the slots hold, then the zero
// slots after them. Returns (the round after the pass, the values staged including the carried ones).
#if BITS32
// (Never run: 32-bit values do not fit u16 slots, and the host builds no STAGE16 variant of BITS32.)
fn stage_pass(t: u32, li: u32, lid: u32, m: array<u32, ROUNDS>, totals: array<u32, 8>, excl: array<u32, 8>,
              r0: u32, kc: u32, cv: array<u32, CARRY_MAX>, vmask: u32) -> vec2<u32> {
#else
fn stage_pass(t: u32, li: u32, lid: u32, m: array<u32, ROUNDS>, totals: array<u32, 4>, excl: array<u32, 4>,
              r0: u32, kc: u32, cv: array<u32, CARRY_MAX>, vmask: u32) -> vec2<u32> {
#endif
    let extent = pass_extent(totals, r0, kc, 1u, STAGE_VALUES);
    let r1 = extent.x;
    let n = extent.y;
    var acc = kc;
    for (var r = 0u; r < ROUNDS; r++) {
        if r >= r0 && r < r1 {
            stage_round(t, r * WG + li, m[r], acc + excl[r], vmask);
            acc += totals[r];
        }
    }
    if lid == 0u {
        for (var k = 0u; k < CARRY_MAX; k++) {
            if k < kc {
                stage16[k] = u16(cv[k]);
            }
        }
        for (var k = 0u; k < GATHER_K - 1u; k++) {
            stage16[n + k] = u16(0u);
        }
    }
    return vec2<u32>(r1, n);
}
#endif
#endif

#if UNORDERED && SUBGROUP && !FP8_STORE
// Stores the tile's mask words from the threads' per-round bits `m`, with no workgroup memory. Mask
// word w of round r gathers the bits of the ROUNDS consecutive lanes li = 32/EPV * k .. (there are as
// many lanes to a word as rounds: 32 / EPV == 4096 / (WG * EPV)). A butterfly over those lanes swaps
// halves of the rounds at each step (log2 ROUNDS shuffles, 3 for BF16) so lane j of the group ends
// with round j's whole word, and every thread stores one word. Subgroups hold whole groups (the host
// takes this path only where the smallest subgroup has at least ROUNDS lanes).
fn lane_masks(tile: u32, li: u32, m: array<u32, ROUNDS>, store: bool) {
    let j = li % ROUNDS;
    var v: array<u32, ROUNDS>;
    for (var r = 0u; r < ROUNDS; r++) {
        v[r] = m[r] << (j * EPV);
    }
    // Before the step of distance d, v[i] holds (part of) round i * d + j % d; the pair v[2i], v[2i + 1]
    // differs in bit d of the round, and the lane keeps the one whose bit d is its own.
    for (var d = 1u; d < ROUNDS; d <<= 1u) {
        let mine = (j & d) != 0u;
        for (var i = 0u; i < ROUNDS / 2u; i++) {
            if i < ROUNDS / (2u * d) {
                let keep = select(v[2u * i], v[2u * i + 1u], mine);
                let send = select(v[2u * i + 1u], v[2u * i], mine);
                v[i] = keep | subgroupShuffleXor(send, d);
            }
        }
    }
    let tile_len = select(p.tail_len, TILE, full_tile(tile));
    let mwords = (tile_len + 31u) / 32u;
    let w = j * (WG * EPV / 32u) + li / ROUNDS;
    if store && w < mwords {
        put_mask(p.mask_idx + tile * TILE_MASK_WORDS + w, v[0]);
    }
}
#else
// Stores the tile's mask words (complete once the scan's barrier has passed).
fn store_mask(tile: u32, lid: u32) {
    let tile_len = select(p.tail_len, TILE, full_tile(tile));
    let mwords = (tile_len + 31u) / 32u;
    if lid < mwords {
        put_mask(p.mask_idx + tile * TILE_MASK_WORDS + lid, atomicLoad(&wg_mask[lid]));
    }
}
#endif

@compute @workgroup_size(128)
fn compress(
    @builtin(local_invocation_index) lid: u32,
#if UNORDERED
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
#endif
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
    let li = logical_index(lid, sg_id, sg_lane, sg_size);
#if ARENA
    base = atomicLoad(&ctrl[p.slot + SLOT_BASE]);
#endif
#if FP8_STORE
    fp8_scale = fp8_slot_scale();
    if lid == 0u {
        atomicStore(&wg_amax, 0u);
    }
#endif
    // Tiles are handed out from an atomic ticket in the order workgroups start, so a workgroup only
    // waits on tiles that started before it. Tiles by workgroup id were tried: on lavapipe, which hands
    // each of its threads a contiguous half of the grid, the first workgroup of the second half then
    // spins on tiles that have not started, and after long spins read wrong prefixes (reproduced with
    // spin limits of 64 and 100000, not with 1 or 2); with the ticket every run is exact. See
    // docs/PERFORMANCE.md.
#if UNORDERED && SUBGROUP && !FP8_STORE
    // No barrier before the loads: the (2-D) workgroup id is the tile, and nothing in workgroup memory
    // needs clearing first but the packed staging words, which the scan's barrier publishes. A tensor
    // whose reservation already failed stores no mask word here (every thread reads the status), and
    // its claim below is skipped.
    let tile = wid.x + wid.y * nwg.x;
    if tile >= p.tiles {
        return;
    }
#if ARENA
    let alive = atomicLoad(&ctrl[p.slot + SLOT_STATUS]) == 0u;
#else
    let alive = true;
#endif
#if !DIRECT && !STAGE16
    for (var i = lid; i < STAGE_WORDS; i += WG) {
        atomicStore(&stage[i], 0u);
    }
#endif
#else
    if lid == 0u {
#if UNORDERED
        // No workgroup waits on another, so tiles need no start order: the (2-D) workgroup id is the tile.
        wg_tile = wid.x + wid.y * nwg.x;
#else
        wg_tile = atomicAdd(&scan[SCAN_TICKET], 1u);
#endif
#if ARENA
        // A tensor whose reservation already failed writes nothing at all.
        if atomicLoad(&ctrl[p.slot + SLOT_STATUS]) != 0u {
            wg_tile = 0xffffffffu;
        }
#endif
    }
    // Clear the tile mask (and the packed staging words) while the ticket comes back.
#if !DIRECT && !STAGE16
    for (var i = lid; i < STAGE_WORDS; i += WG) {
        atomicStore(&stage[i], 0u);
    }
#endif
    atomicStore(&wg_mask[lid], 0u);
    let tile = workgroupUniformLoad(&wg_tile);
    if tile >= p.tiles {
        return;
    }
#endif

    // Read the tile for its mask and counts (the compaction below reads it again, from the cache).
    // Rounds and elements are indexed by loop counters with constant trip counts only (no
    // data-dependent vector indexing, which would send the vectors to local memory). The per-round
    // mask bits, counts and prefixes stay one register each: packed (all mask bits in one word, two
    // counts a word), the driver built the fused forward with 32 registers instead of 37 and it ran
    // 12-15 % slower on an H100, the compress unchanged; that forward depends on L1 hits for the re-read
    // (benches/results/experiments, thirty-seventh session).
    var m: array<u32, ROUNDS>;
    var signs = 0u;
#if FP8_STORE
    var amax = 0u;
#endif
    for (var r = 0u; r < ROUNDS; r++) {
        let q = r * WG + li;
        var x = load_vec(tile, q);
#if FUSED_FWD
        let ra = relu_act_vec(x, act_of());
        x = ra.r;
        let a = ra.a;
        if full_tile(tile) {
            a4[tile * VECS_PER_TILE + q] = a;
        } else {
            store_tail_vec(q, a, p.tail_len);
        }
#endif
#if FP8_STORE
        // Only the tensor's elements count: a partial tile's last word may hold one past its end.
        var xa = x;
        if !full_tile(tile) {
            xa &= lane_mask16(valid_bits(tile, q));
        }
        amax = max(amax, amax_vec(xa));
        // q is never negative (NaN -> 0x7f / 0x7e), so its lanes' bit 15 tested below stays clear.
        x = fp8_quant_vec(x, fp8_scale, p.fp8_fmt);
#endif
        let mr = nz_bits(x) & valid_bits(tile, q);
        m[r] = mr;
        if sign_pack_of() != 0u {
            signs |= sign_bits(x) & mr;
        }
#if UNORDERED && SUBGROUP && !FP8_STORE
#else
        if mr != 0u {
            atomicOr(&wg_mask[mask_word_of(r, li)], mr << mask_shift_of(li));
        }
#endif
    }
#if UNORDERED && SUBGROUP && !FP8_STORE
    lane_masks(tile, li, m, alive);
#endif
#if BITS32
    let counts = pack_counts(m);
#else
#if BITS8
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), 0u, 0u);
#else
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), countOneBits(m[2]), countOneBits(m[3]));
#endif
#endif
#if FP8_STORE
    atomicMax(&wg_amax, amax);
#endif
    let width = STORE_BITS - sign_pack_of();
    if sign_pack_of() != 0u && signs != 0u {
        atomicOr(&scan[SCAN_STATUS], SIGN_BIT_SET);
    }

    let s = wg_scan(counts, li, sg_lane, sg_size);
#if BITS32
    let tsum = s.total.x + s.total.y + s.total.z + s.total.w;
    let total = (tsum & 0xffffu) + (tsum >> 16u);
#else
    let total = s.total.x + s.total.y + s.total.z + s.total.w;
#endif
    let words = stream_words(total, width);
#if UNORDERED
    // One atomic claims the tile's place as soon as its size is known: its round trip then overlaps
    // the staging below instead of following it (measured on the H200, 201M BF16: 0.292 / 0.233 /
    // 0.224 -> 0.276 / 0.222 / 0.213 ms at ρ = 0.5 / 0.176 / 0.05, the fused forward 2% faster;
    // docs/PERFORMANCE.md).
    var claimed = 0u;
    var dead = 0u;
#if ARENA
    var limit = 0u;
#endif
    if lid == 0u {
#if ARENA && SUBGROUP && !FP8_STORE
        // LANE_MASK: the reservation's failure is read here, where one thread decides for the tile.
        dead = select(0u, CLAIM_DEAD, atomicLoad(&ctrl[p.slot + SLOT_STATUS]) != 0u);
#endif
#if ARENA
        // The slot's limit is loaded beside the claim, so whether the tile fits travels with its place
        // (CLAIM_PAST_LIMIT in LookOut.state below) instead of every thread loading the limit after the
        // claim's barrier: one L2 round trip fewer at the end of each tile. On the H200 (201M BF16, one call,
        // against two runs of the earlier form; benches/results/ab-thirtythird, call 1): the fused
        // forward 0.3319 / 0.2822 / 0.2718 -> 0.3295 / 0.2799 / 0.2696 ms at ρ = 0.5 / 0.176 / 0.05 (-0.7 /
        // -0.8 / -0.8 %).
        limit = atomicLoad(&ctrl[p.slot + SLOT_LIMIT]);
#endif
        if dead == 0u {
            claimed = atomicAdd(&scan[SCAN_VALUES], words);
        }
    }
#endif
#if !UNORDERED
    // Publish this tile's aggregate at once, so successors can look past it.
    if lid == 0u {
        atomicMax(&scan[SCAN_TILES + tile], select(FLAG_AGG, FLAG_INC, tile == 0u) | words);
    }
#endif
#if BITS32
    let totals = unpack_rounds(s.total);
    let excl = unpack_rounds(s.excl);
#else
    let totals = array<u32, 4>(s.total.x, s.total.y, s.total.z, s.total.w);
    let excl = array<u32, 4>(s.excl.x, s.excl.y, s.excl.z, s.excl.w);
#endif
#if !DIRECT
#if STAGE16
    // The first staging pass (at ρ <= 0.25 nearly always the whole tile) is staged now, between
    // publishing the aggregate and looking back, not after the look-back: the staging then fills the
    // time the predecessors need to publish theirs, and the look-back rarely waits (measured on the
    // H200: 0.310 -> 0.283 ms at ρ = 0.176, docs/PERFORMANCE.md). The look-back's barrier publishes
    // the slots.
    let vmask = (1u << width) - 1u;
    var cv: array<u32, CARRY_MAX>; // values carried to the next pass (thread 0 only)
    var staged = stage_pass(tile, li, lid, m, totals, excl, 0u, 0u, cv, vmask);
#endif
#endif

#if UNORDERED && SUBGROUP && !FP8_STORE
#else
#if DIRECT
    // The mask is complete since the scan's barrier: it is stored while the claim's atomic (or the
    // look-back) is in flight.
    store_mask(tile, lid);
#endif
#endif
#if UNORDERED
    // The claimed place reaches every thread; the uniform load is also the barrier that publishes the
    // staged slots (STAGE16) and the mask.
    if lid == 0u {
        var st = dead; // 0 or CLAIM_DEAD
#if ARENA
        if base + p.val_idx + claimed + words > limit {
            st |= CLAIM_PAST_LIMIT;
        }
#endif
        wg_look = LookOut(st, claimed);
    }
    let look_out = workgroupUniformLoad(&wg_look);
    if (look_out.state & CLAIM_DEAD) != 0u {
        return;
    }
    let prefix = look_out.prefix;
#else
    // Chained scan with decoupled fallback: find the sum of the words of all earlier tiles.
    var look = tile;  // next tile to inspect is look - 1 (the looking threads' private cursor)
    var acc = 0u;
    var prefix = 0u;
    loop {
#if SUBGROUP
        // The first subgroup looks back over a window of LOOKBACK_PER_LANE * subgroup-size predecessors
        // at once: lane l reads the statuses of tiles look-1-l*K ... look-K-l*K (window index
        // i = l*K + j, nearest first). Why a wide window: when tiles start faster than one look-back
        // round trip resolves a window, the unresolved depth grows until the start rate drops to
        // window / round-trip, so the window bounds the codec's tile rate.
        if sg_id == 0u {
            var state = 0u;
            var spins = 0u;
            loop {
                if look == 0u {
                    break;
                }
                var st: array<u32, LOOKBACK_MAX>;
                var my_inc = 0xffffffffu;
                var my_nr = 0xffffffffu;
                for (var j = 0u; j < LOOKBACK_PER_LANE; j++) {
                    let i = sg_lane * LOOKBACK_PER_LANE + j;
                    var w = FLAG_INC; // past tile 0 reads as an inclusive prefix of 0
                    if i < look {
                        w = atomicLoad(&scan[SCAN_TILES + look - 1u - i]);
                    }
                    st[j] = w;
                }
                for (var j = 0u; j < LOOKBACK_PER_LANE; j++) {
                    let i = sg_lane * LOOKBACK_PER_LANE + j;
                    if (st[j] & FLAG_INC) != 0u {
                        my_inc = min(my_inc, i);
                    }
                    if (st[j] & (FLAG_INC | FLAG_AGG)) == 0u {
                        my_nr = min(my_nr, i);
                    }
                }
                let first_inc = subgroupMin(my_inc);
                let first_nr = subgroupMin(my_nr);
                // Sum the statuses up to and including the first inclusive prefix, or up to the first
                // unpublished one.
                let stop = select(min(first_nr, sg_size * LOOKBACK_PER_LANE), first_inc + 1u, first_inc < first_nr);
                var part = 0u;
                for (var j = 0u; j < LOOKBACK_PER_LANE; j++) {
                    if sg_lane * LOOKBACK_PER_LANE + j < stop {
                        part += st[j] & VALUE_BITS;
                    }
                }
                acc += subgroupAdd(part);
                if first_inc < first_nr {
                    break;
                }
                look -= stop;
                if stop > 0u {
                    spins = 0u;
                    continue;
                }
                spins++;
                if spins >= SPIN_LIMIT {
                    state = look; // tile look - 1 needs the fallback
                    break;
                }
            }
            if sg_lane == 0u {
                wg_look = LookOut(state, acc);
                atomicStore(&wg_count, 0u);
            }
        }
#else
        if lid == 0u {
            var state = 0u;
            var spins = 0u;
            loop {
                if look == 0u {
                    break;
                }
                let st = atomicLoad(&scan[SCAN_TILES + look - 1u]);
                if (st & FLAG_INC) != 0u {
                    acc += st & VALUE_BITS;
                    break;
                }
                if (st & FLAG_AGG) != 0u {
                    acc += st & VALUE_BITS;
                    look -= 1u;
                    spins = 0u;
                    continue;
                }
                spins++;
                if spins >= SPIN_LIMIT {
                    state = look; // tile look - 1 needs the fallback
                    break;
                }
            }
            wg_look = LookOut(state, acc);
            atomicStore(&wg_count, 0u);
        }
#endif
        let look_out = workgroupUniformLoad(&wg_look);
        let need = look_out.state;
        if need == 0u {
            prefix = look_out.prefix;
            break;
        }
        // Fallback: count the stalled predecessor's nonzeros from its input (always a full tile).
        let ft = need - 1u;
        var c = 0u;
        for (var r = 0u; r < ROUNDS; r++) {
            let fx = stored_vec(ft, r * WG + li);
            c += countOneBits(nz_bits(fx));
        }
        atomicAdd(&wg_count, c);
        workgroupBarrier();
        // Every thread reads the count before the next look-back round may reset it (that round runs on
        // the first subgroup, which need not contain local invocation 0).
        let fallback_count = atomicLoad(&wg_count);
        workgroupBarrier();
        if lid == 0u {
            atomicMax(&scan[SCAN_TILES + ft], FLAG_AGG | stream_words(fallback_count, width));
        }
    }
    if lid == 0u && tile != 0u {
        atomicMax(&scan[SCAN_TILES + tile], FLAG_INC | (prefix + words));
    }
#endif

    // Only now compact the values (the look-back above went first so successors see this tile's
    // inclusive prefix as early as possible), one round at a time. `rbit`: the round's first bit in
    // the tile's stream; the staging words start at word rbit / 32 of the stream.
    if lid == 0u {
        put_head(p.table_idx + tile, p.val_base + prefix);
#if FP8_STORE
        fp8_record_amax(atomicLoad(&wg_amax));
#endif
    }
#if UNORDERED && SUBGROUP && !FP8_STORE
#else
#if !DIRECT
    store_mask(tile, lid);
#endif
#endif
    let out = p.val_idx + prefix;
    var fits = true;
#if ARENA
    // Never write past the arena's end: flag the overflow instead (the scan above stays consistent).
#if UNORDERED
    fits = (look_out.state & CLAIM_PAST_LIMIT) == 0u;
#else
    fits = base + out + words <= atomicLoad(&ctrl[p.slot + SLOT_LIMIT]);
#endif
    if !fits && lid == 0u {
        atomicOr(&ctrl[p.slot + SLOT_STATUS], STATUS_OVERFLOW);
    }
#endif
#if DIRECT
    // Every value goes straight to its place in the stream, stored by the thread that owns it (the
    // input read again, from the cache): no staging slots, no barrier, no gather (31 registers and
    // 592 B of workgroup memory on the H200, against 40 and 2.6 KB). Measured there: F32 compress
    // 0.568 -> 0.423 ms at ρ = 0.176, but BF16 0.220 -> 0.270 (its scattered `u16` stores write each
    // sector in pieces), so the host picks it for 32-bit values only (`Kernels::direct`).
    // Value i of the tile is stream unit out * UNIT + i; a 16-bit stream with an odd count has its
    // last word's high half zeroed, as every tile's stream is padded to a word.
    let out_unit = out * UNIT;
    if fits {
        var rank = 0u; // values of the earlier rounds
        for (var r = 0u; r < ROUNDS; r++) {
            let mr = m[r];
            if mr != 0u {
                let v = staged_vec(tile, r * WG + li);
                var k = out_unit + rank + excl[r];
                k = direct_word(v.x, mr & WORD_BITS_MASK, k);
                k = direct_word(v.y, (mr >> EPW) & WORD_BITS_MASK, k);
                k = direct_word(v.z, (mr >> (2u * EPW)) & WORD_BITS_MASK, k);
                direct_word(v.w, (mr >> (3u * EPW)) & WORD_BITS_MASK, k);
            }
            rank += totals[r];
        }
        if lid == 0u && UNIT == 2u && (total & 1u) != 0u {
            put_unit(out_unit + total, 0u);
        }
    }
#else
#if STAGE16
    // Store each staged pass's complete words (all of them after the last pass), carry the values of
    // a partial last word to the next pass, stage that pass.
    var oc = 0u;     // bits of slot 0's value that belong to words stored already
    var wout = 0u;   // stream words stored by earlier passes
    loop {
        let n = staged.y;
        let last = staged.x == ROUNDS;
        let bits = n * width - oc;
        let full = bits >> 5u;
        let n_store = select(full, (bits + 31u) >> 5u, last);
        let w0 = out + wout;
        for (var i = lid; i < n_store; i += WG) {
            let w = gather_word(i, oc, width);
            if fits {
                put_val(w0 + i, w);
            }
        }
        if last {
            break;
        }
        // Read the carried values before the barrier that lets the next pass overwrite the slots.
        let b = full * 32u + oc;
        let j0 = div_width(b, width);
        if lid == 0u {
            for (var k = 0u; k < CARRY_MAX; k++) {
                cv[k] = u32(stage16[j0 + k]);
            }
        }
        workgroupBarrier();
        oc = b - j0 * width;
        wout += full;
        staged = stage_pass(tile, li, lid, m, totals, excl, staged.x, n - j0, cv, vmask);
        workgroupBarrier();
    }
#else
    var rbit = 0u;
    // Compaction in staging passes: as many consecutive rounds per pass as the staging words hold
    // (at ρ = 0.176 usually the whole tile, at ρ = 1 one round), then the pass's complete words are
    // stored and its partial last word is carried to word 0 of the next pass. The input is read again
    // here rather than kept in registers across the scan and look-back: holding it cost occupancy
    // (measured on the H200: the kernel took 0.45 ms with the values held, 0.27 ms with compaction
    // dropped), and this re-read hits the cache, not DRAM. Packing rounds into passes was measured
    // 3 % faster for BF16 and 12 % for FP8 than one pass per round (docs/PERFORMANCE.md).
    var r0 = 0u;
    loop {
        if r0 >= ROUNDS {
            break;
        }
        let carry = rbit & 31u;
        let extent = pass_extent(totals, r0, carry, width, STAGE_WORDS * 32u);
        let r1 = extent.x;
        let end = extent.y;
        var acc = carry;
        for (var r = 0u; r < ROUNDS; r++) {
            if r >= r0 && r < r1 {
                let mr = m[r];
                let vr = staged_vec(tile, r * WG + li);
                var pos = acc + excl[r] * width;
                pos = emit_word(vr.x, mr & WORD_BITS_MASK, pos, width);
                pos = emit_word(vr.y, (mr >> EPW) & WORD_BITS_MASK, pos, width);
                pos = emit_word(vr.z, (mr >> (2u * EPW)) & WORD_BITS_MASK, pos, width);
                pos = emit_word(vr.w, (mr >> (3u * EPW)) & WORD_BITS_MASK, pos, width);
                acc += totals[r] * width;
            }
        }
        workgroupBarrier();
        let last = r1 == ROUNDS;
        let n_store = select(end >> 5u, (end + 31u) >> 5u, last);
        let w0 = out + (rbit >> 5u);
        for (var i = lid; i < n_store; i += WG) {
            let w = atomicExchange(&stage[i], 0u);
            if fits {
                put_val(w0 + i, w);
            }
        }
        if lid == 0u && !last && (end & 31u) != 0u && (end >> 5u) != 0u {
            atomicStore(&stage[0], atomicExchange(&stage[end >> 5u], 0u));
        }
        workgroupBarrier();
        rbit += end - carry;
        r0 = r1;
    }
#endif
#endif
}

// One thread, after the last chunk: writes the header from the scan state. In arena mode it also
// commits the slot: on success the arena head moves past the tensor, on failure it stays and the
// failure is recorded for the step.
@compute @workgroup_size(1)
fn finish() {
    var value_words = 0u;
    if p.tiles > 0u {
#if UNORDERED
        // Where the counter stopped: the end of the last chunk's streams, whatever their order.
        value_words = p.val_base + atomicLoad(&scan[SCAN_VALUES]);
#else
        value_words = p.val_base + (atomicLoad(&scan[SCAN_TILES + p.tiles - 1u]) & VALUE_BITS);
#endif
    }
    var status = atomicLoad(&scan[SCAN_STATUS]);
#if ARENA
    base = atomicLoad(&ctrl[p.slot + SLOT_BASE]);
    status |= atomicLoad(&ctrl[p.slot + SLOT_STATUS]);
    atomicStore(&ctrl[p.slot + SLOT_STATUS], status);
    atomicStore(&ctrl[p.slot + SLOT_WORDS], value_words);
    if (status & STATUS_OVERFLOW) != 0u {
        atomicOr(&ctrl[CTRL_FAILED], status);
        // What the tensor would have needed, so the host can size the arena.
        atomicMax(&ctrl[CTRL_HIGH], base + p.values_offset + value_words);
        return;
    }
    if status != 0u {
        atomicOr(&ctrl[CTRL_FAILED], status);
    }
    let end = (base + p.values_offset + value_words + 3u) & ~3u; // next tensor 16-byte aligned
    atomicStore(&ctrl[CTRL_HEAD], end);
    atomicMax(&ctrl[CTRL_HIGH], end);
#endif
    let h = p.hdr_idx;
    put_head(h + 0u, 0x54505342u); // "BSPT"
    put_head(h + 1u, p.info);
    put_head(h + 2u, p.n_lo);
    put_head(h + 3u, p.n_hi);
    put_head(h + 4u, value_words);
    put_head(h + 5u, status);
#if FP8_STORE
    put_head(h + 6u, fp8_slot_amax());
    put_head(h + 7u, fp8_slot_scale());
#else
    put_head(h + 6u, 0u);
    put_head(h + 7u, 0u);
#endif
}
