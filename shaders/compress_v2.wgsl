// Compress dense elements into a format-version-2 stream (docs/FORMAT.md §14) with a tile-start
// directory (`TILE_STARTS`): one workgroup per tile, in a 2-D grid. The CPU port of this stage is
// src/cpu/v2.rs (`encode_tile`); `cpu::compact` of what this writes is byte-identical to
// `cpu::compress_v2` (tests/gpu/v2_compress.rs).
//
// Two entry points, dispatched in order in one pass:
//   header  one thread: the header, `DATA_WORDS` (word 4, the tiles' claim counter) and `STATUS` zero;
//   compress  per tile: its elements, mask, ranks (one workgroup scan), the exponent range of its
//           nonzeros (and of all its elements, for a raw tile); the smallest encoding, chosen exactly
//           as the CPU encoder chooses it; the tile's words claimed with one atomicAdd on word 4 (no
//           ticket, no look-back, no spinning: nothing waits on another workgroup); the tile's data
//           assembled in workgroup memory and stored with coalesced stores.
//
// The output range holds the worst case (`LayoutV2::capacity_bytes`: every tile at its mask plus every
// value plain), so no claim can run past it. A sign bit under sign packing sets `STATUS` bit 0
// (SIGN_BIT_SET), as version 1's compress does; decoders refuse such a stream.
//
// STAGE16 (`Features::SHADER_I16`, 8- and 16-bit elements): version 1's compress (compress.wgsl,
// STAGE16, UNORDERED) with the version-2 parts added. Every thread computes the encoding itself from the
// scan's totals and the exponent range (published by the scan's barrier), so nothing waits on one
// thread's choice; thread 0's claim overlaps the staging. The value codes are staged one per `u16` slot
// by rank in passes of at most a round's values, and each stream word is gathered from the slots by one
// thread with the code width a constant in each branch of a switch (a tile's width is uniform); a
// positions tile (at most 1023 nonzeros) always takes one pass, and its Elias–Fano low parts and upper
// vector are OR-ed into zeroed workgroup words (`wg_ef`): per thread and round from its mask bits where
// L = 2, value by value where L >= 3 (few values a thread). The
// exponent range of 16-bit elements is taken on both halves of a word at once (magnitudes, no per-element
// select). Measured on the H200 (201M BF16, ρ = 0.5 / 0.176 / 0.05 / 0.01): 0.790 / 0.978 / 0.763 / 0.623
// ms before, 0.415 / 0.411 / 0.345 / 0.294 now (version 1's unordered compress 0.252 / 0.202 / 0.193 /
// 0.186; docs/PERFORMANCE.md, sixteenth session). Without STAGE16 (and for F32 always), bits are OR-ed
// into place in workgroup memory (`stage`) with atomics, thread 0 chooses the encoding, and the tile's
// elements stay in registers.
//
// Defines: BITS32 / BITS8 (else 16-bit elements), SUBGROUP (lib/tile.wgsl), STAGE16.

#if STAGE16
enable wgpu_int16;
#endif

#include "lib/tile.wgsl"

struct Params {
    tiles: u32,        // tiles of the tensor
    full_tiles: u32,   // tiles read through `src4`
    tail_len: u32,     // elements of the partial last tile, 0 if none
    sign_pack: u32,
    mbits: u32,        // mantissa width of the dtype
    ebits: u32,        // exponent width of the dtype
    desc_idx: u32,     // word of descriptor 0 in `out`
    dir_idx: u32,      // word of the tile-start directory in `out`
    data_idx: u32,     // word of the data section in `out`
    info: u32,         // the header's INFO word
    n_lo: u32,         // element count, low and high words
    n_hi: u32,
}

@group(0) @binding(0) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> src_tail: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

// SIGN_MODE: AT_RUN_TIME reads sign packing from the params; 0 or 1 fixes it for a pipeline the host
// builds for calls of that mode, and ALL_FULL (lib/dense_in.wgsl) drops the partial tile's code from
// tensors without one, as in compress.wgsl (kernels.rs `Modes`).
#include "lib/modes.wgsl"

const MAGIC: u32 = 0x54505342u; // "BSPT"
const SIGN_BIT_SET: u32 = 1u;
const HDR_DATA_WORDS: u32 = 4u;
const HDR_STATUS: u32 = 5u;
#include "lib/v2.wgsl"
const ENC_MASK: u32 = 0u;
const ENC_POSITIONS: u32 = 1u;
const ENC_EMPTY: u32 = 2u;
const ENC_RAW: u32 = 3u;

// The canonical writer's margin for positions tiles (`format::v2::POSITIONS_GAIN`, set by the host;
// FORMAT.md §14.5): a positions tile is taken only where its words times (64 + POSITIONS_GAIN) / 64 are
// fewer than the mask tile's, because the decoder's positions decode (the upper bits' scan) costs far
// more than a mask tile's. With 8 (H100, 201M BF16, ρ = 0.176, where positions save ~7 %): decode
// 0.2918 -> 0.2158 ms, this writer 0.4091 -> 0.3215 (docs/PERFORMANCE.md, thirtieth session). Also an
// A/B knob (0..=64); a value other than the host's makes streams that decoders read unchanged but
// whose `cpu::compact` differs from `cpu::compress_v2`'s bytes wherever a choice changed.
override POSITIONS_GAIN: u32 = 8u;

var<workgroup> wg_mask: array<atomic<u32>, TILE_MASK_WORDS>;
var<workgroup> wg_lo: atomic<u32>;
var<workgroup> wg_hi: atomic<u32>;
#if !STAGE16
struct Info {
    start: u32,  // the tile's first data word
    desc: u32,   // its descriptor
    l: u32,      // Elias–Fano low bits
    values: u32, // bit of its codes in its data
    words: u32,  // its data words
}
var<workgroup> wg_info: Info;
#endif

// The tile's data is assembled here when it fits (every BF16 and FP8 tile; F32 tiles up to 3072 words,
// about 72% of their values in a mask tile), then stored with plain coalesced stores; a larger tile's bits
// are OR-ed into the stream itself. At most 12 KB a workgroup: 16 workgroups of 128 threads (an H200
// SM's 2048) fit its 228 KB of shared memory (not yet timed there).
#if BITS32
const STAGE_CAP: u32 = 3072u;
#else
#if BITS8
const STAGE_CAP: u32 = 1152u; // 128 mask words + 4096 · 8 bits
#else
const STAGE_CAP: u32 = 2176u; // 128 mask words + 4096 · 16 bits
#endif
#endif
#if !STAGE16
var<workgroup> stage: array<atomic<u32>, STAGE_CAP>;
#endif

@compute @workgroup_size(1)
fn header() {
    atomicStore(&out[0], MAGIC);
    atomicStore(&out[1], p.info);
    atomicStore(&out[2], p.n_lo);
    atomicStore(&out[3], p.n_hi);
    atomicStore(&out[HDR_DATA_WORDS], 0u);
    atomicStore(&out[HDR_STATUS], 0u);
    atomicStore(&out[6], 0u);
    atomicStore(&out[7], 0u);
}

#include "lib/dense_in.wgsl"

// Element `j` (0 ..= EPV - 1) of a vec.
fn elem_of(x: vec4<u32>, j: u32) -> u32 {
    let w = select(select(x.x, x.y, j / EPW == 1u), select(x.z, x.w, j / EPW == 3u), j / EPW >= 2u);
    return (w >> ((j % EPW) * BITS)) & ELEM_MASK;
}

fn exponent(v: u32) -> u32 {
    return (v >> p.mbits) & ((1u << p.ebits) - 1u);
}

// The value code of an exponent range (cpu::v2::value_code): (eb, emin), or (PLAIN, 0).
fn value_code(lo: u32, hi: u32) -> vec2<u32> {
    if lo > hi {
        return vec2<u32>(PLAIN, 0u);
    }
    let eb = select(firstLeadingBit(hi - lo) + 1u, 0u, hi == lo);
    if eb >= p.ebits {
        return vec2<u32>(PLAIN, 0u);
    }
    return vec2<u32>(eb, min(lo, (1u << p.ebits) - (1u << eb)));
}

// Value width under value code `eb` (TileDesc::value_width).
fn code_width(eb: u32) -> u32 {
    if eb == PLAIN {
        return BITS - sign_pack_of();
    }
    return (1u - sign_pack_of()) + eb + p.mbits;
}

// A tile's worst case: its mask and every value plain (format::v2::tile_capacity_words).
fn capacity_words(len: u32) -> u32 {
    return (len + 31u) / 32u + (len * (BITS - sign_pack_of()) + 31u) / 32u;
}

// The code of element `v` under (eb, emin) (cpu::v2::code_value).
fn code_of(v: u32, code: vec2<u32>) -> u32 {
    if code.x == PLAIN {
        return select(v, v & ~(1u << (BITS - 1u)), sign_pack_of() != 0u);
    }
    let m = p.mbits;
    var c = (v & ((1u << m) - 1u)) | ((exponent(v) - code.y) << m);
    if sign_pack_of() == 0u {
        c |= (v >> (BITS - 1u)) << (m + code.x);
    }
    return c;
}

// The exponent range `r` (lo, hi) widened by the elements of word `w` that `bits` selects (one bit per
// element): a loop of constant trip count over the word's elements, unrolled.
fn word_range(w: u32, bits: u32, r: vec2<u32>) -> vec2<u32> {
    var o = r;
    for (var e = 0u; e < EPW; e++) {
        let x = exponent((w >> (e * BITS)) & ELEM_MASK);
        o = select(o, vec2<u32>(min(o.x, x), max(o.y, x)), ((bits >> e) & 1u) != 0u);
    }
    return o;
}

// word_range over the four words of vec `x`, `mr` its element bits.
fn vec_range(x: vec4<u32>, mr: u32, r: vec2<u32>) -> vec2<u32> {
    let b = word_bits(mr);
    var rg = word_range(x.x, b.x, r);
    rg = word_range(x.y, b.y, rg);
    rg = word_range(x.z, b.z, rg);
    return word_range(x.w, b.w, rg);
}

// Folds a thread's exponent range (lo, hi; lo > hi: none) into the tile's (`wg_lo`, `wg_hi`): one pair
// of workgroup atomics per subgroup where there are subgroups.
fn publish_range(lo: u32, hi: u32, sg_lane: u32) {
#if SUBGROUP
    let slo = subgroupMin(lo);
    let shi = subgroupMax(hi);
    if sg_lane == 0u && shi >= slo {
        atomicMin(&wg_lo, slo);
        atomicMax(&wg_hi, shi);
    }
#else
    if hi >= lo {
        atomicMin(&wg_lo, lo);
        atomicMax(&wg_hi, hi);
    }
#endif
}

// A tile's encoding, as cpu::v2::encode_tile chooses it.
struct Choice {
    desc: u32,
    enc: u32,
    code: vec2<u32>, // (eb, emin)
    width: u32,      // bits per value code
    l: u32,          // Elias–Fano low bits
    values: u32,     // bit of the first code in the tile's data
    words: u32,      // the tile's data words
}

fn choose(k: u32, len: u32, rlo: u32, rhi: u32) -> Choice {
    if k == 0u {
        return Choice(ENC_EMPTY | (PLAIN << 2u), ENC_EMPTY, vec2<u32>(PLAIN, 0u), 0u, 0u, 0u, 0u);
    }
    let code = value_code(rlo, rhi);
    let w = code_width(code.x);
    let cap = capacity_words(len);
    let mwords = (len + 31u) / 32u;
    var c = Choice(0u, ENC_MASK, code, w, 0u, mwords * 32u, mwords + (k * w + 31u) / 32u);
    let ll = low_bits(k, len);
    let ef_bits = k * ll + k + ((len - 1u) >> ll) + 1u;
    let ef = (ef_bits + k * w + 31u) / 32u;
    // (k < 1024 always holds when positions are smaller than the mask, len <= 4096; STAGE16's single
    // pass of a positions tile relies on it.)
    if ef <= cap && ef * (64u + POSITIONS_GAIN) < c.words * 64u && k < 1024u {
        c.enc = ENC_POSITIONS;
        c.words = ef;
        c.l = ll;
        c.values = ef_bits;
    }
    // Raw codes every element, zeros too (exponent 0 when the tile has any).
    let rcode = value_code(select(rlo, 0u, k < len), rhi);
    let rwidth = code_width(rcode.x);
    let rw = (len * rwidth + 31u) / 32u;
    if rw <= cap && rw < c.words {
        c.enc = ENC_RAW;
        c.words = rw;
        c.code = rcode;
        c.width = rwidth;
        c.l = 0u;
        c.values = 0u;
    }
    let count = select(k, len, c.enc == ENC_RAW);
    c.desc = c.enc | (c.code.x << 2u) | (c.code.y << 6u) | (count << 14u);
    return c;
}

#if STAGE16
// ---- STAGE16: version 1's structure ----

// The narrowest value code of the module's dtypes (sign-packed, eb = 0: BF16 7 bits, F16 10; e5m2 2,
// e4m3 3), which sizes the carry and the gather.
#if BITS8
const W_MIN: u32 = 2u;
#else
const W_MIN: u32 = 7u;
#endif
// Values carried from one pass to the next (those of its partial last word), and the slots one stream
// word can touch.
const CARRY_MAX: u32 = (32u + W_MIN - 1u) / W_MIN;
const GATHER_MAX: u32 = (2u * W_MIN + 30u) / W_MIN;
// A pass holds the carried values (or, first in a positions tile, the zero slots that put its codes
// after the Elias–Fano bits: at most CARRY_MAX) and up to one full round; GATHER_MAX - 1 zero slots
// after the last value let the gather read past it without a bound test.
const STAGE_VALUES: u32 = WG * EPV + CARRY_MAX;
const STAGE_SLOTS: u32 = STAGE_VALUES + GATHER_MAX - 1u;
var<workgroup> stage16: array<u16, STAGE_SLOTS>;
// A positions tile's Elias–Fano low parts and upper vector (fewer bits than its mask: at most 128
// words, plus the word its codes start in), zeroed at the start.
const EF_WORDS: u32 = TILE_MASK_WORDS + 1u;
var<workgroup> wg_ef: array<atomic<u32>, EF_WORDS>;
var<workgroup> wg_start: u32;

// Elias–Fano low bits from which a positions tile's fields are built value by value (ρ <= 1/8).
const SPARSE_L: u32 = 3u;
const MAG: u32 = ELEM_MASK >> 1u;
const SIGN: u32 = ELEM_MASK ^ MAG;

// A tile's value code as three uniform operands: code = ((v & MAG) - emin_sh) | ((v & smask) >> sdown).
// Plain values are the code with emin 0 and the sign where it is (cpu::v2::code_value).
struct Coder {
    emin_sh: u32,
    smask: u32,
    sdown: u32,
}

fn coder(code: vec2<u32>) -> Coder {
    let smask = select(SIGN, 0u, sign_pack_of() != 0u);
    if code.x == PLAIN {
        return Coder(0u, smask, 0u);
    }
    return Coder(code.y << p.mbits, smask, (BITS - 1u) - (p.mbits + code.x));
}

fn code_elem(v: u32, cd: Coder) -> u32 {
    return ((v & MAG) - cd.emin_sh) | ((v & cd.smask) >> cd.sdown);
}

// Stages the codes of the elements of word `w` selected by `bits` at slots `slot`, `slot + 1`, ...;
// returns the slot after them.
fn stage_word(w: u32, bits: u32, slot: u32, cd: Coder) -> u32 {
    var s = slot;
    for (var e = 0u; e < EPW; e++) {
        if ((bits >> e) & 1u) != 0u {
            stage16[s] = u16(code_elem((w >> (e * BITS)) & ELEM_MASK, cd));
            s += 1u;
        }
    }
    return s;
}

// Stages the codes of the elements of vec `q` of tile `t` that `sel` selects (read again, from the
// cache) at slots `slot`, `slot + 1`, ...
fn stage_round(t: u32, q: u32, sel: u32, slot: u32, cd: Coder) {
    let v = load_vec(t, q);
    let b = word_bits(sel);
    var k = stage_word(v.x, b.x, slot, cd);
    k = stage_word(v.y, b.y, k, cd);
    k = stage_word(v.z, b.z, k, cd);
    stage_word(v.w, b.w, k, cd);
}

// The extent of the staging pass that starts at round `r0` with `start` slots already taken: round `r0`
// and as many following rounds as fit. Returns (the round after the pass, the slots taken at its end).
fn pass_extent(totals: array<u32, 4>, r0: u32, start: u32) -> vec2<u32> {
    var end = start;
    var r1 = r0;
    for (var r = 0u; r < ROUNDS; r++) {
        if r == r1 && (r == r0 || end + totals[r] <= STAGE_VALUES) {
            end += totals[r];
            r1 += 1u;
        }
    }
    return vec2<u32>(r1, end);
}

// Stages one pass: the `kc` values `cv` at slots 0 .. kc (thread 0), then the codes of round `r0` and of
// as many following rounds as the slots hold (`sel`: the elements coded, `totals` / `excl`: their
// counts per round and each thread's first in its round), then the zero slots after them. Returns (the
// round after the pass, the slots staged).
fn stage_pass(t: u32, li: u32, lid: u32, sel: array<u32, ROUNDS>, totals: array<u32, 4>, excl: array<u32, 4>,
              r0: u32, kc: u32, cv: array<u32, CARRY_MAX>, cd: Coder) -> vec2<u32> {
    let extent = pass_extent(totals, r0, kc);
    let r1 = extent.x;
    let n = extent.y;
    var acc = kc;
    for (var r = 0u; r < ROUNDS; r++) {
        if r >= r0 && r < r1 {
            if sel[r] != 0u {
                stage_round(t, r * WG + li, sel[r], acc + excl[r], cd);
            }
            acc += totals[r];
        }
    }
    if lid == 0u {
        for (var k = 0u; k < CARRY_MAX; k++) {
            if k < kc {
                stage16[k] = u16(cv[k]);
            }
        }
    }
    if lid < GATHER_MAX - 1u {
        stage16[n + lid] = u16(0u);
    }
    return vec2<u32>(r1, n);
}

// Word `i` of a pass's stream of `width`-bit codes whose slot 0 starts `oc` bits before the stream
// (`width` a constant at each call, so the division and every shift bound fold): slot j + k starts at
// bit sh = k·width − o of the word, (k − 1)·width < sh <= k·width; where k·width >= 32, 17 <= sh <= 46
// and the slot is shifted in two steps, which leaves nothing once sh >= 32 (version 1's gather_packed).
fn gather_packed(i: u32, oc: u32, width: u32) -> u32 {
    let b = i * 32u + oc;
    let j = b / width;
    let o = b - j * width;
    var w = u32(stage16[j]) >> o;
    for (var k = 1u; k < (2u * width + 30u) / width; k++) {
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

// gather_packed for the tile's width (uniform), one constant width per branch.
fn gather_word(i: u32, oc: u32, width: u32) -> u32 {
    var w = 0u;
    switch width {
#if BITS8
        case 2u: { w = gather_packed(i, oc, 2u); }
        case 3u: { w = gather_packed(i, oc, 3u); }
        case 4u: { w = gather_packed(i, oc, 4u); }
        case 5u: { w = gather_packed(i, oc, 5u); }
        case 6u: { w = gather_packed(i, oc, 6u); }
        case 7u: { w = gather_packed(i, oc, 7u); }
        default: { w = gather_packed(i, oc, 8u); }
#else
        case 7u: { w = gather_packed(i, oc, 7u); }
        case 8u: { w = gather_packed(i, oc, 8u); }
        case 9u: { w = gather_packed(i, oc, 9u); }
        case 10u: { w = gather_packed(i, oc, 10u); }
        case 11u: { w = gather_packed(i, oc, 11u); }
        case 12u: { w = gather_packed(i, oc, 12u); }
        case 13u: { w = gather_packed(i, oc, 13u); }
        case 14u: { w = gather_packed(i, oc, 14u); }
        case 15u: { w = gather_packed(i, oc, 15u); }
        default: { w = gather_packed(i, oc, 16u); }
#endif
    }
    return w;
}

// ORs `val` (its bits from 0 up to `width`) into the Elias–Fano words at bit `bit`.
fn put_ef(bit: u32, val: u32, width: u32) {
    if val == 0u {
        return;
    }
    let i = bit >> 5u;
    let o = bit & 31u;
    atomicOr(&wg_ef[min(i, EF_WORDS - 1u)], val << o);
    if o != 0u && o + width > 32u {
        let hi = val >> (32u - o);
        if hi != 0u {
            atomicOr(&wg_ef[min(i + 1u, EF_WORDS - 1u)], hi);
        }
    }
}

// The lanes of a vec4 of 16-bit elements that `bits` (element i of the vec at bit i) selects.
fn lanes16(bits: u32) -> vec4<u32> {
    var m = vec4<u32>(0u);
    for (var k = 0u; k < 4u; k++) {
        m[k] = select(0u, 0xffffu, (bits & (1u << (2u * k))) != 0u)
            | select(0u, 0xffff0000u, (bits & (2u << (2u * k))) != 0u);
    }
    return m;
}

// The low parts (two bits each, in order) of the set bits of nibble `n`: a 16-entry table of bytes.
fn nibble_lows(n: u32) -> u32 {
    let t = select(select(0x04010000u, 0x24090802u, (n & 4u) != 0u), select(0x340d0c03u, 0xe439380eu, (n & 4u) != 0u),
                   (n & 8u) != 0u);
    return (t >> ((n & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(128)
fn compress(
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
    if tile >= p.tiles {
        return;
    }
    let li = logical_index(lid, sg_id, sg_lane, sg_size);
    let len = select(p.tail_len, TILE, full_tile(tile));
    atomicStore(&wg_mask[lid], 0u);
    atomicStore(&wg_ef[lid], 0u);
    if lid == 0u {
        atomicStore(&wg_ef[EF_WORDS - 1u], 0u);
        atomicStore(&wg_lo, 0xffffffffu);
        atomicStore(&wg_hi, 0u);
    }
    workgroupBarrier();

    // The tile's elements, a vec4 per thread and round (coalesced): mask bits, signs, exponent range.
    var m: array<u32, ROUNDS>;
    var signs = 0u;
#if BITS8
    var lo = 0xffffffffu;
    var hi = 0u;
#else
    // 16-bit elements, both halves of a word at once: the largest magnitude (its exponent is the
    // largest) and the smallest magnitude of a nonzero element (a key with bit 15 set: none). Whole-word
    // min / max order by the high half; the low halves are taken masked.
    var kmin_lo = 0xffffu;
    var kmin_hi = 0xffffffffu;
    var mmax_lo = 0u;
    var mmax_hi = 0u;
#endif
    for (var r = 0u; r < ROUNDS; r++) {
        let q = r * WG + li;
        let x = load_vec(tile, q);
        let valid = valid_bits(tile, q);
        let mr = nz_bits(x) & valid;
        m[r] = mr;
        if sign_pack_of() != 0u {
            signs |= sign_bits(x) & mr;
        }
#if BITS8
        let rg = vec_range(x, mr, vec2<u32>(lo, hi));
        lo = rg.x;
        hi = rg.y;
#else
        var xv = x;
        if !full_tile(tile) {
            xv &= lanes16(valid); // a partial tile's last word may hold an element past the tensor
        }
        let mags = xv & vec4<u32>(0x7fff7fffu);
        // Bit 15 / 31 of `f` set where the element is not all zero (nz_flags16); a zero element's key
        // gets bit 15 of its half, above every magnitude, so it drops out of the min (-0.0 stays, as
        // magnitude 0).
        let f = nz_flags16(xv);
        let keys = mags | (f ^ vec4<u32>(0x80008000u));
        let kl = keys & vec4<u32>(0xffffu);
        kmin_lo = min(kmin_lo, min(min(kl.x, kl.y), min(kl.z, kl.w)));
        kmin_hi = min(kmin_hi, min(min(keys.x, keys.y), min(keys.z, keys.w)));
        let ml = mags & vec4<u32>(0xffffu);
        mmax_lo = max(mmax_lo, max(max(ml.x, ml.y), max(ml.z, ml.w)));
        mmax_hi = max(mmax_hi, max(max(mags.x, mags.y), max(mags.z, mags.w)));
#endif
        if mr != 0u {
            atomicOr(&wg_mask[mask_word_of(r, li)], mr << mask_shift_of(li));
        }
    }
#if !BITS8
    let kmin = min(kmin_lo, kmin_hi >> 16u);
    let lo = select(kmin >> p.mbits, 0xffffffffu, kmin >= 0x8000u);
    let hi = max(mmax_lo, mmax_hi >> 16u) >> p.mbits;
#endif
    publish_range(lo, hi, sg_lane);
    if sign_pack_of() != 0u && signs != 0u {
        atomicOr(&out[HDR_STATUS], SIGN_BIT_SET);
    }
#if BITS8
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), 0u, 0u);
#else
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), countOneBits(m[2]), countOneBits(m[3]));
#endif
    let sc = wg_scan(counts, li, sg_lane, sg_size);
    var totals = array<u32, 4>(sc.total.x, sc.total.y, sc.total.z, sc.total.w);
    var excl = array<u32, 4>(sc.excl.x, sc.excl.y, sc.excl.z, sc.excl.w);
    let k = sc.total.x + sc.total.y + sc.total.z + sc.total.w;

    // Every thread chooses the encoding (the scan's barrier published the exponent range); thread 0
    // claims the tile's words, and its atomic's round trip overlaps the staging.
    let ch = choose(k, len, atomicLoad(&wg_lo), atomicLoad(&wg_hi));
    if lid == 0u {
        let start = atomicAdd(&out[HDR_DATA_WORDS], ch.words);
        atomicStore(&out[p.desc_idx + tile], ch.desc);
        atomicStore(&out[p.dir_idx + tile], start);
        wg_start = start;
    }
    if ch.enc == ENC_EMPTY {
        return;
    }
    let width = ch.width;
    let cd = coder(ch.code);

    // The elements coded: the nonzeros, or every element of a raw tile (ranks = positions).
    var sel = m;
    if ch.enc == ENC_RAW {
        for (var r = 0u; r < ROUNDS; r++) {
            sel[r] = valid_bits(tile, r * WG + li);
            totals[r] = min(len - min(len, r * WG * EPV), WG * EPV);
            excl[r] = li * EPV;
        }
    }

    // A positions tile's low parts (at bit rank·L) and upper vector (bit (p >> L) + rank from bit k·L),
    // OR-ed into zeroed workgroup words.
    if ch.enc == ENC_POSITIONS && ch.l >= SPARSE_L {
        // At ρ <= 1/8 a thread has a few nonzeros in its four rounds: all of them in one loop, each field
        // OR-ed in (the per-round form below runs in every warp and round where a lane has one).
        // Measured on the H200 (201M BF16, against the per-round form): 0.448 -> 0.392 ms at ρ = 0.1,
        // 0.409 -> 0.346 at 0.05, 0.377 -> 0.314 at 0.02, 0.356 -> 0.294 at 0.01; from L = 2 (ρ = 0.176)
        // it was slower, 0.411 -> 0.435 (docs/PERFORMANCE.md, sixteenth session).
        let l = ch.l;
        let lmask = (1u << l) - 1u;
        let u0 = k * l;
#if BITS8
        let all = m[0] | (m[1] << 16u);
        let first = vec4<u32>(excl[0], totals[0] + excl[1], 0u, 0u);
#else
        let all = m[0] | (m[1] << 8u) | (m[2] << 16u) | (m[3] << 24u);
        let first = vec4<u32>(excl[0], totals[0] + excl[1], totals[0] + totals[1] + excl[2],
                              totals[0] + totals[1] + totals[2] + excl[3]);
#endif
        var bits = all;
        loop {
            if bits == 0u {
                break;
            }
            let e = firstTrailingBit(bits);
            bits &= bits - 1u;
            let r = e / EPV;
            let el = e % EPV;
            let pos = (r * WG + li) * EPV + el;
            let start = select(select(first.x, first.y, r == 1u), select(first.z, first.w, r == 3u), r >= 2u);
            let rank = start + countOneBits((all >> (r * EPV)) & ((1u << el) - 1u));
            put_ef(rank * l, pos & lmask, l);
            put_ef(u0 + (pos >> l) + rank, 1u, 1u);
        }
    } else if ch.enc == ENC_POSITIONS {
        // L = 2 (and below in short tiles): a thread's fields of a round built in one word each from its
        // mask bits.
        let l = ch.l;
        let lmask = (1u << l) - 1u;
        let u0 = k * l;
        var before = 0u;
        for (var r = 0u; r < ROUNDS; r++) {
            let mr = m[r];
            let rank0 = before + excl[r];
            before += totals[r];
            if mr != 0u {
                let p0 = (r * WG + li) * EPV;
                let pc = countOneBits(mr);
                var up = 0u;
                var lows = 0u;
                if l == 2u {
                    // Buckets of four elements, a nibble of the mask each: its count in unary and a
                    // zero; its low parts from a table.
                    var off = 0u;
                    var lb = 0u;
                    for (var b = 0u; b < EPV / 4u; b++) {
                        let nib = (mr >> (4u * b)) & 15u;
                        let c = countOneBits(nib);
                        up |= ((1u << c) - 1u) << off;
                        off += c + 1u;
                        lows |= nibble_lows(nib) << lb;
                        lb += 2u * c;
                    }
                } else {
                    // L < 2 (only in short partial tiles, whose mask is padded to a word): each set bit
                    // in turn.
                    var bits = mr;
                    var t = 0u;
                    loop {
                        if bits == 0u {
                            break;
                        }
                        let pos = p0 + firstTrailingBit(bits);
                        bits &= bits - 1u;
                        up |= 1u << (((pos >> l) - (p0 >> l)) + t);
                        lows |= (pos & lmask) << (t * l);
                        t += 1u;
                    }
                }
                put_ef(rank0 * l, lows, min(pc * l, 32u));
                put_ef(u0 + (p0 >> l) + rank0, up, 32u);
            }
        }
    }

    // The codes start at bit `values` of the tile's data: `pre` whole words before them (the mask, or
    // the Elias–Fano bits) and `c` bits into the next word, which `d` zero slots before the first code
    // fill (slot 0 then starts `oc` bits before that word).
    let pre = ch.values >> 5u;
    let c = ch.values & 31u;
    let d = (c + width - 1u) / width;
    var cv: array<u32, CARRY_MAX>; // values carried to the next pass (thread 0 only); zeros first
    var staged = stage_pass(tile, li, lid, sel, totals, excl, 0u, d, cv, cd);
    var oc = d * width - c;

    // The claimed place reaches every thread; the uniform load is also the barrier that publishes the
    // staged slots, the mask and the Elias–Fano words.
    let base = p.data_idx + workgroupUniformLoad(&wg_start);
    for (var i = lid; i < pre; i += WG) {
        var w = 0u;
        if ch.enc == ENC_MASK {
            w = atomicLoad(&wg_mask[i]);
        } else {
            w = atomicLoad(&wg_ef[i]);
        }
        atomicStore(&out[base + i], w);
    }
    var merge = 0u;
    if c != 0u {
        merge = atomicLoad(&wg_ef[min(pre, EF_WORDS - 1u)]);
    }
    // Each pass's complete words (all of them after the last pass) gathered and stored; the values of a
    // partial last word carried to the next pass.
    var wout = pre; // data words stored by earlier passes
    loop {
        let n = staged.y;
        let last = staged.x == ROUNDS;
        let bits = n * width - oc;
        let full = bits >> 5u;
        let n_store = select(full, (bits + 31u) >> 5u, last);
        for (var i = lid; i < n_store; i += WG) {
            var w = gather_word(i, oc, width);
            if wout + i == pre {
                w |= merge;
            }
            atomicStore(&out[base + wout + i], w);
        }
        if last {
            break;
        }
        // Read the carried values before the barrier that lets the next pass overwrite the slots.
        let b = full * 32u + oc;
        let j0 = b / width;
        if lid == 0u {
            for (var kk = 0u; kk < CARRY_MAX; kk++) {
                cv[kk] = u32(stage16[min(j0 + kk, STAGE_SLOTS - 1u)]);
            }
        }
        workgroupBarrier();
        oc = b - j0 * width;
        wout += full;
        staged = stage_pass(tile, li, lid, sel, totals, excl, staged.x, n - j0, cv, cd);
        workgroupBarrier();
    }
}
#else
// ORs the low `width` bits of `c` (nothing above them set) into the tile's data at bit `bit`: into
// `stage` when `staged`, else into the stream at word `base`.
fn put_bits(staged: bool, base: u32, bit: u32, c: u32, width: u32) {
    let i = bit >> 5u;
    let o = bit & 31u;
    if c == 0u {
        return;
    }
    let two = o != 0u && o + width > 32u;
    if staged {
        atomicOr(&stage[min(i, STAGE_CAP - 1u)], c << o);
        if two {
            atomicOr(&stage[min(i + 1u, STAGE_CAP - 1u)], c >> (32u - o));
        }
    } else {
        atomicOr(&out[base + i], c << o);
        if two {
            atomicOr(&out[base + i + 1u], c >> (32u - o));
        }
    }
}

@compute @workgroup_size(128)
fn compress(
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
    if tile >= p.tiles {
        return;
    }
    let li = logical_index(lid, sg_id, sg_lane, sg_size);
    let len = select(p.tail_len, TILE, full_tile(tile));
    atomicStore(&wg_mask[lid], 0u);
    if lid == 0u {
        atomicStore(&wg_lo, 0xffffffffu);
        atomicStore(&wg_hi, 0u);
    }
    workgroupBarrier();

    // The tile's elements, a vec4 per thread and round (coalesced); mask bits, signs, exponent range.
    var xs: array<vec4<u32>, ROUNDS>;
    var m: array<u32, ROUNDS>;
    var signs = 0u;
    var lo = 0xffffffffu;
    var hi = 0u;
    for (var r = 0u; r < ROUNDS; r++) {
        let q = r * WG + li;
        let x = load_vec(tile, q);
        let mr = nz_bits(x) & valid_bits(tile, q);
        xs[r] = x;
        m[r] = mr;
        signs |= sign_bits(x) & mr;
        let rg = vec_range(x, mr, vec2<u32>(lo, hi));
        lo = rg.x;
        hi = rg.y;
        if mr != 0u {
            atomicOr(&wg_mask[mask_word_of(r, li)], mr << mask_shift_of(li));
        }
    }
    publish_range(lo, hi, sg_lane);
    if sign_pack_of() != 0u && signs != 0u {
        atomicOr(&out[HDR_STATUS], SIGN_BIT_SET);
    }
    let rs = round_starts(m, li, sg_lane, sg_size);
    let starts = rs.starts;
    let k = rs.total;

    // The encoding, chosen as cpu::v2::encode_tile chooses it (the scan's barriers published the
    // exponent range), and the tile's words claimed.
    if lid == 0u {
        let ch = choose(k, len, atomicLoad(&wg_lo), atomicLoad(&wg_hi));
        let start = atomicAdd(&out[HDR_DATA_WORDS], ch.words);
        atomicStore(&out[p.desc_idx + tile], ch.desc);
        atomicStore(&out[p.dir_idx + tile], start);
        wg_info = Info(start, ch.desc, ch.l, ch.values, ch.words);
    }
    let info = workgroupUniformLoad(&wg_info);
    let base = p.data_idx + info.start;
    let d = info.desc;
    let enc = d & 3u;
    let code = vec2<u32>((d >> 2u) & 15u, (d >> 6u) & 0xffu);
    let width = code_width(code.x);
    let l = info.l;
    let values = info.values;
    let words = info.words;
    let staged = words <= STAGE_CAP;
    // The words start at zero (the stream's range may hold anything), then bits are OR-ed in.
    if staged {
        for (var i = lid; i < words; i += WG) {
            atomicStore(&stage[i], 0u);
        }
        workgroupBarrier();
    } else {
        for (var i = lid; i < words; i += WG) {
            atomicStore(&out[base + i], 0u);
        }
        storageBarrier();
    }
    if enc == ENC_MASK && lid < (len + 31u) / 32u {
        let mw = atomicLoad(&wg_mask[lid]);
        if staged {
            atomicStore(&stage[lid], mw);
        } else {
            atomicStore(&out[base + lid], mw);
        }
    }
    if enc != ENC_EMPTY {
        let upper = k * l; // bit of the Elias–Fano upper vector
        for (var r = 0u; r < ROUNDS; r++) {
            let q = r * WG + li;
            let x = xs[r];
            let mr = m[r];
            var rank = starts[r];
            for (var j = 0u; j < EPV; j++) {
                if ((mr >> j) & 1u) != 0u {
                    let pos = q * EPV + j;
                    let c = code_of(elem_of(x, j), code);
                    if enc == ENC_RAW {
                        put_bits(staged, base, pos * width, c, width);
                    } else {
                        put_bits(staged, base, values + rank * width, c, width);
                        if enc == ENC_POSITIONS {
                            put_bits(staged, base, rank * l, pos & ((1u << l) - 1u), l);
                            put_bits(staged, base, upper + (pos >> l) + rank, 1u, 1u);
                        }
                    }
                    rank++;
                }
            }
        }
    }
    if staged {
        workgroupBarrier();
        for (var i = lid; i < words; i += WG) {
            atomicStore(&out[base + i], atomicLoad(&stage[i]));
        }
    }
}
#endif
