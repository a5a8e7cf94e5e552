//! The training text and batches: next-character prediction from the previous `context` characters.

use bitsparse::cpu::SplitMix64;
use bitsparse::{Error, Result};

/// The shipped public-domain text (see demos/data/README.md).
pub const DEFAULT_TEXT: &str = include_str!("../data/genesis_kjv.txt");

/// A text mapped to character ids.
pub struct Corpus {
    /// Character ids of the text, in order.
    pub ids: Vec<u8>,
    /// The character of each id.
    pub chars: Vec<u8>,
    /// Vocabulary size V (distinct characters, padded to a multiple of 4).
    pub vocab: u32,
}

impl Corpus {
    /// Builds the vocabulary from the bytes of `text`.
    pub fn new(text: &[u8], context: u32) -> Result<Corpus> {
        let mut seen = [false; 256];
        for &b in text {
            seen[b as usize] = true;
        }
        let chars: Vec<u8> = (0..=255u8).filter(|&b| seen[b as usize]).collect();
        if chars.len() > 252 {
            return Err(Error::InvalidArgument("text has more than 252 distinct bytes".into()));
        }
        if text.len() < context as usize + 2 {
            return Err(Error::InvalidArgument(format!("text of {} bytes is too short", text.len())));
        }
        let mut id_of = [0u8; 256];
        for (i, &c) in chars.iter().enumerate() {
            id_of[c as usize] = i as u8;
        }
        let ids = text.iter().map(|&b| id_of[b as usize]).collect();
        let vocab = (chars.len() as u32).div_ceil(4) * 4;
        Ok(Corpus { ids, chars, vocab })
    }

    /// The batch of `step`: for each of `tokens` random positions p, the embedding rows of the
    /// characters at p, p−1, …, p−k+1 (slot j uses rows j·V .. (j+1)·V) and the target id at p+1.
    /// Depends only on (seed, step), so every cache mode sees the same data.
    pub fn batch(&self, seed: u64, step: u32, tokens: u32, context: u32) -> (Vec<u32>, Vec<u32>) {
        let mut rng = SplitMix64(seed ^ 0xda7a_5eed ^ ((step as u64) << 32));
        let span = (self.ids.len() - context as usize - 1) as u64;
        let mut rows = Vec::with_capacity((tokens * context) as usize);
        let mut targets = Vec::with_capacity(tokens as usize);
        for _ in 0..tokens {
            let p = context as usize - 1 + (rng.next_u64() % span) as usize;
            for j in 0..context as usize {
                rows.push(j as u32 * self.vocab + self.ids[p - j] as u32);
            }
            targets.push(self.ids[p + 1] as u32);
        }
        (rows, targets)
    }
}
