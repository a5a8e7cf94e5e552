// Layout of the arena's control buffer (`ctrl`, u32 words); mirrored in src/arena.rs.
//
// [0] head: next free word of the arena          [1] failed: status bits of every failure this step
// [2] high: high-water mark in words (sizing)     [3] cap: arena capacity in words
// [4..8) step-ok indirect args (x, y, z, pad), written by `arena.wgsl:gate`
// [8 + 4 s ..] slot s: base word, status bits, value words, spare
const CTRL_HEAD: u32 = 0u;
const CTRL_FAILED: u32 = 1u;
const CTRL_HIGH: u32 = 2u;
const CTRL_CAP: u32 = 3u;
const CTRL_GATE: u32 = 4u;
const CTRL_SLOTS: u32 = 8u;
const SLOT_BASE: u32 = 0u;
const SLOT_STATUS: u32 = 1u;
const SLOT_WORDS: u32 = 2u;
const STATUS_SIGN: u32 = 1u;
const STATUS_OVERFLOW: u32 = 2u;
const STATUS_SKIPPED: u32 = 4u;
