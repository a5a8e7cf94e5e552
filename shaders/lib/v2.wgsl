// Format version 2 (docs/FORMAT.md §14) pieces shared by its writer (compress_v2.wgsl) and decoder
// (decompress_v2.wgsl); the CPU counterparts are in src/format/v2.rs.

// A descriptor's `eb` for plain values (§14.4).
const PLAIN: u32 = 15u;

// Elias–Fano low bits, without a division: the largest L with k · 2^L <= len (1 <= k <= len), which is
// flb(len) - flb(k), less one where k << that exceeds len.
fn low_bits(k: u32, len: u32) -> u32 {
    let l = firstLeadingBit(len) - firstLeadingBit(k);
    return select(l, l - 1u, (k << l) > len);
}
