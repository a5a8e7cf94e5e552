//! The corpus: a char-level vocabulary over the shipped text, and a deterministic batch sampler.
//!
//! The sampler has its own PRNG (not Burn's) so that every mode sees the same batch at the same step
//! whatever Burn's device RNG did in between.

use burn::tensor::{Device, Int, Tensor, TensorData};

/// The text shipped with the demos (Genesis, King James Version; public domain).
pub const CORPUS: &str = include_str!("../../data/genesis_kjv.txt");

/// The text as token ids, with its vocabulary.
pub struct Corpus {
    /// The distinct characters, sorted; a token is an index into this.
    pub vocab: Vec<char>,
    /// The text as token ids.
    pub ids: Vec<i32>,
}

impl Corpus {
    /// Tokenises `text` one character per token.
    pub fn new(text: &str) -> Corpus {
        let mut vocab: Vec<char> = text.chars().collect();
        vocab.sort_unstable();
        vocab.dedup();
        let ids = text.chars().map(|c| vocab.binary_search(&c).expect("char in vocab") as i32).collect();
        Corpus { vocab, ids }
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }
}

/// One batch on the host: `batch` windows of `context + 1` tokens (inputs and next-token targets).
#[derive(Clone, Debug)]
pub struct Batch {
    /// Input ids, row-major `[batch, context]`.
    pub inputs: Vec<i32>,
    /// Target ids (inputs shifted by one), row-major `[batch, context]`.
    pub targets: Vec<i32>,
    /// Rows.
    pub batch: usize,
    /// Columns.
    pub context: usize,
}

impl Batch {
    /// Input ids as a `[batch, context]` Int tensor on `device`.
    pub fn inputs(&self, device: &Device) -> Tensor<2, Int> {
        Tensor::from_data(TensorData::new(self.inputs.clone(), [self.batch, self.context]), device)
    }

    /// Targets as a `[batch · context]` Int tensor on `device` (the loss's layout).
    pub fn targets(&self, device: &Device) -> Tensor<1, Int> {
        Tensor::from_data(TensorData::new(self.targets.clone(), [self.batch * self.context]), device)
    }

    /// Tokens in the batch.
    pub fn tokens(&self) -> usize {
        self.batch * self.context
    }

    /// Rows `start .. start + n` as a batch of their own (a device's part of a data-parallel batch).
    pub fn rows(&self, start: usize, n: usize) -> Batch {
        let span = start * self.context..(start + n) * self.context;
        Batch {
            inputs: self.inputs[span.clone()].to_vec(),
            targets: self.targets[span].to_vec(),
            batch: n,
            context: self.context,
        }
    }
}

/// Deterministic batches: batch `i` depends only on the seed and `i`, so warm-up and measured steps,
/// and every mode, can ask for the same one independently.
pub struct Sampler<'a> {
    corpus: &'a Corpus,
    seed: u64,
    batch: usize,
    context: usize,
}

impl<'a> Sampler<'a> {
    /// A sampler of `batch × context` windows over `corpus`.
    pub fn new(corpus: &'a Corpus, seed: u64, batch: usize, context: usize) -> Sampler<'a> {
        Sampler { corpus, seed, batch, context }
    }

    /// Batch number `index`.
    pub fn batch(&self, index: u64) -> Batch {
        let span = self.corpus.ids.len() - self.context - 1;
        let mut rng = SplitMix64(self.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut inputs = Vec::with_capacity(self.batch * self.context);
        let mut targets = Vec::with_capacity(self.batch * self.context);
        for _ in 0..self.batch {
            let start = (rng.next() % span as u64) as usize;
            let window = &self.corpus.ids[start..start + self.context + 1];
            inputs.extend_from_slice(&window[..self.context]);
            targets.extend_from_slice(&window[1..]);
        }
        Batch { inputs, targets, batch: self.batch, context: self.context }
    }
}

/// SplitMix64: tiny, seedable, good enough to pick window offsets.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_round_trips_and_batches_are_deterministic() {
        let corpus = Corpus::new(CORPUS);
        assert!(corpus.vocab_size() > 20 && corpus.vocab_size() < 128);
        let text: String = corpus.ids[..50].iter().map(|&i| corpus.vocab[i as usize]).collect();
        assert_eq!(text, CORPUS.chars().take(50).collect::<String>());
        let s = Sampler::new(&corpus, 7, 3, 16);
        let (a, b) = (s.batch(5), s.batch(5));
        assert_eq!(a.inputs, b.inputs);
        assert_ne!(a.inputs, s.batch(6).inputs);
        assert_eq!(a.inputs[1..16], a.targets[..15]);
    }
}
