// Layout of the arena's control buffer (`ctrl`, u32 words); mirrored in src/arena.rs (`ctrl` module).
//
// [0] head: next free word of the arena          [1] failed: status bits of every failure this step
// [2] high: high-water mark in words (sizing)     [3] cap: arena capacity in words
// [4..8) spare
// [8 + 8 s ..] slot s (8 words): base word, status bits, value words, spare, amax_accum (FP8: f32 bits
//              of the amax its last FP8 compress saw), scale_used (FP8: f32 bits), 2 spare
// after the slots: gate indirect args, 4 words each (x, y, z, pad), written by `arena.wgsl:gate`
const CTRL_HEAD: u32 = 0u;
const CTRL_FAILED: u32 = 1u;
const CTRL_HIGH: u32 = 2u;
const CTRL_CAP: u32 = 3u;
const CTRL_SLOTS: u32 = 8u;
const SLOT_STRIDE: u32 = 8u;
const SLOT_BASE: u32 = 0u;
const SLOT_STATUS: u32 = 1u;
const SLOT_WORDS: u32 = 2u;
const SLOT_AMAX: u32 = 4u;
const SLOT_SCALE: u32 = 5u;
const STATUS_SIGN: u32 = 1u;
const STATUS_OVERFLOW: u32 = 2u;
const STATUS_SKIPPED: u32 = 4u;
