// Compress dense elements into a format-version-2 stream (docs/FORMAT.md §14) with a tile-start
// directory (`TILE_STARTS`): one workgroup per tile, in a 2-D grid. The CPU port of this stage is
// src/cpu/v2.rs (`encode_tile`); `cpu::compact` of what this writes is byte-identical to
// `cpu::compress_v2` (tests/gpu/v2_compress.rs).
//
// Two entry points, dispatched in order in one pass:
//   header  one thread: the header, `DATA_WORDS` (word 4, the tiles' claim counter) and `STATUS` zero;
//   compress  per tile: its elements, mask, ranks (one workgroup scan), the exponent range of its
//           nonzeros (and of all its elements, for a raw tile); thread 0 picks the smallest encoding
//           exactly as the CPU encoder does and claims the tile's words with one atomicAdd on word 4
//           (no ticket, no look-back, no spinning: nothing waits on another workgroup); the tile's data
//           is assembled in workgroup memory (STAGE16 below, or bits OR-ed into zeroed words) and
//           stored with coalesced stores; a tile too large for `stage` (dense F32 only) is OR-ed into
//           the stream.
//
// The output range holds the worst case (`LayoutV2::capacity_bytes`: every tile at its mask plus every
// value plain), so no claim can run past it. A sign bit under sign packing sets `STATUS` bit 0
// (SIGN_BIT_SET), as version 1's compress does; decoders refuse such a stream.
//
// STAGE16 (`Features::SHADER_I16`, 8- and 16-bit elements): no workgroup atomics and no zeroing. Each
// field of the tile (value code, Elias–Fano low part, upper-bit position) goes with a plain store into
// its own `u16` slot, indexed by rank, and each data word is then gathered from the slots by one thread
// (the upper vector's bits by a binary search over the sorted positions). Without it, bits are OR-ed
// into place in workgroup memory (`stage`) with atomics, as F32 always is. The elements are read again
// from the cache for the staging instead of being held in registers across the scan and the claim
// (version 1's lesson: registers are occupancy), and every per-element loop runs over one word's
// elements with a constant trip count. Measured on the H200 (201M BF16, ρ = 0.5 / 0.176 / 0.05):
// 1.13 / 1.33 / 1.18 ms with atomics, 0.81 / 1.00 / 0.78 ms so (docs/PERFORMANCE.md), still 3–5 × the
// version-1 compress.
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

const MAGIC: u32 = 0x54505342u; // "BSPT"
const SIGN_BIT_SET: u32 = 1u;
const HDR_DATA_WORDS: u32 = 4u;
const HDR_STATUS: u32 = 5u;
const PLAIN: u32 = 15u;
const ENC_MASK: u32 = 0u;
const ENC_POSITIONS: u32 = 1u;
const ENC_EMPTY: u32 = 2u;
const ENC_RAW: u32 = 3u;

var<workgroup> wg_mask: array<atomic<u32>, TILE_MASK_WORDS>;
var<workgroup> wg_lo: atomic<u32>;
var<workgroup> wg_hi: atomic<u32>;
struct Info {
    start: u32,  // the tile's first data word
    desc: u32,   // its descriptor
    l: u32,      // Elias–Fano low bits
    values: u32, // bit of its codes in its data
    words: u32,  // its data words
}
var<workgroup> wg_info: Info;

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
#if STAGE16
// Slots of the fields, by rank: value codes at [0, 4096) (a raw tile: by position); a positions tile
// (at most 1023 nonzeros: it is chosen only where it is smaller than the mask) puts its codes at
// [0, 1024), its low parts at EF_LOW + rank and its upper-bit positions at EF_UP + rank. 8 KB.
const SLOTS: u32 = 4096u;
const EF_LOW: u32 = 1024u;
const EF_UP: u32 = 2048u;
var<workgroup> slots: array<u16, SLOTS>;
#else
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
        return BITS - p.sign_pack;
    }
    return (1u - p.sign_pack) + eb + p.mbits;
}

// Elias–Fano low bits: the largest L with k · 2^L <= len (k >= 1).
fn low_bits(k: u32, len: u32) -> u32 {
    return firstLeadingBit(len / k);
}

// A tile's worst case: its mask and every value plain (format::v2::tile_capacity_words).
fn capacity_words(len: u32) -> u32 {
    return (len + 31u) / 32u + (len * (BITS - p.sign_pack) + 31u) / 32u;
}

// The code of element `v` under (eb, emin) (cpu::v2::code_value).
fn code_of(v: u32, code: vec2<u32>) -> u32 {
    if code.x == PLAIN {
        return select(v, v & ~(1u << (BITS - 1u)), p.sign_pack != 0u);
    }
    let m = p.mbits;
    var c = (v & ((1u << m) - 1u)) | ((exponent(v) - code.y) << m);
    if p.sign_pack == 0u {
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

#if STAGE16
// Stages the fields of the elements of word `w` that `bits` selects, the first at rank `rank0` and
// tile position `pos0`; returns the rank after them.
fn stage_word(w: u32, bits: u32, rank0: u32, pos0: u32, code: vec2<u32>, ef: bool, l: u32) -> u32 {
    var rank = rank0;
    for (var e = 0u; e < EPW; e++) {
        if ((bits >> e) & 1u) != 0u {
            slots[min(rank, SLOTS - 1u)] = u16(code_of((w >> (e * BITS)) & ELEM_MASK, code));
            if ef {
                let pos = pos0 + e;
                slots[min(EF_LOW + rank, SLOTS - 1u)] = u16(pos & ((1u << l) - 1u));
                slots[min(EF_UP + rank, SLOTS - 1u)] = u16((pos >> l) + rank);
            }
            rank += 1u;
        }
    }
    return rank;
}

// Stages the code of every element of word `w` below `len` at its position (a raw tile).
fn stage_raw_word(w: u32, pos0: u32, len: u32, code: vec2<u32>) {
    for (var e = 0u; e < EPW; e++) {
        if pos0 + e < len {
            slots[min(pos0 + e, SLOTS - 1u)] = u16(code_of((w >> (e * BITS)) & ELEM_MASK, code));
        }
    }
}

// The 32 bits from bit `rb` of a region of `count` fields of `width` bits (slots `s0`, `s0 + 1`, ...;
// no bits above `width` set), zero past its end.
fn region_bits(s0: u32, count: u32, width: u32, rb: u32) -> u32 {
    let j = rb / width;
    if j >= count {
        return 0u;
    }
    var w = u32(slots[min(s0 + j, SLOTS - 1u)]) >> (rb - j * width);
    var at = (j + 1u) * width - rb; // the word bit where field j + 1 starts
    var f = j + 1u;
    loop {
        if at >= 32u || f >= count {
            break;
        }
        w |= u32(slots[min(s0 + f, SLOTS - 1u)]) << at;
        at += width;
        f += 1u;
    }
    return w;
}

// The bits that a region of fields starting at tile bit `start` puts into the tile's data word at
// tile bit `b` (a multiple of 32).
fn fields_at(s0: u32, count: u32, width: u32, start: u32, b: u32) -> u32 {
    if count == 0u || width == 0u || b + 32u <= start || b >= start + count * width {
        return 0u;
    }
    if b >= start {
        return region_bits(s0, count, width, b - start);
    }
    return region_bits(s0, count, width, 0u) << (start - b);
}

// The bits of the Elias–Fano upper vector (bit u_i set for each rank i < k; u_i = slot EF_UP + i,
// increasing) that start at tile bit `u0` and fall into the data word at tile bit `b`.
fn upper_at(k: u32, u0: u32, b: u32) -> u32 {
    // The first rank whose bit lies at or after b.
    var lo = 0u;
    var hi = k;
    loop {
        if lo >= hi {
            break;
        }
        let mid = (lo + hi) / 2u;
        if u0 + u32(slots[min(EF_UP + mid, SLOTS - 1u)]) < b {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    var w = 0u;
    var i = lo;
    loop {
        if i >= k {
            break;
        }
        let at = u0 + u32(slots[min(EF_UP + i, SLOTS - 1u)]);
        if at >= b + 32u {
            break;
        }
        w |= 1u << (at - b);
        i += 1u;
    }
    return w;
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
#endif

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
    let len = select(TILE, p.tail_len, tile >= p.full_tiles);
    atomicStore(&wg_mask[lid], 0u);
    if lid == 0u {
        atomicStore(&wg_lo, 0xffffffffu);
        atomicStore(&wg_hi, 0u);
    }
    workgroupBarrier();

    // The tile's elements, a vec4 per thread and round (coalesced); mask bits, signs, exponent range.
#if !STAGE16
    var xs: array<vec4<u32>, ROUNDS>;
#endif
    var m: array<u32, ROUNDS>;
    var signs = 0u;
    var lo = 0xffffffffu;
    var hi = 0u;
    for (var r = 0u; r < ROUNDS; r++) {
        let q = r * WG + li;
        let x = load_vec(tile, q);
        let mr = nz_bits(x) & valid_bits(tile, q);
#if !STAGE16
        xs[r] = x;
#endif
        m[r] = mr;
        signs |= sign_bits(x) & mr;
        let b = word_bits(mr);
        var rg = vec2<u32>(lo, hi);
        rg = word_range(x.x, b.x, rg);
        rg = word_range(x.y, b.y, rg);
        rg = word_range(x.z, b.z, rg);
        rg = word_range(x.w, b.w, rg);
        lo = rg.x;
        hi = rg.y;
        if mr != 0u {
            atomicOr(&wg_mask[mask_word_of(r, li)], mr << mask_shift_of(li));
        }
    }
#if SUBGROUP
    // One pair of workgroup atomics per subgroup instead of per thread.
    lo = subgroupMin(lo);
    hi = subgroupMax(hi);
    if sg_lane == 0u && hi >= lo {
        atomicMin(&wg_lo, lo);
        atomicMax(&wg_hi, hi);
    }
#else
    if hi >= lo {
        atomicMin(&wg_lo, lo);
        atomicMax(&wg_hi, hi);
    }
#endif
    if p.sign_pack != 0u && signs != 0u {
        atomicOr(&out[HDR_STATUS], SIGN_BIT_SET);
    }
    let rs = round_starts(m, li, sg_lane, sg_size);
    let starts = rs.starts;
    let k = rs.total;

    // The encoding, chosen as cpu::v2::encode_tile chooses it (the scan's barriers published the
    // exponent range), and the tile's words claimed.
    if lid == 0u {
        var desc = ENC_EMPTY | (PLAIN << 2u);
        var words = 0u;
        var l = 0u;
        var values = 0u;
        if k > 0u {
            let rlo = atomicLoad(&wg_lo);
            let rhi = atomicLoad(&wg_hi);
            let code = value_code(rlo, rhi);
            let w = code_width(code.x);
            let cap = capacity_words(len);
            let mwords = (len + 31u) / 32u;
            var enc = ENC_MASK;
            var cd = code;
            words = mwords + (k * w + 31u) / 32u;
            values = mwords * 32u;
            let ll = low_bits(k, len);
            let ef = (k * ll + k + ((len - 1u) >> ll) + 1u + k * w + 31u) / 32u;
            // (k < 1024 always holds when positions are smaller than the mask, len <= 4096; it is
            // spelled out because the STAGE16 slots rely on it.)
            if ef <= cap && ef < words && k < 1024u {
                enc = ENC_POSITIONS;
                words = ef;
                l = ll;
                values = k * ll + k + ((len - 1u) >> ll) + 1u;
            }
            // Raw codes every element, zeros too (exponent 0 when the tile has any).
            let rcode = value_code(select(rlo, 0u, k < len), rhi);
            let rw = (len * code_width(rcode.x) + 31u) / 32u;
            if rw <= cap && rw < words {
                enc = ENC_RAW;
                words = rw;
                cd = rcode;
                values = 0u;
            }
            let count = select(k, len, enc == ENC_RAW);
            desc = enc | (cd.x << 2u) | (cd.y << 6u) | (count << 14u);
        }
        let start = atomicAdd(&out[HDR_DATA_WORDS], words);
        atomicStore(&out[p.desc_idx + tile], desc);
        atomicStore(&out[p.dir_idx + tile], start);
        wg_info = Info(start, desc, l, values, words);
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
#if STAGE16
    if enc == ENC_EMPTY {
        return;
    }
    // Every field into its slot, by the one thread that owns the element (the elements read again).
    if enc == ENC_RAW {
        for (var r = 0u; r < ROUNDS; r++) {
            let q = r * WG + li;
            let x = load_vec(tile, q);
            stage_raw_word(x.x, q * EPV, len, code);
            stage_raw_word(x.y, q * EPV + EPW, len, code);
            stage_raw_word(x.z, q * EPV + 2u * EPW, len, code);
            stage_raw_word(x.w, q * EPV + 3u * EPW, len, code);
        }
    } else {
        let ef = enc == ENC_POSITIONS;
        for (var r = 0u; r < ROUNDS; r++) {
            let q = r * WG + li;
            let mr = m[r];
            if mr != 0u {
                let x = load_vec(tile, q);
                let b = word_bits(mr);
                var rank = stage_word(x.x, b.x, starts[r], q * EPV, code, ef, l);
                rank = stage_word(x.y, b.y, rank, q * EPV + EPW, code, ef, l);
                rank = stage_word(x.z, b.z, rank, q * EPV + 2u * EPW, code, ef, l);
                stage_word(x.w, b.w, rank, q * EPV + 3u * EPW, code, ef, l);
            }
        }
    }
    workgroupBarrier();
    // Each data word gathered by one thread and stored once (coalesced).
    let mwords = (len + 31u) / 32u;
    for (var i = lid; i < words; i += WG) {
        let b = i * 32u;
        var w = 0u;
        if enc == ENC_RAW {
            w = fields_at(0u, len, width, 0u, b);
        } else if enc == ENC_MASK {
            if i < mwords {
                w = atomicLoad(&wg_mask[i]);
            } else {
                w = fields_at(0u, k, width, values, b);
            }
        } else {
            w = fields_at(EF_LOW, k, l, 0u, b) | upper_at(k, k * l, b) | fields_at(0u, k, width, values, b);
        }
        atomicStore(&out[base + i], w);
    }
#else
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
#endif
}
