// The dense input of a compress, tile by tile: a vec4 per thread and round. The includer declares
// `src4` (the full tiles, a vec4 each), `src_tail` (the partial last tile's words) and a uniform `p`
// with `full_tiles` and `tail_len`, after shaders/lib/tile.wgsl.

// ALL_FULL: 1 where the host builds the pipeline for dispatches without a partial tile (then
// `full_tile` folds to true and the partial tile's code goes); 0 (the default) tests each tile.
override ALL_FULL: u32 = 0u;
fn full_tile(t: u32) -> bool {
    return ALL_FULL != 0u || t < p.full_tiles;
}

// The vec4 `q` of tile `t`; the final partial tile is read word by word and zero-extended.
fn load_vec(t: u32, q: u32) -> vec4<u32> {
    if full_tile(t) {
        return src4[t * VECS_PER_TILE + q];
    }
    var v = vec4<u32>(0u);
    let words = (p.tail_len * BITS + 31u) / 32u;
    for (var k = 0u; k < 4u; k++) {
        let w = q * 4u + k;
        if w < words {
            v[k] = src_tail[w];
        }
    }
    return v;
}

// Bits of the elements of vec `q` that lie inside tile `t` (all ones except in the partial tile).
fn valid_bits(t: u32, q: u32) -> u32 {
    let all = select(0xffffffffu, (1u << EPV) - 1u, EPV < 32u);
    if full_tile(t) {
        return all;
    }
    let first = q * EPV;
    if first >= p.tail_len {
        return 0u;
    }
    let left = p.tail_len - first;
    return select((1u << left) - 1u, all, left >= EPV);
}
