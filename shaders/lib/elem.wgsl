// Tile and element geometry shared by every codec kernel: a tile is 4096 elements handled by one
// workgroup of 128 threads, each owning one vec4<u32> (EPV elements) per round.
//
// Defines: BITS32 (32-bit elements, 8 rounds; takes precedence over BITS8), BITS8 (8-bit elements, else
// 16-bit).

const WG: u32 = 128u;
const TILE: u32 = 4096u;
const TILE_MASK_WORDS: u32 = 128u;
#if BITS32
const BITS: u32 = 32u;
const EPV: u32 = 4u;
const ROUNDS: u32 = 8u;
const ELEM_MASK: u32 = 0xffffffffu;
#else
#if BITS8
const BITS: u32 = 8u;
const EPV: u32 = 16u;          // elements per vec4
const ROUNDS: u32 = 2u;        // TILE / (WG * EPV)
const ELEM_MASK: u32 = 0xffu;
#else
const BITS: u32 = 16u;
const EPV: u32 = 8u;
const ROUNDS: u32 = 4u;
const ELEM_MASK: u32 = 0xffffu;
#endif
#endif
const VECS_PER_TILE: u32 = TILE * BITS / 128u;
const EPW: u32 = 32u / BITS;                   // elements per word

const WORD_BITS_MASK: u32 = (1u << EPW) - 1u; // one bit per element of a word
const ROUND_BITS_MASK: u32 = (1u << EPV) - 1u; // one bit per element of a vec (a thread's round)

// The four words of selection bits of a vec's element bits `mr` (element i of the vec at bit i).
fn word_bits(mr: u32) -> vec4<u32> {
    return vec4<u32>(mr, mr >> EPW, mr >> (2u * EPW), mr >> (3u * EPW)) & vec4<u32>(WORD_BITS_MASK);
}
