// The first pass of the two-pass version-2 decoder (`V2Decoder::Indexed`): for every tile, where its
// data starts, where its values start and its descriptor, and its 128-word mask — a positions tile's
// decoded from its Elias–Fano code, a mask tile's copied, zeros for empty and raw tiles — and, with
// `RANKS`, each mask word's rank (the ones before it), written into the tile's own output (its last
// round's vec4s: 512 words, of which mask 0..128, ranks 128..256, the rest at 256..260) or, for a
// partial last tile, into `tail_scr`. The second pass (decompress_v2.wgsl with `TWO_PASS`) reads them back
// before it writes that output, so it has version 1's chain (its mask and start at fixed addresses, a
// scan, the gathers) without the directory's sum or the positions' decode, and no scratch memory is
// allocated. CPU counterpart: `cpu::v2` (`ParsedV2::expand` builds the same masks).
//
// Four tiles a workgroup, 32 threads a tile (a quarter), so four times as many tiles are in flight per
// SM as in the decoder, whose 128 threads a tile would spend this pass's short chain (directory, upper
// bits, ones) mostly waiting. Every loop is bounded by the tile geometry and no workgroup waits on
// another.

#include "lib/v2_params.wgsl"

@group(0) @binding(0) var<storage, read> stream: array<u32>;
// The full tiles' output (as vec4 words) and the partial last tile's scratch (65 vec4).
@group(0) @binding(1) var<storage, read_write> dst4: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> tail_scr: array<vec4<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

#include "lib/elem.wgsl"
#include "lib/v2.wgsl"

var<private> base: u32;

#include "lib/v2_tile.wgsl"

// 1: a mask tile's mask is left in the stream for the second pass to read (`decompress_v2.MASK_FROM_STREAM`
// in `CodecConfig::kernel_constants`: an A/B of the copy's cost where mask tiles dominate).
override MASK_FROM_STREAM: u32 = 0u;
// 1: each mask word's rank written too (`decompress_v2.RANKS`, with the second pass's; masks are then
// always copied).
override RANKS: u32 = 0u;
// Where a full tile's words lie in its output: its last round's vec4s (decompress_v2.wgsl reads them
// before the barrier that precedes its last round).
const SCR_V: u32 = (ROUNDS - 1u) * WG;

// Tiles a workgroup, threads a tile.
const QT: u32 = 4u;
const QL: u32 = 32u;

// Each quarter's mask, staged low parts (65 words each, as the decoder's) and scan slots.
var<workgroup> ix_mask: array<atomic<u32>, 512>;
var<workgroup> ix_low: array<u32, 260>;
var<workgroup> ix_scan: array<u32, 128>;

#if SUBGROUP
var<workgroup> ix_sg: array<u32, 32>;
var<private> sg_id: u32;
var<private> sg_lane: u32;
var<private> sg_size: u32;
#endif

// `width` (0 ..= 12) bits of quarter `q`'s staged low parts at bit `bit`.
fn ix_low_part(q: u32, bit: u32, width: u32) -> u32 {
    let i = q * 65u + min(bit >> 5u, 63u);
    let o = bit & 31u;
    return ((ix_low[i] >> o) | ((ix_low[i + 1u] << 1u) << (31u - o))) & ((1u << width) - 1u);
}

// Exclusive prefix sum of `v` over the 32 threads of the caller's quarter, and the quarter's total.
// Call in uniform control flow.
fn quarter_scan(v: u32, lid: u32) -> vec2<u32> {
#if SUBGROUP
    // Subgroups of at most 32 (a quarter is whole subgroups: roles are in (subgroup, lane) order): a
    // subgroup scan, then the totals of the quarter's earlier subgroups through workgroup memory (one
    // barrier pair; with subgroups of 32 there are none).
    if sg_size <= QL {
        let incl = subgroupInclusiveAdd(v);
        if sg_lane + 1u == sg_size {
            ix_sg[min(sg_id, 31u)] = incl;
        }
        workgroupBarrier();
        let per = QL / sg_size;
        let first = sg_id - sg_id % per;
        var before = 0u;
        var total = 0u;
        for (var i = first; i < first + per; i++) {
            let t = ix_sg[min(i, 31u)];
            before += select(0u, t, i < sg_id);
            total += t;
        }
        workgroupBarrier();
        return vec2<u32>(incl - v + before, total);
    }
#endif
    // Hillis–Steele in workgroup memory (the portable path, and subgroups wider than a quarter).
    let lane = lid & (QL - 1u);
    ix_scan[lid] = v;
    workgroupBarrier();
    for (var s = 1u; s < QL; s <<= 1u) {
        var add = 0u;
        if lane >= s {
            add = ix_scan[lid - s];
        }
        workgroupBarrier();
        ix_scan[lid] += add;
        workgroupBarrier();
    }
    let incl = ix_scan[lid];
    let total = ix_scan[lid | (QL - 1u)];
    workgroupBarrier();
    return vec2<u32>(incl - v, total);
}

@compute @workgroup_size(128)
fn index(
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
    // Roles in (subgroup, lane) order, so a quarter is whole subgroups (sizes up to 32) in lane order.
    let lid = subgroup_id * subgroup_size + subgroup_lane;
#else
    let lid = local_index;
#endif
    let q = lid / QL;
    let lane = lid % QL;
    let tile = (wid.x + wid.y * nwg.x) * QT + q;
    // Threads of a quarter past the last tile take part in the barriers and write nothing.
    let valid = tile < p.tiles;
    let t = min(tile, p.tiles - 1u);
    let len = select(TILE, p.last_len, t + 1u == p.tiles);

    // The directory: the tile's own start word, or its group's base plus the words of the tiles before
    // it in the group (all full tiles), one load a thread, summed through workgroup memory.
    let d = stream[p.desc_idx + t];
    let g0 = t - t % 16u;
    var part = 0u;
    if lane < 16u {
        if p.tile_starts == 0u && g0 + lane < t {
            part = tile_words(stream[p.desc_idx + g0 + lane], TILE);
        }
    } else if lane == 16u {
        part = stream[p.dir_idx + select(t / 16u, t, p.tile_starts != 0u)];
    }
    let enc = d & 3u;
    let k = (d >> 14u) & 0x1fffu;
    let l = low_bits(max(k, 1u), len);
    let ulen = k + ((len - 1u) >> l) + 1u;
    // The upper bits in chunks of `cb` bits a thread: the smallest power of two (at most a word) that
    // puts them in one round, so the ones spread over the quarter.
    let per = (ulen + QL - 1u) / QL;
    let cb = select(min(2u << firstLeadingBit(max(per, 2u) - 1u), 32u), 1u, per <= 1u);
    let chunks = (ulen + cb - 1u) / cb;
    var rounds = 0u;
    if valid && enc == 1u {
        rounds = (chunks + QL - 1u) / QL;
    }
    ix_scan[lid] = select(part, rounds, lane == QL - 1u);
    for (var i = 0u; i < 4u; i++) {
        atomicStore(&ix_mask[lid * 4u + i], 0u);
    }
    workgroupBarrier();
    var start = 0u;
    for (var i = 0u; i < 17u; i++) {
        start += ix_scan[q * QL + i];
    }
    let max_rounds = max(max(ix_scan[QL - 1u], ix_scan[2u * QL - 1u]), max(ix_scan[3u * QL - 1u], ix_scan[4u * QL - 1u]));
    workgroupBarrier();
    base = p.data_idx + start;
    let mwords = (len + 31u) / 32u;

    var values = 0u;
    var out = vec4<u32>(0u);
    if valid && enc == 0u && (MASK_FROM_STREAM == 0u || RANKS != 0u) {
        let w0 = lane * 4u;
        let lim = arrayLength(&stream) - 1u;
        let w = vec4<u32>(w0, w0 + 1u, w0 + 2u, w0 + 3u);
        let live = w < vec4<u32>(mwords);
        let at = min(vec4<u32>(base) + w, vec4<u32>(lim));
        out = select(vec4<u32>(0u), vec4<u32>(stream[at.x], stream[at.y], stream[at.z], stream[at.w]), live);
    }
    if enc == 0u {
        values = mwords * 32u;
    }
    if enc == 1u {
        values = k * l + ulen;
        if valid {
            let nlow = min((k * l + 31u) / 32u, 64u);
            if lane < nlow {
                ix_low[q * 65u + lane] = data_word(lane);
            }
            if lane + QL < nlow {
                ix_low[q * 65u + lane + QL] = data_word(lane + QL);
            }
        }
    }
    // The low parts are read only after the first scan's barriers below.
    var ones_before = 0u;
    for (var round = 0u; round < max_rounds; round++) {
        let j = round * QL + lane;
        var w = 0u;
        if round < rounds && j < chunks {
            w = read_bits(k * l + j * cb, min(cb, ulen - j * cb));
        }
        let s = quarter_scan(countOneBits(w), lid);
        var r = ones_before + s.x;
        for (var m = w; m != 0u; m &= m - 1u) {
            let b = firstTrailingBit(m);
            let pos = ((j * cb + b - r) << l) | ix_low_part(q, r * l, l);
            // In the tile for every valid stream; clamped so a corrupt one cannot leave its quarter.
            atomicOr(&ix_mask[q * 128u + min(pos >> 5u, 127u)], 1u << (pos & 31u));
            r++;
        }
        ones_before += s.y;
    }
    workgroupBarrier();
    if enc == 1u {
        let m0 = q * 128u + lane * 4u;
        out = vec4<u32>(atomicLoad(&ix_mask[m0]), atomicLoad(&ix_mask[m0 + 1u]), atomicLoad(&ix_mask[m0 + 2u]), atomicLoad(&ix_mask[m0 + 3u]));
    }
    // With RANKS, the ones before each of the lane's four mask words (uniform: RANKS is a constant).
    var ranks = vec4<u32>(0u);
    if RANKS != 0u {
        let c = countOneBits(out);
        let s = quarter_scan(c.x + c.y + c.z + c.w, lid);
        ranks = vec4<u32>(s.x, s.x + c.x, s.x + c.x + c.y, s.x + c.x + c.y + c.z);
    }
    if valid {
        let info = vec4<u32>(start, values, d, 0u);
        if t < p.full_tiles {
            let v0 = t * VECS_PER_TILE + SCR_V;
            dst4[v0 + lane] = out;
            if RANKS != 0u {
                dst4[v0 + QL + lane] = ranks;
            }
            if lane == 0u {
                dst4[v0 + 2u * QL] = info;
            }
        } else {
            tail_scr[lane] = out;
            if RANKS != 0u {
                tail_scr[QL + lane] = ranks;
            }
            if lane == 0u {
                tail_scr[2u * QL] = info;
            }
        }
    }
}
