//! Writes `demos/data/activations_small.safetensors`, the small activation dump the README's `analyze`
//! example runs on, deterministically (so the committed file can be checked and regenerated):
//!
//! * three BF16 ReLU² activations (`bitsparse::cpu::synthetic_relu2`) of an FFN's hidden layer at
//!   densities 0.5, 0.176 and 0.05, shape 32 tokens × 1024 hidden units each;
//! * the F32 pre-activation z of one layer (normal, so half its values are negative: no sign packing);
//! * the I64 token ids of the batch (not an activation: `analyze` skips it, `compress` stores it verbatim).
//!
//! `cargo run --example make_dump [-- OUT]`

use bitsparse::cpu::{synthetic_relu2, SplitMix64};
use bitsparse::DType;
use bitsparse_files::safetensors;

const TOKENS: u64 = 32;
const HIDDEN: u64 = 1024;

/// Standard normal (Box–Muller) from the library's SplitMix64, the generator of the F32 and I64 tensors.
fn normal(rng: &mut SplitMix64) -> f64 {
    let (u, v) = (rng.unit(), rng.unit());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/data/activations_small.safetensors").to_string());
    let n = (TOKENS * HIDDEN) as usize;
    let a0 = synthetic_relu2(n, 0.5, DType::Bf16, 10);
    let a1 = synthetic_relu2(n, 0.176, DType::Bf16, 11);
    let a2 = synthetic_relu2(n, 0.05, DType::Bf16, 12);
    let mut rng = SplitMix64(13);
    let z: Vec<u8> = (0..TOKENS * 256).flat_map(|_| (normal(&mut rng) as f32 - 0.9).to_le_bytes()).collect();
    let ids: Vec<u8> = (0..TOKENS).flat_map(|_| ((rng.next_u64() % 50257) as i64).to_le_bytes()).collect();
    let shape = [TOKENS, HIDDEN];
    let bytes = safetensors::write(
        &[
            ("layers.0.mlp.act", "BF16", &shape, &a0),
            ("layers.1.mlp.act", "BF16", &shape, &a1),
            ("layers.2.mlp.act", "BF16", &shape, &a2),
            ("layers.2.mlp.pre_act", "F32", &[TOKENS, 256], &z),
            ("input_ids", "I64", &[TOKENS], &ids),
        ],
        Some(&[("generator", "bitsparse demos/make_dump.rs"), ("activation", "relu2")]),
    );
    if let Err(e) = std::fs::write(&out, &bytes) {
        eprintln!("error: {out}: {e}");
        std::process::exit(1);
    }
    println!("wrote {out} ({} bytes)", bytes.len());
}
