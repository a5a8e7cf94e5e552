// Reading a version-2 tile's data (docs/FORMAT.md §14), shared by the decoder's kernels
// (decompress_v2.wgsl, decompress_v2_index.wgsl). The includer declares `stream` (the stream's words),
// `p` (a uniform with `sign_pack` and `mbits`) and `base` (the word of `stream` where the tile's data
// starts), and includes lib/elem.wgsl and lib/v2.wgsl first.

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
        return BITS - p.sign_pack;
    }
    return (1u - p.sign_pack) + eb + p.mbits;
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
