//! Training configuration: model shape, batch, optimiser, and which hidden-activation cache to use.

use bitsparse::{Error, Result};

/// How the FFN hidden activation is kept between forward and backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// What autograd keeps for `relu(z)²` between two linears: r = relu(z) and a = r², both dense BF16.
    DenseBaseline,
    /// Dense r only; backward recomputes a = r² (the minimal dense cache).
    DenseMinimal,
    /// r compressed into the library's GPU arena by its fused forward; the fused backward rebuilds a and
    /// dL/dz from it (BitSparse).
    BitSparse,
    /// r compressed by the library's plain codec into per-layer worst-case slots, a and dL/dz rebuilt by
    /// the trainer's kernels (a cross-check of the arena path).
    BitSparseCodec,
    /// Like `BitSparse`, but the arena stores r as FP8 (E4m3 or E5m2) with a delayed per-tensor scale:
    /// lossy by design, so reported beside the others and never part of the bit-identity check.
    BitSparseFp8(bitsparse::DType),
}

impl CacheMode {
    /// Name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::DenseBaseline => "dense",
            CacheMode::DenseMinimal => "dense-minimal",
            CacheMode::BitSparse => "bitsparse",
            CacheMode::BitSparseCodec => "bitsparse-codec",
            CacheMode::BitSparseFp8(bitsparse::DType::E5m2) => "bitsparse-fp8-e5m2",
            CacheMode::BitSparseFp8(_) => "bitsparse-fp8-e4m3",
        }
    }

    /// Lossy modes are compared by how far their loss drifts, not bit for bit.
    pub fn is_lossy(self) -> bool {
        matches!(self, CacheMode::BitSparseFp8(_))
    }
}

/// Everything that defines a run. Two runs with the same config (cache mode aside) must produce
/// bit-identical losses and weights.
#[derive(Clone, Debug)]
pub struct Config {
    /// Model width d (multiple of 4).
    pub d: u32,
    /// FFN blocks L.
    pub layers: u32,
    /// Tokens per step T (predictions per step; multiple of 4).
    pub tokens: u32,
    /// Characters of context k whose embeddings are summed into the input of each prediction.
    pub context: u32,
    /// Optimiser steps.
    pub steps: u32,
    /// Adam learning rate.
    pub lr: f32,
    /// Seed for weights and batches.
    pub seed: u64,
    /// Log (and read back statistics) every this many steps.
    pub log_every: u32,
    /// Store the compressed r without its sign bit (ReLU output is never negative).
    pub sign_pack: bool,
    /// Arena capacity for the BitSparse mode; `None`: sized for `arena_density` (see
    /// `cache::initial_arena_bytes`).
    pub arena_bytes: Option<u64>,
    /// Density the initial arena is sized for when `arena_bytes` is `None`.
    pub arena_density: f64,
    /// How the arena's compresses place their tiles (unordered by default: the arena's choice; the
    /// trained weights are the same either way).
    pub tile_order: bitsparse::TileOrder,
    /// Steps after which the dense run writes each layer's relu(z) (BF16) to `dump_dir` as
    /// `relu_step<S>.safetensors` (issue 16's trained-activation table). Not part of the training.
    pub dump_at: Vec<u32>,
    /// Where the dumps go.
    pub dump_dir: std::path::PathBuf,
}

impl Default for Config {
    /// The small configuration `cargo run --release --example train_ffn` uses: well under two minutes
    /// for all three modes on lavapipe.
    fn default() -> Config {
        Config {
            d: 64,
            layers: 4,
            tokens: 128,
            context: 4,
            steps: 150,
            lr: 3e-3,
            seed: 1,
            log_every: 25,
            sign_pack: true,
            arena_bytes: None,
            arena_density: 0.5,
            tile_order: bitsparse::TileOrder::Unordered,
            dump_at: Vec::new(),
            dump_dir: std::path::PathBuf::from("target/train_ffn/dumps"),
        }
    }
}

impl Config {
    /// A tiny configuration for tests.
    pub fn tiny() -> Config {
        Config {
            d: 32,
            layers: 4,
            tokens: 64,
            context: 3,
            steps: 8,
            lr: 1e-2,
            seed: 7,
            log_every: 4,
            sign_pack: true,
            arena_bytes: None,
            arena_density: 0.5,
            tile_order: bitsparse::TileOrder::Unordered,
            dump_at: Vec::new(),
            dump_dir: std::path::PathBuf::from("target/train_ffn/dumps"),
        }
    }

    /// FFN hidden width, 4d.
    pub fn hidden(&self) -> u32 {
        4 * self.d
    }

    /// Checks the shape constraints the kernels rely on.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(m.to_string()));
        if self.d == 0 || self.d % 4 != 0 {
            return bad("--d must be a positive multiple of 4");
        }
        if self.tokens == 0 || self.tokens % 4 != 0 {
            return bad("--tokens must be a positive multiple of 4");
        }
        if self.layers == 0 || self.context == 0 || self.steps == 0 || self.log_every == 0 {
            return bad("--layers, --context, --steps and --log-every must be positive");
        }
        if !(self.arena_density > 0.0 && self.arena_density <= 1.0) {
            return bad("--arena-density must be in (0, 1]");
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad("--lr must be a positive number");
        }
        let elems = self.tokens as u64 * self.hidden() as u64;
        if elems > u32::MAX as u64 / 2 {
            return bad("--tokens × 4·d is too large for the trainer's 32-bit indexing");
        }
        Ok(())
    }
}
