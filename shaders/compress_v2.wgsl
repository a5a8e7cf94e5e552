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
//           (no ticket, no look-back, no spinning: nothing waits on another workgroup); the tile's words
//           are zeroed, every code and position bit is OR-ed into place (atomicOr: a code may share its
//           words with its neighbours') in workgroup memory (`stage`), and the words are stored with
//           coalesced stores; a tile too large for `stage` (dense F32 only) is OR-ed into the stream.
//
// The output range holds the worst case (`LayoutV2::capacity_bytes`: every tile at its mask plus every
// value plain), so no claim can run past it. A sign bit under sign packing sets `STATUS` bit 0
// (SIGN_BIT_SET), as version 1's compress does; decoders refuse such a stream.
//
// Defines: BITS32 / BITS8 (else 16-bit elements), SUBGROUP (lib/tile.wgsl).

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
var<workgroup> stage: array<atomic<u32>, STAGE_CAP>;

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
    let len = select(TILE, p.tail_len, tile >= p.full_tiles);
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
        for (var j = 0u; j < EPV; j++) {
            if ((mr >> j) & 1u) != 0u {
                let e = exponent(elem_of(x, j));
                lo = min(lo, e);
                hi = max(hi, e);
            }
        }
        if mr != 0u {
            atomicOr(&wg_mask[mask_word_of(r, li)], mr << mask_shift_of(li));
        }
    }
    if hi >= lo {
        atomicMin(&wg_lo, lo);
        atomicMax(&wg_hi, hi);
    }
    if p.sign_pack != 0u && signs != 0u {
        atomicOr(&out[HDR_STATUS], SIGN_BIT_SET);
    }
#if BITS32
    let s = wg_scan(pack_counts(m), li, sg_lane, sg_size);
    let excl8 = unpack_rounds(s.excl);
    let total8 = unpack_rounds(s.total);
    var starts: array<u32, 8>;
    var k = 0u;
    for (var r = 0u; r < 8u; r++) {
        starts[r] = excl8[r] + k;
        k += total8[r];
    }
#else
#if BITS8
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), 0u, 0u);
#else
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), countOneBits(m[2]), countOneBits(m[3]));
#endif
    let s = wg_scan(counts, li, sg_lane, sg_size);
    let starts = s.excl + vec4<u32>(0u, s.total.x, s.total.x + s.total.y, s.total.x + s.total.y + s.total.z);
    let k = s.total.x + s.total.y + s.total.z + s.total.w;
#endif

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
            if ef <= cap && ef < words {
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
