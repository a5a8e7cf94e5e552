//! `burn-gpt`: a char-level GPT in Burn trained four ways on the same seed and batches — Burn's dense
//! MLP blocks, BitSparse MLP blocks, and both under Burn's gradient checkpointing — reporting the
//! measured activation bytes per token, the step times, and whether the BitSparse runs are
//! bit-identical to their dense partners (loss every step, every weight after every compared step).
//!
//! `--json` prints exactly one JSON document on stdout; messages go to stderr. Exit 0 when the run
//! completes (the JSON says whether it was bit-identical; `--require-identical` makes that an exit 1);
//! exit 1 with one `error: ...` line on failure.

mod data;
mod model;
mod report;
mod run;
mod train;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::train::Mode;

/// Command line. The defaults keep the whole run under about two minutes on lavapipe (2 CPU cores).
#[derive(Parser, Debug, Clone)]
#[command(name = "burn-gpt", version, about = "Char-level GPT in Burn: dense vs BitSparse MLP blocks, bit for bit")]
pub struct Args {
    /// Measured (timed and compared) training steps per mode.
    #[arg(long, default_value_t = 8)]
    pub steps: u64,
    /// Dense training steps before the run (from the seed's initial weights; untimed, not compared), so
    /// that every mode starts from one model whose relu(z) has the density training gives it instead of
    /// the ~50% of a fresh initialisation. The modes then start with fresh AdamW states.
    #[arg(long, default_value_t = 0)]
    pub pretrain: u64,
    /// Warm-up steps per mode on throwaway copies (Burn's autotune picks its kernels there).
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,
    /// Model width.
    #[arg(long, default_value_t = 64)]
    pub d_model: usize,
    /// Transformer blocks.
    #[arg(long, default_value_t = 2)]
    pub n_layer: usize,
    /// Attention heads (must divide --d-model).
    #[arg(long, default_value_t = 4)]
    pub n_head: usize,
    /// Tokens per sequence.
    #[arg(long, default_value_t = 32)]
    pub context: usize,
    /// Sequences per step.
    #[arg(long, default_value_t = 4)]
    pub batch: usize,
    /// AdamW learning rate.
    #[arg(long, default_value_t = 3e-3)]
    pub lr: f64,
    /// Seed of the initial weights (Burn's device RNG) and of the batch sampler.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Log (and report in `loss_*`) every N-th step; the last step is always logged.
    #[arg(long, default_value_t = 1)]
    pub log_every: u64,
    /// Compare every weight of each BitSparse mode with its dense partner every N-th step (and after
    /// the last); the loss is compared every step regardless.
    #[arg(long, default_value_t = 1)]
    pub compare_every: u64,
    /// Modes to run, comma-separated: dense, bitsparse, ckpt_dense, ckpt_bitsparse.
    #[arg(long, value_delimiter = ',', value_parser = Mode::parse, default_value = "dense,bitsparse,ckpt_dense,ckpt_bitsparse")]
    pub modes: Vec<Mode>,
    /// Initial BitSparse arena size in MiB (grown, and the step re-run, on an overflow).
    #[arg(long, default_value_t = 16)]
    pub arena_mb: u64,
    /// How the fused forward's tiles claim their place in the arena: unordered (one atomic per tile)
    /// or ordered (the chained scan; deterministic stream bytes). Gradients are the same either way.
    #[arg(long, default_value = "unordered", value_parser = parse_order)]
    pub tile_order: bitsparse_burn::TileOrder,
    /// Print one JSON document on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write an SVG plot (loss per step per mode; activation bytes per token per mode).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Exit 1 unless every BitSparse mode was bit-identical to its dense partner.
    #[arg(long)]
    pub require_identical: bool,
}

fn parse_order(s: &str) -> Result<bitsparse_burn::TileOrder, String> {
    bitsparse_burn::TileOrder::parse(s).map_err(|e| e.to_string())
}

impl Args {
    /// The chosen modes, once each, in reporting order.
    pub fn modes(&self) -> Vec<Mode> {
        Mode::ALL.into_iter().filter(|m| self.modes.contains(m)).collect()
    }

    fn check(&self) -> Result<(), String> {
        let positive = [
            ("--steps", self.steps as usize),
            ("--d-model", self.d_model),
            ("--n-layer", self.n_layer),
            ("--n-head", self.n_head),
            ("--context", self.context),
            ("--batch", self.batch),
            ("--log-every", self.log_every as usize),
            ("--compare-every", self.compare_every as usize),
            ("--arena-mb", self.arena_mb as usize),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        if self.d_model % self.n_head != 0 {
            return Err(format!("--n-head {} does not divide --d-model {}", self.n_head, self.d_model));
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(format!("--lr must be a positive number, not {}", self.lr));
        }
        if self.context + 1 >= data::CORPUS.chars().count() {
            return Err(format!("--context {} is longer than the corpus", self.context));
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    // Burn reports some failures by panicking; they end as one `error: internal: ...` line and exit 1.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let at = info.location().map(|l| format!(" (at {}:{})", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal: {}{at}", msg.replace('\n', " "));
        std::process::exit(1);
    }));
    let args = Args::parse();
    match main_inner(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", e.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

fn main_inner(args: &Args) -> Result<ExitCode, String> {
    args.check()?;
    let result = run::run(args)?;
    let doc = report::json(args, &result);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| format!("serialising the report: {e}"))?;
    if let Some(path) = &args.out {
        std::fs::write(path, format!("{text}\n")).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        report::plot(&result, path).map_err(|e| format!("writing the plot {}: {e}", path.display()))?;
    }
    if args.json {
        println!("{text}");
    } else {
        print!("{}", report::table(args, &result));
    }
    if args.require_identical && result.bit_identical() != Some(true) {
        let why = match result.bit_identical() {
            Some(_) => "a BitSparse mode was not bit-identical to its dense partner",
            None => "no BitSparse mode ran with its dense partner, so bit-identity was not checked",
        };
        eprintln!("error: --require-identical: {why}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
