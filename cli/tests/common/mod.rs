//! Shared set-up of the CLI tests: the core tests' harness and adapter helpers (`tests/common/` at the
//! workspace root, included rather than copied) and the helpers that run the binary (`cli.rs`).
#![allow(dead_code, unused_imports)]

#[path = "../../../tests/common/mod.rs"]
mod gpu;

pub use gpu::*;

pub mod cli;
