//! Writes `demos/data/activations_small.safetensors`, the small activation dump the README's `analyze`
//! example runs on, deterministically (so the committed file can be checked and regenerated):
//!
//! * three BF16 ReLU² activations (`bitsparse::cpu::synthetic_relu2`) of an FFN's hidden layer at
//!   densities 0.5, 0.176 and 0.05, shape 32 tokens × 1024 hidden units each;
//! * the F32 pre-activation z of one layer (normal, so half its values are negative: no sign packing);
//! * the I64 token ids of the batch (not an activation: `analyze` skips it, `compress` stores it verbatim).
//!
//! `cargo run --example make_dump [-- OUT]`

use bitsparse::cpu::synthetic_relu2;
use bitsparse::files::safetensors;
use bitsparse::DType;

const TOKENS: u64 = 32;
const HIDDEN: u64 = 1024;

/// A small deterministic generator (SplitMix64) for the F32 and I64 tensors.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/demos/data/activations_small.safetensors").to_string());
    let n = (TOKENS * HIDDEN) as usize;
    let a0 = synthetic_relu2(n, 0.5, DType::Bf16, 10);
    let a1 = synthetic_relu2(n, 0.176, DType::Bf16, 11);
    let a2 = synthetic_relu2(n, 0.05, DType::Bf16, 12);
    let mut rng = Rng(13);
    let z: Vec<u8> = (0..TOKENS * 256).flat_map(|_| (rng.normal() as f32 - 0.9).to_le_bytes()).collect();
    let ids: Vec<u8> = (0..TOKENS).flat_map(|_| ((rng.next() % 50257) as i64).to_le_bytes()).collect();
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
