//! The demos' shared code: the demo trainer of `train_ffn.rs` (a residual ReLU² FFN stack trained on
//! wgpu with a dense or a BitSparse activation cache), also driven by `tests/train_ffn.rs`.

#[path = "train_ffn/mod.rs"]
pub mod train_ffn;
