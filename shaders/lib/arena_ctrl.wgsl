// Layout of the arena's control buffer (`ctrl`, u32 words); mirrored in src/arena.rs (`ctrl` module, checked by
// its test `ctrl_mirror_matches_arena_ctrl_wgsl`).
//
// [0] head: next free word of the arena          [1] failed: status bits of every failure this step
// [2] high: high-water mark in words (sizing)     [3] cap: arena capacity in words
// [4] tail: oldest live word when the arena is used as a ring (FIFO release); 0 otherwise
// [5..8) spare
// [8 + 8 s ..] slot s (8 words): base word, status bits, value words, limit (the slot may write below
//              this word), amax_accum (FP8: f32 bits of the amax its last FP8 compress saw), scale_used
//              (FP8: f32 bits), head before the reservation (LIFO pop restores it), spare
// after the slots: gate indirect args, 4 words each (x, y, z, pad), written by `arena.wgsl:gate`
const CTRL_HEAD: u32 = 0u;
const CTRL_FAILED: u32 = 1u;
const CTRL_HIGH: u32 = 2u;
const CTRL_CAP: u32 = 3u;
const CTRL_TAIL: u32 = 4u;
const CTRL_SLOTS: u32 = 8u;
const SLOT_STRIDE: u32 = 8u;
const SLOT_BASE: u32 = 0u;
const SLOT_STATUS: u32 = 1u;
const SLOT_WORDS: u32 = 2u;
const SLOT_LIMIT: u32 = 3u;
const SLOT_AMAX: u32 = 4u;
const SLOT_SCALE: u32 = 5u;
const SLOT_PREV_HEAD: u32 = 6u;
// Words kept free between the head and the tail of a wrapped ring, so head == tail always means empty.
const RING_GAP: u32 = 4u;
const STATUS_SIGN: u32 = 1u;
const STATUS_OVERFLOW: u32 = 2u;
const STATUS_SKIPPED: u32 = 4u;
