// The uniform of the version-2 decoder's kernels (decompress_v2.wgsl, decompress_v2_index.wgsl): one
// dispatch's tiles and where the stream's sections start.

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
