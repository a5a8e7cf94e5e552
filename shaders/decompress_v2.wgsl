// Decompress a format-version-2 stream (docs/FORMAT.md §14) into dense elements: one workgroup per
// tile, in a 2-D grid. The CPU port of this stage is src/cpu/v2.rs (`ParsedV2::expand`).
//
// A tile of any encoding becomes a 128-word mask, one word per thread, then every thread writes whole
// output words:
//   mask       the thread's own mask word of the tile;
//   positions  the Elias–Fano upper bits are read in chunks of 1 to 32 bits, one per thread, their
//              ones counted and scanned across the workgroup, and every one becomes its position
//              (high part = its bit index minus its rank, low part from the lower bits), set in a mask
//              in workgroup memory with an atomicOr, and its rank recorded as its mask word's first
//              with an atomicMin (so this tile's mask needs no scan);
//   empty      an empty mask;
//   raw        no mask: element e is value e.
// A value's rank is the number of ones before its mask word (scanned, or the positions tile's first
// rank) plus the popcount below it in its word; its code sits at bit `values + rank · width` of the
// tile's data, read with two word loads, and the codes of an output word are decoded on all its element
// lanes at once.
//
// No workgroup waits on another, and every loop has a trip count bounded by the tile geometry (at most
// 32 per chunk of upper bits and 2 passes of 128 chunks), so nothing assumes forward progress. One
// module per element width (`BITS8`, `BITS32`, else 16 bits); the mantissa width comes from the
// uniform. The host validates the stream first.

struct Params {
    tiles: u32,        // tiles of this dispatch
    last_len: u32,     // elements of its last tile (1 ..= 4096)
    full_tiles: u32,   // tiles written through `dst4` (all but a partial last one)
    mbits: u32,        // mantissa width of the dtype
    sign_pack: u32,    // 1: values stored without their sign bit
    tile_starts: u32,  // 1: the directory holds one start word per tile, else one base per 16 tiles
    desc_idx: u32,     // index in `stream` of descriptor 0
    dir_idx: u32,      // index in `stream` of the directory
    data_idx: u32,     // index in `stream` of the data section
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> stream: array<u32>;
// The full tiles' output, a vec4 per thread and round (coalesced), and the partial last tile's words.
@group(0) @binding(1) var<storage, read_write> dst4: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst_tail: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// SIGN_MODE: AT_RUN_TIME reads sign packing from the params; 0 or 1 fixes it for a pipeline the host
// builds for calls of that mode, as in decompress.wgsl (kernels.rs `Modes`).
#include "lib/modes.wgsl"

#include "lib/elem.wgsl"
#include "lib/v2.wgsl"

var<workgroup> wg_mask: array<atomic<u32>, 128>;
#if !SUBGROUP
var<workgroup> wg_scan: array<u32, 128>;
var<workgroup> wg_part: array<u32, 17>;
#endif
var<workgroup> wg_info: vec2<u32>;
var<private> base: u32;

// A positions tile's low parts (k · L <= len / 2 bits: at most 64 words), and a word past them, read
// with the upper words (one memory latency for both) instead of one by one from memory. Measured on the
// H200 (201M BF16, same binary): 0.361 -> 0.354 ms at ρ = 0.176, 0.332 -> 0.325 at 0.05, 0.297 -> 0.290
// at 0.01; e4m3 0.246 -> 0.237 at 0.176 (docs/PERFORMANCE.md, seventeenth session).
var<workgroup> wg_low: array<u32, 65>;

// A positions tile's ranks: for each mask word, the rank of its first one (the number of ones before the
// word), set by the ones themselves while they build the mask (an atomicMin, as threads at a chunk's
// ends may share a word); a word without ones keeps `k`, and its output has no value to gather. So a
// positions tile needs no scan of its mask: one barrier after the ones are set, not a scan's. On the
// H200 (201M BF16, same call; docs/PERFORMANCE.md, twenty-fifth session, call 3): 0.2934 -> 0.2899 ms
// at ρ = 0.176, 0.2545 -> 0.2442 at 0.05, 0.2442 -> 0.2338 at 0.02, 0.2258 at 0.01 (0.2369 in call 1);
// F16 -4 % and e4m3 sign-packed -2.5 to -5.7 % below ρ = 0.1; 0.2140 -> 0.2167 at ρ = 0.5 (mask tiles
// only) and F32 +1 % at 0.176 and 0.1, the price of the output's third branch and of a third array.
// Mask tiles now write their words and scanned ranks into wg_mask and wg_first too (they had their own
// array of (word, rank) pairs): one output path for every tile, 1 KB less workgroup memory (2448 ->
// 1424 B), 28 registers either way. On the H200 (201M BF16, same call, two runs each): 0.2173 -> 0.2131
// ms at ρ = 0.5, 0.2902 -> 0.2865 at 0.176, 0.2447 -> 0.2409 at 0.05, 0.2264 -> 0.2229 at 0.01 (-1.3 to
// -2.0 % at all six densities), F16 -0.9 to -1.4 %, F32 -1.3 to -2.0 %, e4m3 -0.3 to -0.9 %
// (docs/PERFORMANCE.md, twenty-sixth session).
var<workgroup> wg_first: array<atomic<u32>, 128>;

// `width` (0 ..= 12) bits of the staged low parts at bit `bit`.
fn low_part(bit: u32, width: u32) -> u32 {
    let i = min(bit >> 5u, 63u);
    let o = bit & 31u;
    return ((wg_low[i] >> o) | ((wg_low[i + 1u] << 1u) << (31u - o))) & ((1u << width) - 1u);
}

// Word `i` of the tile's data. (Staging the tile's data in workgroup memory first, 9 KB a workgroup,
// made the kernel 1.6× slower on the H200: occupancy; docs/PERFORMANCE.md.)
fn data_word(i: u32) -> u32 {
    return stream[base + i];
}

// `width` (0 ..= 32) bits of the tile's data starting at bit `bit`.
fn read_bits(bit: u32, width: u32) -> u32 {
    let i = bit >> 5u;
    let o = bit & 31u;
    // Both words loaded, no branch (the second may lie past the tile's data: then it is shifted out;
    // clamped to the binding); `(w << 1) << (31 - o)` is `w << (32 - o)` and 0 for o = 0.
    let v = (data_word(i) >> o) | ((stream[min(base + i + 1u, arrayLength(&stream) - 1u)] << 1u) << (31u - o));
    return select(v & ((1u << width) - 1u), v, width >= 32u);
}

fn value_width(d: u32) -> u32 {
    let eb = (d >> 2u) & 15u;
    if eb == PLAIN {
        return BITS - sign_pack_of();
    }
    return (1u - sign_pack_of()) + eb + p.mbits;
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

// How a tile's codes decode, for every code alike (FORMAT.md §14.4), on all element lanes of a word at
// once (SWAR): element = ((code & low) + add) | ((code << sign_shift) & sign), with `low`, `add` and
// `sign` repeated in every lane. Exponent offset: `low` keeps mantissa and offset, `add` is emin moved
// to the exponent field (the sum never carries out of its lane: emin + 2^eb - 1 < 2^E), the shift moves
// the code's sign bit to the lane's top bit and `sign` keeps the lanes' top bits (0 when sign-packed).
// Plain: `low` keeps the code's width, `add` and `sign` 0. (Against the sign shifted down, masked and
// shifted up by a constant: 0.245 -> 0.231 ms at ρ = 0.5, 0.329 -> 0.309 at 0.176, H200, 201M BF16.)
struct Code {
    width: u32,
    low: u32,
    add: u32,
    sign_shift: u32,
    sign: u32,
}

// 1 in the lowest bit of each element lane of a word.
#if BITS32
const REP: u32 = 1u;
#else
#if BITS8
const REP: u32 = 0x01010101u;
#else
const REP: u32 = 0x00010001u;
#endif
#endif

fn tile_code(d: u32) -> Code {
    let eb = (d >> 2u) & 15u;
    let width = value_width(d);
    if eb == PLAIN {
        return Code(width, select((1u << width) - 1u, ELEM_MASK, width >= BITS) * REP, 0u, 0u, 0u);
    }
    let m = p.mbits;
    let add = ((d >> 6u) & 0xffu) << m;
    return Code(width, ((1u << (m + eb)) - 1u) * REP, add * REP, BITS - 1u - (m + eb), select(REP << (BITS - 1u), 0u, sign_pack_of() != 0u));
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

// Four stream words; with `clamp` (a constant at each call) each index clamped to `lim` (the last word
// the binding holds).
fn get4(i: vec4<u32>, lim: u32, clamp: bool) -> vec4<u32> {
    var c = i;
    if clamp {
        c = min(i, vec4<u32>(lim));
    }
    return vec4<u32>(stream[c.x], stream[c.y], stream[c.z], stream[c.w]);
}

// For each of a vec's four output words: the tile data's bits from its first code on. Its codes (at most
// EPW of at most BITS bits) are consecutive, so two words hold them from any bit offset. `first`: the
// vec's first code; `values`: the bit of the tile data where code 0 starts.
fn gather(bits: u32, first: u32, values: u32, width: u32, lim: u32, clamp: bool) -> vec4<u32> {
    let c = countOneBits(word_bits(bits));
    let k = vec4<u32>(first, first + c.x, first + c.x + c.y, first + c.x + c.y + c.z);
    let at = vec4<u32>(values) + k * width;
    let wi = vec4<u32>(base) + (at >> vec4<u32>(5u));
    let sh = at & vec4<u32>(31u);
    let lo = get4(wi, lim, clamp);
    let hi = get4(wi + vec4<u32>(1u), lim, clamp);
    // `hi << (32 - sh)`, and 0 for sh = 0, in two shifts (a WGSL shift by 32 is a shift by 0).
    return (lo >> sh) | ((hi << vec4<u32>(1u)) << (vec4<u32>(31u) - sh));
}

// One output word: the codes packed from bit 0 of `x` (`width` bits each), decoded, into the elements
// `bits` selects, in order; the other elements are zero. The codes are moved into their lanes first
// (a lane's bits above its code are the next codes', which the decode drops), then decoded for every
// lane at once, and the lanes without a value cleared. Measured on the H200 (201M BF16, against a loop
// decoding element by element): 0.302 -> 0.251 ms at ρ = 0.5, 0.376 -> 0.345 at 0.176, 0.348 -> 0.318
// at 0.05 (docs/PERFORMANCE.md, seventeenth session).
fn deposit(bits: u32, x: u32, code: Code) -> u32 {
#if BITS32
    let w = x;
    let lanes = select(0u, 0xffffffffu, (bits & 1u) != 0u);
#else
#if BITS8
    var y = x;
    var w = y & 0xffu;
    y = select(y, y >> code.width, (bits & 1u) != 0u);
    w |= (y & 0xffu) << 8u;
    y = select(y, y >> code.width, (bits & 2u) != 0u);
    w |= (y & 0xffu) << 16u;
    y = select(y, y >> code.width, (bits & 4u) != 0u);
    w |= y << 24u;
    // Bit i of `bits` to bit 8 i (the four shifted copies do not overlap), then to a byte of ones.
    let lanes = ((bits * 0x00204081u) & 0x01010101u) * 0xffu;
#else
    // The second lane's code: x shifted by the width where the first lane takes one. (Against a select
    // between x and x >> width: 0.245 -> 0.238 ms at ρ = 0.5, 0.329 -> 0.322 at 0.176, H200, 201M BF16.)
    let w = (x & 0xffffu) | ((x >> (code.width * (bits & 1u))) << 16u);
    // Bit 1 of `bits` to bit 16, then each lane's bit to a lane of ones. (Bit 1 moved by a multiply,
    // `(bits * 0x8001) & 0x10001`, was slower: 0.247 -> 0.263 ms at ρ = 0.5 and 0.335 -> 0.361 at 0.176
    // on the H200, 201M BF16, while the unchanged 8-bit path kept its time: docs/PERFORMANCE.md.)
    let lanes = ((bits & 1u) | ((bits & 2u) << 15u)) * 0xffffu;
#endif
#endif
    return (((w & code.low) + code.add) | ((w << code.sign_shift) & code.sign)) & lanes;
}

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
    // tiles before it in the group (all full tiles: only the stream's last tile is partial). Every word
    // this needs is loaded at once, so finding the tile costs one memory latency, not a chain of them.
    let g0 = tile - tile % 16u;
#if SUBGROUP
    // Every subgroup sums the group's earlier tiles itself (lane i: tiles g0 + i, g0 + i + size, ...),
    // and thread 0 publishes its subgroup's sum through the uniform load below: one barrier, no serial
    // sum. With the branch-free bit reads and the mask tiles' words kept out of workgroup memory: 0.251
    // -> 0.247 ms at ρ = 0.5, 0.345 -> 0.335 at 0.176, 0.318 -> 0.308 at 0.05 (201M BF16 on the H200,
    // docs/PERFORMANCE.md, seventeenth session).
    let dir = stream[p.dir_idx + select(tile / 16u, tile, p.tile_starts != 0u)];
    let dt = stream[p.desc_idx + tile];
    var part = 0u;
    for (var i = sg_lane; i < 16u; i += sg_size) {
        let t = g0 + i;
        if p.tile_starts == 0u && t < tile {
            part += tile_words(stream[p.desc_idx + t], TILE);
        }
    }
    let total = subgroupAdd(part);
    if lid == 0u {
        wg_info = vec2<u32>(total + dir, dt);
    }
#else
    // One thread per descriptor of the group and one for the directory word, summed by thread 0.
    if lid < 16u {
        var part = 0u;
        let dg = stream[p.desc_idx + min(g0 + lid, p.tiles - 1u)];
        if g0 + lid == tile {
            wg_info.y = dg;
        } else if p.tile_starts == 0u && g0 + lid < tile {
            part = tile_words(dg, TILE);
        }
        wg_part[lid] = part;
    } else if lid == 16u {
        wg_part[16] = stream[p.dir_idx + select(tile / 16u, tile, p.tile_starts != 0u)];
    }
    workgroupBarrier();
    if lid == 0u {
        var start = 0u;
        for (var i = 0u; i < 17u; i++) {
            start += wg_part[i];
        }
        wg_info.x = start;
    }
#endif
    // A positions tile's mask starts empty; cleared for every tile, ordered before its atomicOrs by the
    // barrier of this uniform load, so the positions tiles' chain has no barrier of its own for it. On
    // the H200 (201M BF16, b c b c): 0.296 -> 0.295 ms at ρ = 0.176, 0.257 -> 0.255 at 0.05, 0.246 ->
    // 0.245 at 0.02, unchanged at 0.5 (docs/PERFORMANCE.md, twenty-third session, call 4).
    atomicStore(&wg_mask[lid], 0u);
    let info = workgroupUniformLoad(&wg_info);
    base = p.data_idx + info.x;
    let d = info.y;
    let enc = d & 3u;
    let k = (d >> 14u) & 0x1fffu;
    let width = value_width(d);
    let mwords = (len + 31u) / 32u;

    // The tile's mask, and where its values start (bits after `base`). Only a positions tile builds its
    // mask in workgroup memory; a mask tile's thread keeps its word.
    var values = 0u;
    var mw = 0u;
    if enc == 0u {
        if lid < mwords {
            mw = data_word(lid);
        }
        values = mwords * 32u;
    }
    if enc == 1u {
        let l = low_bits(k, len);
        if lid < min((k * l + 31u) / 32u, 64u) {
            wg_low[lid] = data_word(lid);
        }
        // wg_mask was cleared before the tile's descriptor was read, and wg_low and wg_first are read
        // or updated only after the scan's barriers below: no barrier of their own here.
        atomicStore(&wg_first[lid], k);
        let ulen = k + ((len - 1u) >> l) + 1u;
        // The upper bits in chunks of `cb` bits a thread: one word a thread, or, where the vector has at
        // most 4 · WG bits, the smallest power of two that puts every chunk in one round, so its few ones
        // spread over the workgroup's subgroups instead of looping on a few threads of one (ρ = 0.01,
        // L = 6: 105 bits, 41 ones, 10 a thread on 4 threads in words, at most 1 on 105 in 1-bit
        // chunks). On the H200 (201M BF16, docs/PERFORMANCE.md, twenty-second session, call 3) 0.253 ->
        // 0.237 ms at ρ = 0.01, 0.257 -> 0.246 at 0.02, 0.268 -> 0.256 at 0.05 (e4m3 sign-packed 0.202
        // -> 0.185 at 0.01, F16 and F32 3-6 %). Used for longer vectors too (call 1) they were slower,
        // 0.293 -> 0.301 at ρ = 0.176 (16-bit chunks) and 0.273 -> 0.276 at 0.1 (8-bit): every subgroup
        // of the loop pays its fullest thread, and four subgroups each waiting on their fullest chunk
        // issue more iterations than two waiting on their fullest word.
        let q = (ulen + WG - 1u) / WG;
        let cb = select(32u, select(2u << firstLeadingBit(q - 1u), 1u, q <= 1u), q <= 4u);
        let chunks = (ulen + cb - 1u) / cb;
        var ones_before = 0u;
        for (var round = 0u; round * WG < chunks; round++) {
            let j = round * WG + lid;
            var w = 0u;
            if j < chunks {
                w = read_bits(k * l + j * cb, min(cb, ulen - j * cb));
            }
            let s = scan_excl(countOneBits(w), lid);
            var r = ones_before + s.x;
            for (var m = w; m != 0u; m &= m - 1u) {
                let b = firstTrailingBit(m);
                let pos = ((j * cb + b - r) << l) | low_part(r * l, l);
                // In the tile for every valid stream; clamped so a corrupt one cannot write past the mask.
                let wi = min(pos >> 5u, 127u);
                atomicOr(&wg_mask[wi], 1u << (pos & 31u));
                atomicMin(&wg_first[wi], r);
                r++;
            }
            ones_before += s.y;
        }
        values = k * l + ulen;
    }
    if enc == 1u {
        // The mask and each word's first rank are complete.
        workgroupBarrier();
    } else {
        let s = scan_excl(countOneBits(mw), lid);
        // Each mask word and the number of set bits before it, in the arrays a positions tile fills:
        // the output reads every tile's mask alike. (Stores of the thread's own index: ordered after the
        // clear above by program order.)
        atomicStore(&wg_mask[lid], mw);
        atomicStore(&wg_first[lid], s.x);
        workgroupBarrier();
    }

    // The output, in version 1's structure (shaders/decompress.wgsl): thread `lid` owns vec4
    // `r * WG + lid` of the tile in round r (EPV elements inside one mask word); its stream words, two
    // per output word, clamped to the binding, are loaded in the round that decodes them. Loading every
    // round's words before decoding any (version 1's plain decompress) held 40 registers here, and the
    // H200 then runs 12 workgroups per SM instead of 16: one loop takes 25 registers and 0.240 / 0.321 /
    // 0.294 / 0.270 -> 0.223 / 0.303 / 0.277 / 0.265 ms at ρ = 0.5 / 0.176 / 0.05 / 0.01 (201M BF16;
    // F32 0.455 / 0.535 / 0.489 / 0.417 -> 0.364 / 0.416 / 0.387 / 0.370; e4m3 1 % slower, its 8-bit
    // form already held 30; docs/PERFORMANCE.md, eighteenth session).
    let code = tile_code(d);
    let lim = arrayLength(&stream) - 1u;
    // Whether no gather of the tile can read past the binding (a code index is at most TILE, and a
    // gather loads the word after its code's): then its loads need no clamp, which is every tile but
    // those near the binding's end. On the H200 (201M, ρ = 0.5 / 0.176 / 0.05, same call): BF16 0.226 / 0.305 /
    // 0.279 -> 0.218 / 0.295 / 0.270 ms, F16 alike, e4m3 and F32 0-3 % (docs/PERFORMANCE.md, nineteenth
    // session).
    let reach = (values >> 5u) + TILE * code.width / 32u + 2u;
    let in_binding = lim >= reach && base <= lim - reach;
    for (var r = 0u; r < ROUNDS; r++) {
        let e0 = (r * WG + lid) * EPV;
        var bits = 0u;
        var first = e0; // the rank of the vec's first code (the element index itself in a raw tile)
        if e0 < len {
            bits = ROUND_BITS_MASK;
            let sh = e0 & 31u;
            if enc != 3u {
                let mx = atomicLoad(&wg_mask[e0 >> 5u]);
                bits = (mx >> sh) & ROUND_BITS_MASK;
                first = atomicLoad(&wg_first[e0 >> 5u]) + countOneBits(mx & ((1u << sh) - 1u));
            }
            if e0 + EPV > len {
                bits &= (1u << (len - e0)) - 1u;
            }
        }
        let q = r * WG + lid;
        let b = word_bits(bits);
        var x: vec4<u32>;
        if in_binding {
            x = gather(bits, first, values, code.width, lim, false);
        } else {
            x = gather(bits, first, values, code.width, lim, true);
        }
        let v = vec4<u32>(deposit(b.x, x.x, code), deposit(b.y, x.y, code), deposit(b.z, x.z, code), deposit(b.w, x.w, code));
        if tile < p.full_tiles {
            dst4[tile * VECS_PER_TILE + q] = v;
        } else {
            // The partial last tile: whole words, and a read-modify-write of a last word the tensor only
            // partly covers, so bytes past the range are preserved.
            for (var k4 = 0u; k4 < 4u; k4++) {
                let w = q * 4u + k4;
                let first = w * EPW;
                if first < len {
                    let n_in = min(len - first, EPW);
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
