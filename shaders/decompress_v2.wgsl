// Decompress a format-version-2 stream (docs/FORMAT.md §14) into dense elements: one workgroup per
// tile, in a 2-D grid. The CPU port of this stage is src/cpu/v2.rs (`ParsedV2::expand`).
//
// A tile of any encoding becomes a 128-word mask in workgroup memory first, then every thread writes
// whole output words:
//   mask       the tile's own mask words;
//   positions  the Elias–Fano upper words are read one per thread, their ones counted and scanned across
//              the workgroup, and every one becomes its position (high part = its bit index minus its
//              rank, low part from the lower bits), set in the mask with an atomicOr;
//   empty      an empty mask;
//   raw        no mask: element e is value e.
// A value's rank is the scanned popcount of the mask words before its word plus the popcount below it
// in its word; its code sits at bit `values + rank · width` of the tile's data, read with at most two
// word loads and decoded with the tile's exponent base.
//
// No workgroup waits on another, and every loop has a trip count bounded by the tile geometry (at most
// 32 per upper word and 2 passes of 128 words), so nothing assumes forward progress. The element width
// comes from the uniform, so one module serves every dtype (the host validates the stream first).

struct Params {
    tiles: u32,        // tiles of this dispatch
    last_len: u32,     // elements of its last tile (1 ..= 4096)
    bits: u32,         // element width: 8, 16 or 32
    mbits: u32,        // mantissa width of the dtype
    sign_pack: u32,    // 1: values stored without their sign bit
    tile_starts: u32,  // 1: the directory holds one start word per tile, else one base per 16 tiles
    desc_idx: u32,     // index in `stream` of descriptor 0
    dir_idx: u32,      // index in `stream` of the directory
    data_idx: u32,     // index in `stream` of the data section
    out_idx: u32,      // index in `dst` of the first output word
    out_words: u32,    // output words of this dispatch
    tail_bytes: u32,   // bytes of the output in its last word (4: whole word)
}

@group(0) @binding(0) var<storage, read> stream: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 128u;
const TILE: u32 = 4096u;
const PLAIN: u32 = 15u;

var<workgroup> wg_mask: array<atomic<u32>, 128>;
var<workgroup> wg_rank: array<vec2<u32>, 128>;
#if !SUBGROUP
var<workgroup> wg_scan: array<u32, 128>;
#endif
var<workgroup> wg_info: vec2<u32>;
var<workgroup> wg_start: atomic<u32>;
var<private> base: u32;

// Word `i` of the tile's data. (Staging the tile's data in workgroup memory first, 9 KB a workgroup,
// made the kernel 1.6× slower on the H200: occupancy; docs/PERFORMANCE.md.)
fn data_word(i: u32) -> u32 {
    return stream[base + i];
}

// `width` (0 ..= 32) bits of the tile's data starting at bit `bit`.
fn read_bits(bit: u32, width: u32) -> u32 {
    let i = bit >> 5u;
    let o = bit & 31u;
    var v = data_word(i) >> o;
    if o != 0u && o + width > 32u {
        v |= data_word(i + 1u) << (32u - o);
    }
    return select(v & ((1u << width) - 1u), v, width >= 32u);
}

fn value_width(d: u32) -> u32 {
    let eb = (d >> 2u) & 15u;
    if eb == PLAIN {
        return p.bits - p.sign_pack;
    }
    return (1u - p.sign_pack) + eb + p.mbits;
}

// Elias–Fano low bits: the largest L with k · 2^L <= len (k >= 1).
fn low_bits(k: u32, len: u32) -> u32 {
    return firstLeadingBit(len / k);
}

// Words of a tile's data (format::v2::TileDesc::words).
fn tile_words(d: u32, len: u32) -> u32 {
    let enc = d & 3u;
    let k = (d >> 14u) & 0x1fffu;
    let v = k * value_width(d);
    if enc == 0u {
        return (len + 31u) / 32u + (v + 31u) / 32u;
    }
    if enc == 1u {
        let l = low_bits(k, len);
        return (k * l + k + ((len - 1u) >> l) + 1u + v + 31u) / 32u;
    }
    if enc == 2u {
        return 0u;
    }
    return (v + 31u) / 32u;
}

// The element whose code is `c` under descriptor `d`.
fn decode_value(c: u32, d: u32) -> u32 {
    let eb = (d >> 2u) & 15u;
    if eb == PLAIN {
        return c;
    }
    let emin = (d >> 6u) & 0xffu;
    let m = p.mbits;
    var v = (c & ((1u << m) - 1u)) | ((((c >> m) & ((1u << eb) - 1u)) + emin) << m);
    if p.sign_pack == 0u {
        v |= ((c >> (m + eb)) & 1u) << (p.bits - 1u);
    }
    return v;
}

#if SUBGROUP
// SUBGROUP (`Features::SUBGROUP`): one subgroup scan, each subgroup's total through workgroup memory
// (at most 32 subgroups: sizes from 4 up), one barrier pair; threads take their roles in (subgroup,
// lane) order (`li`), so lane order is data order whatever the hardware's mapping.
var<workgroup> wg_sg: array<u32, 32>;
var<private> sg_id: u32;
var<private> sg_lane: u32;
var<private> sg_size: u32;

// Exclusive prefix sum of `v` over the threads in `li` order, and the total. Call in uniform control flow.
fn scan_excl(v: u32, li: u32) -> vec2<u32> {
    let incl = subgroupInclusiveAdd(v);
    if sg_lane + 1u == sg_size {
        wg_sg[sg_id] = incl;
    }
    workgroupBarrier();
    var before = 0u;
    var total = 0u;
    for (var i = 0u; i < WG / sg_size; i++) {
        let t = wg_sg[min(i, 31u)];
        before += select(0u, t, i < sg_id);
        total += t;
    }
    workgroupBarrier();
    return vec2<u32>(incl - v + before, total);
}
#else
// Exclusive prefix sum of `v` over the workgroup's threads, and the total (Hillis–Steele in workgroup
// memory). Call in uniform control flow.
fn scan_excl(v: u32, lid: u32) -> vec2<u32> {
    wg_scan[lid] = v;
    workgroupBarrier();
    for (var s = 1u; s < WG; s <<= 1u) {
        var add = 0u;
        if lid >= s {
            add = wg_scan[lid - s];
        }
        workgroupBarrier();
        wg_scan[lid] += add;
        workgroupBarrier();
    }
    let incl = wg_scan[lid];
    let total = wg_scan[WG - 1u];
    workgroupBarrier();
    return vec2<u32>(incl - v, total);
}
#endif

@compute @workgroup_size(128)
fn decompress_v2(
    @builtin(local_invocation_index) local_index: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
#if SUBGROUP
    @builtin(subgroup_id) subgroup_id: u32,
    @builtin(subgroup_invocation_id) subgroup_lane: u32,
    @builtin(subgroup_size) subgroup_size: u32,
#endif
) {
#if SUBGROUP
    sg_id = subgroup_id;
    sg_lane = subgroup_lane;
    sg_size = subgroup_size;
    // The thread's role (mask word, upper word, output word) in (subgroup, lane) order.
    let lid = subgroup_id * subgroup_size + subgroup_lane;
#else
    let lid = local_index;
#endif
    let tile = wid.x + wid.y * nwg.x;
    if tile >= p.tiles {
        return;
    }
    let len = select(TILE, p.last_len, tile + 1u == p.tiles);
    // Where the tile's data starts: its own start word, or its group's base plus the words of the
    // tiles before it in the group (all full tiles: only the stream's last tile is partial), summed by
    // one thread per earlier tile rather than by one thread in turn (dependent loads).
    if lid == 0u {
        var start = 0u;
        if p.tile_starts != 0u {
            start = stream[p.dir_idx + tile];
        } else {
            start = stream[p.dir_idx + tile / 16u];
        }
        atomicStore(&wg_start, start);
        wg_info.y = stream[p.desc_idx + tile];
    }
    workgroupBarrier();
    let g0 = tile - tile % 16u;
    if p.tile_starts == 0u && g0 + lid < tile {
        atomicAdd(&wg_start, tile_words(stream[p.desc_idx + g0 + lid], TILE));
    }
    workgroupBarrier();
    if lid == 0u {
        wg_info.x = atomicLoad(&wg_start);
    }
    let info = workgroupUniformLoad(&wg_info);
    base = p.data_idx + info.x;
    let d = info.y;
    let enc = d & 3u;
    let k = (d >> 14u) & 0x1fffu;
    let width = value_width(d);
    let mwords = (len + 31u) / 32u;

    // The tile's mask, and where its values start (bits after `base`).
    var values = 0u;
    if enc == 0u {
        var m = 0u;
        if lid < mwords {
            m = data_word(lid);
        }
        atomicStore(&wg_mask[lid], m);
        values = mwords * 32u;
    } else {
        atomicStore(&wg_mask[lid], 0u);
    }
    if enc == 1u {
        workgroupBarrier();
        let l = low_bits(k, len);
        let ulen = k + ((len - 1u) >> l) + 1u;
        let uwords = (ulen + 31u) / 32u;
        var ones_before = 0u;
        for (var round = 0u; round * WG < uwords; round++) {
            let j = round * WG + lid;
            var w = 0u;
            if j < uwords {
                w = read_bits(k * l + j * 32u, min(32u, ulen - j * 32u));
            }
            let s = scan_excl(countOneBits(w), lid);
            var r = ones_before + s.x;
            for (var m = w; m != 0u; m &= m - 1u) {
                let b = firstTrailingBit(m);
                let pos = ((j * 32u + b - r) << l) | read_bits(r * l, l);
                // In the tile for every valid stream; clamped so a corrupt one cannot write past the mask.
                atomicOr(&wg_mask[min(pos >> 5u, 127u)], 1u << (pos & 31u));
                r++;
            }
            ones_before += s.y;
        }
        values = k * l + ulen;
    }
    workgroupBarrier();
    let mw = atomicLoad(&wg_mask[lid]);
    let s = scan_excl(countOneBits(mw), lid);
    // Each mask word with the number of set bits before it: one plain load per output word below.
    wg_rank[lid] = vec2<u32>(mw, s.x);
    workgroupBarrier();

    // Output words of this tile: tile * 4096 * bits / 32 onwards.
    let epw = 32u / p.bits;
    let emask = select((1u << p.bits) - 1u, 0xffffffffu, p.bits == 32u);
    let owords = (len * p.bits + 31u) / 32u;
    let obase = tile * (TILE * p.bits / 32u);
    for (var q = lid; q < owords; q += WG) {
        // The word's elements share one mask word; their codes are consecutive in the stream (ranks
        // r, r + 1, … for the nonzeros; the element index itself in a raw tile), so two stream words
        // hold them all (at most 4 codes of at most 8 bits, 2 of 16 or 1 of 32, from any bit offset).
        let e0 = q * epw;
        var sel = (1u << epw) - 1u; // elements of the word that hold codes (bit i: element e0 + i)
        var first = e0;             // index of the first code
        if enc != 3u {
            let mr = wg_rank[e0 >> 5u];
            let sh = e0 & 31u;
            sel = (mr.x >> sh) & sel;
            first = mr.y + countOneBits(mr.x & ((1u << sh) - 1u));
        }
        if e0 + epw > len {
            sel &= (1u << (len - e0)) - 1u;
        }
        var word = 0u;
        if sel != 0u {
            let at = values + first * width;
            let w0 = data_word(at >> 5u);
            let w1 = data_word((at >> 5u) + 1u);
            var off = at & 31u;
            for (var i = 0u; i < epw; i++) {
                if ((sel >> i) & 1u) != 0u {
                    var c = 0u;
                    if off < 32u {
                        c = w0 >> off;
                        if off != 0u {
                            c |= w1 << (32u - off);
                        }
                    } else {
                        c = w1 >> (off - 32u);
                    }
                    c = select(c & ((1u << width) - 1u), c, width >= 32u);
                    word |= (decode_value(c, d) & emask) << (i * p.bits);
                    off += width;
                }
            }
        }
        let o = obase + q;
        if o + 1u == p.out_words && p.tail_bytes < 4u {
            // The range ends inside this word: keep the bytes past it.
            let keep = ~((1u << (p.tail_bytes * 8u)) - 1u);
            dst[p.out_idx + o] = (dst[p.out_idx + o] & keep) | (word & ~keep);
        } else {
            dst[p.out_idx + o] = word;
        }
    }
}
