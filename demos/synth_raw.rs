//! Writes a raw little-endian element file of i.i.d. synthetic ReLU² activations
//! (`bitsparse::cpu::synthetic_relu2`): the inputs of the size table in docs/FORMAT.md §14.9
//! (`scripts/v2_size_table.sh`).
//!
//! `cargo run --release --example synth_raw -- --dtype bf16 --elements 1048576 --density 0.176 --seed 1 OUT`

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "Raw file of i.i.d. synthetic ReLU² elements")]
struct Args {
    /// Element type: bf16, f16, f32, e4m3, e5m2.
    #[arg(long, default_value = "bf16")]
    dtype: bitsparse::DType,
    /// Element count.
    #[arg(long, default_value_t = 1 << 20)]
    elements: usize,
    /// Fraction of nonzero elements (0 ..= 1).
    #[arg(long)]
    density: f64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// File to write.
    out: PathBuf,
}

fn main() -> std::process::ExitCode {
    let a = Args::parse();
    if !(0.0..=1.0).contains(&a.density) {
        eprintln!("error: --density {} is not in 0 ..= 1", a.density);
        return std::process::ExitCode::FAILURE;
    }
    let data = bitsparse::cpu::synthetic_relu2(a.elements, a.density, a.dtype, a.seed);
    if let Err(e) = std::fs::write(&a.out, data) {
        eprintln!("error: {}: {e}", a.out.display());
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
