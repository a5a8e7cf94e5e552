// The demo trainer's generic kernel parameters: eight u32 words whose meaning each entry point of
// train_ops.wgsl / train_stats.wgsl documents (one Rust-side struct fills them all).
struct Params {
    u0: u32,
    u1: u32,
    u2: u32,
    u3: u32,
    u4: u32,
    u5: u32,
    u6: u32,
    u7: u32,
}
