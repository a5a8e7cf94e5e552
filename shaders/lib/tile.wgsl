// Shared tile geometry and the workgroup-wide scan used by compress and decompress.
//
// A tile is 4096 elements handled by one workgroup of 128 threads. Each thread handles one vec4<u32>
// (16 bytes: 4 32-bit, 8 16-bit or 16 8-bit elements) per round; round r, thread `li` owns vec `r * WG + li`
// of the tile, so loads and stores are fully coalesced. Compacted order = element order = (round, thread) order.
//
// Defines: BITS32 (32-bit elements, 8 rounds; takes precedence over BITS8), BITS8 (8-bit elements, else
// 16-bit), SUBGROUP (use subgroup scans, else a shared-memory scan).

#include "lib/elem.wgsl"

// One bit per element of word `w`: bit e set when element e is not all bits zero. Scalar code only:
// data-dependent indexing into vectors would put them in local memory.
fn nz_word(w: u32) -> u32 {
#if BITS32
    return select(0u, 1u, w != 0u);
#else
#if BITS8
    return select(0u, 1u, (w & 0xffu) != 0u) | select(0u, 2u, (w & 0xff00u) != 0u)
        | select(0u, 4u, (w & 0xff0000u) != 0u) | select(0u, 8u, (w & 0xff000000u) != 0u);
#else
    return select(0u, 1u, (w & 0xffffu) != 0u) | select(0u, 2u, (w >> 16u) != 0u);
#endif
#endif
}

// One bit per element of word `w` whose sign bit is set.
fn sign_word(w: u32) -> u32 {
#if BITS32
    return w >> 31u;
#else
#if BITS8
    return ((w >> 7u) & 1u) | ((w >> 14u) & 2u) | ((w >> 21u) & 4u) | ((w >> 28u) & 8u);
#else
    return ((w >> 15u) & 1u) | ((w >> 30u) & 2u);
#endif
#endif
}

// 16-bit elements take both halves of a word at once (fewer integer instructions, which the fused
// forward spends much of its time on, docs/PERFORMANCE.md): a flag at bit 15 / bit 31 of each word for
// its low / high element, then the eight flags moved to bits 0..7 in element order with four shifts.

// Bit 15 / 31 set where the low / high element is not all zero: the magnitude bits carry into the
// sign position (no carry crosses the halves: 0x7fff + 0x7fff < 0x10000), or the sign bit is set.
fn nz_flags16(v: vec4<u32>) -> vec4<u32> {
    let mags = vec4<u32>(0x7fff7fffu);
    return (((v & mags) + mags) | v) & vec4<u32>(0x80008000u);
}

// The flags at bits 15 and 31 of four words, as bits 0..7 (word k's low element at bit 2k).
fn gather_flags16(f: vec4<u32>) -> u32 {
    let u = (f.x >> 15u) | (f.y >> 13u) | (f.z >> 11u) | (f.w >> 9u);
    return (u | (u >> 15u)) & 0xffu;
}

// One bit per element of `v`: bit j set when element j is not all bits zero.
fn nz_bits(v: vec4<u32>) -> u32 {
    if BITS == 16u {
        return gather_flags16(nz_flags16(v));
    }
    return nz_word(v.x) | (nz_word(v.y) << EPW) | (nz_word(v.z) << (2u * EPW)) | (nz_word(v.w) << (3u * EPW));
}

// One bit per element whose sign bit is set.
fn sign_bits(v: vec4<u32>) -> u32 {
    if BITS == 16u {
        return gather_flags16(v & vec4<u32>(0x80008000u));
    }
    return sign_word(v.x) | (sign_word(v.y) << EPW) | (sign_word(v.z) << (2u * EPW)) | (sign_word(v.w) << (3u * EPW));
}

// Mask word (within the tile) and bit shift that hold the EPV bits of thread `li` in round `r`.
fn mask_word_of(r: u32, li: u32) -> u32 {
    return r * (WG * EPV / 32u) + li / (32u / EPV);
}
fn mask_shift_of(li: u32) -> u32 {
    return (li % (32u / EPV)) * EPV;
}

#if BITS32
// 32-bit elements take 8 rounds, but the scan below takes one vec4 (4 rounds) per thread: rounds r and
// r + 4 share component r, round r in the low 16 bits and round r + 4 in the high 16 bits. No half can
// carry into the other: a round's workgroup total is at most WG * EPV = 512.
fn pack_counts(m: array<u32, 8>) -> vec4<u32> {
    return vec4<u32>(countOneBits(m[0]) | (countOneBits(m[4]) << 16u), countOneBits(m[1]) | (countOneBits(m[5]) << 16u),
                     countOneBits(m[2]) | (countOneBits(m[6]) << 16u), countOneBits(m[3]) | (countOneBits(m[7]) << 16u));
}
// The 8 per-round values of a vec4 packed like `pack_counts`.
fn unpack_rounds(v: vec4<u32>) -> array<u32, 8> {
    let lo = v & vec4<u32>(0xffffu);
    let hi = v >> vec4<u32>(16u);
    return array<u32, 8>(lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}
#endif

// Words of a stream of `count` values of `width` bits.
fn stream_words(count: u32, width: u32) -> u32 {
    return (count * width + 31u) / 32u;
}

// ---- workgroup exclusive scan of one vec4<u32> per thread (one component per round) ----

#if SUBGROUP
// One total per subgroup: WG / (the adapter's smallest subgroup size), set by the host (kernels.rs).
// Sized to fit because every byte of workgroup memory costs occupancy on the H200 (PERFORMANCE.md).
override SCAN_SLOTS: u32 = 32u;
#if BITS32
// 32-bit elements: the eight rounds already packed two per component (`pack_counts`).
alias ScanVec = vec4<u32>;
#else
// 16- and 8-bit elements: two rounds share a word (round 2i in the low half, 2i + 1 in the high half),
// so the scan moves half the words: half the subgroup shuffles and adds, half the slots. Every count is
// the popcount of one mask word (at most 32), so a round's workgroup total stays below 2^16 whatever a
// stream holds, and no half carries into the other. On the H200 (201M BF16, ρ = 0.5 / 0.176 / 0.05, same
// call): compress 0.253 / 0.203 / 0.192 -> 0.248 / 0.198 / 0.187 ms, fused forward 0.406 / 0.347 / 0.336
// -> 0.385 / 0.328 / 0.315, fused backward 2-3 % faster, at the same register counts (32, 31); the
// variants with u32 staging (adapters without 16-bit types) went 40 -> 28-32 registers (docs/PERFORMANCE.md,
// twentieth session).
alias ScanVec = vec2<u32>;
#endif
var<workgroup> scan_sg: array<ScanVec, SCAN_SLOTS>;

#else
var<workgroup> scan_sh: array<vec4<u32>, WG>;
#endif

struct ScanOut {
    excl: vec4<u32>,  // this thread's exclusive prefix, per round
    total: vec4<u32>, // the workgroup total, per round
}

// `li` is the thread's logical index (see `logical_index`). Must be called in uniform control flow,
// at most once per workgroup on the subgroup path (no barrier protects `scan_sg` for a second call:
// every barrier costs the codec kernels time on the H200).
fn wg_scan(c: vec4<u32>, li: u32, sg_lane: u32, sg_size: u32) -> ScanOut {
    var out: ScanOut;
#if SUBGROUP
#if BITS32
    let c2 = c;
#else
    let c2 = vec2<u32>(c.x | (c.y << 16u), c.z | (c.w << 16u));
#endif
    let incl = subgroupInclusiveAdd(c2);
    let sg = li / sg_size;
    if sg_lane == sg_size - 1u {
        scan_sg[sg] = incl;
    }
    workgroupBarrier();
    var base = ScanVec(0u);
    var tot = ScanVec(0u);
    let nsg = WG / sg_size;
    for (var i = 0u; i < nsg; i++) {
        let t = scan_sg[i];
        base += select(ScanVec(0u), t, i < sg);
        tot += t;
    }
#if BITS32
    out.excl = base + incl - c2;
    out.total = tot;
#else
    let ex = base + incl - c2;
    out.excl = vec4<u32>(ex.x & 0xffffu, ex.x >> 16u, ex.y & 0xffffu, ex.y >> 16u);
    out.total = vec4<u32>(tot.x & 0xffffu, tot.x >> 16u, tot.y & 0xffffu, tot.y >> 16u);
#endif
#else
    // Hillis-Steele inclusive scan in shared memory.
    scan_sh[li] = c;
    workgroupBarrier();
    var acc = c;
    for (var d = 1u; d < WG; d <<= 1u) {
        var add = vec4<u32>(0u);
        if li >= d {
            add = scan_sh[li - d];
        }
        workgroupBarrier();
        acc += add;
        scan_sh[li] = acc;
        workgroupBarrier();
    }
    out.excl = acc - c;
    out.total = scan_sh[WG - 1u];
    workgroupBarrier();
#endif
    return out;
}

// The thread's logical index: with subgroups, (subgroup id, lane) order, so the subgroup scan's lane
// order is the data order whatever the hardware's mapping of local invocation indices to lanes. This
// relies on full subgroups, which a 128-thread workgroup has on every subgroup size from 4 to 128.
fn logical_index(lid: u32, sg_id: u32, sg_lane: u32, sg_size: u32) -> u32 {
#if SUBGROUP
    return sg_id * sg_size + sg_lane;
#else
    return lid;
#endif
}

// Each round's first value in the tile for this thread (its exclusive prefix in the round plus the
// totals of the earlier rounds), and the tile's value count, from its mask bits `m`: one wg_scan (so
// the same rule: uniform control flow, at most once per workgroup). The decompress and the
// version-2 writer both start from it.
#if BITS32
struct RoundStarts {
    starts: array<u32, 8>,
    total: u32,
}

// The same starts packed like `pack_counts`: round r in half r / 4 of component r % 4.
fn round_starts_packed(m: array<u32, ROUNDS>, li: u32, sg_lane: u32, sg_size: u32) -> vec4<u32> {
    let s = wg_scan(pack_counts(m), li, sg_lane, sg_size);
    let t = s.total;
    // Both halves at once: rounds 0-3 (low) and 4-7 (high) before each component's round, then the
    // low rounds' total added to every high half. No half carries: a tile holds at most 4,096 values.
    let p = vec4<u32>(0u, t.x, t.x + t.y, t.x + t.y + t.z);
    let low_total = (p.w + t.w) & 0xffffu;
    return s.excl + p + vec4<u32>(low_total << 16u);
}

fn round_starts(m: array<u32, ROUNDS>, li: u32, sg_lane: u32, sg_size: u32) -> RoundStarts {
    let s = wg_scan(pack_counts(m), li, sg_lane, sg_size);
    let excl8 = unpack_rounds(s.excl);
    let total8 = unpack_rounds(s.total);
    var out: RoundStarts;
    var before = 0u;
    for (var r = 0u; r < 8u; r++) {
        out.starts[r] = excl8[r] + before;
        before += total8[r];
    }
    out.total = before;
    return out;
}
#else
struct RoundStarts {
    starts: vec4<u32>,
    total: u32,
}

fn round_starts(m: array<u32, ROUNDS>, li: u32, sg_lane: u32, sg_size: u32) -> RoundStarts {
#if BITS8
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), 0u, 0u);
#else
    let counts = vec4<u32>(countOneBits(m[0]), countOneBits(m[1]), countOneBits(m[2]), countOneBits(m[3]));
#endif
    let s = wg_scan(counts, li, sg_lane, sg_size);
    let t = s.total;
    return RoundStarts(s.excl + vec4<u32>(0u, t.x, t.x + t.y, t.x + t.y + t.z), t.x + t.y + t.z + t.w);
}
#endif
