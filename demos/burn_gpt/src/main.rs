//! `burn-gpt`: a char-level GPT in Burn trained four ways on the same seed and batches — Burn's dense
//! MLP blocks, BitSparse MLP blocks, and both under Burn's gradient checkpointing — reporting the
//! measured activation bytes per token, the step times, and whether the BitSparse runs are
//! bit-identical to their dense partners (loss every step, every weight after every compared step).
//!
//! `--json` prints exactly one JSON document on stdout; messages go to stderr. Exit 0 when the run
//! completes (the JSON says whether it was bit-identical; `--require-identical` makes that an exit 1);
//! exit 1 with one `error: ...` line on failure.
//!
//! `--devices N` (N ≥ 2, or 1 with `--learner`) trains data-parallel over N wgpu devices through
//! burn-train's `Learner` and its multi-device strategy instead (`parallel.rs`).

mod data;
mod model;
mod parallel;
mod report;
mod run;
mod train;

use std::path::PathBuf;
use std::process::ExitCode;

use burn::tensor::FloatDType;
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
    /// Train data-parallel over this many wgpu devices with burn-train's Learner
    /// (`ExecutionStrategy::MultiDevice`, optimizer on the first device); `--batch` sequences per
    /// device. 1 keeps the single-device run (unless `--learner`). More devices than adapters is an
    /// error unless `--share-adapter`.
    #[arg(long, default_value_t = 1)]
    pub devices: usize,
    /// Open every device on the first adapter (testing data-parallel training on one GPU or lavapipe).
    #[arg(long)]
    pub share_adapter: bool,
    /// Run through burn-train's Learner even with `--devices 1` (its single-device strategy).
    #[arg(long)]
    pub learner: bool,
    /// The float type the measured modes compute in: f32, or f16 (the adapter needs SHADER_F16; Burn's
    /// wgpu backend has no BF16). The model is created and pre-trained in F32; in F16 the modes then
    /// train in mixed precision: the forward, the backward, activations and gradients are F16 and the
    /// BitSparse MLPs run their F16 kernels, while AdamW updates F32 master weights with F32 moments
    /// (rounded to F16 after every update) and the loss is scaled dynamically (pure F16 training broke
    /// the H200 model at its first update).
    #[arg(long, default_value = "f32", value_parser = parse_dtype)]
    pub dtype: FloatDType,
    /// Initial loss scale of `--dtype f16`'s mixed precision, overriding 4096 (tests: a scale past F16's
    /// range forces skipped updates).
    #[arg(long, hide = true)]
    pub loss_scale: Option<f32>,
    /// Initial arena size in bytes, overriding --arena-mb (tests: forces overflows).
    #[arg(long, hide = true)]
    pub arena_bytes: Option<u64>,
}

fn parse_dtype(s: &str) -> Result<FloatDType, String> {
    match s {
        "f32" => Ok(FloatDType::F32),
        "f16" => Ok(FloatDType::F16),
        "bf16" => Err("Burn's wgpu backend has no BF16 (WGSL has no bf16 type): use f32 or f16".into()),
        other => Err(format!("unknown dtype {other:?}: f32 or f16")),
    }
}

/// The name `--dtype` takes for `d`.
pub fn dtype_name(d: FloatDType) -> &'static str {
    match d {
        FloatDType::F16 => "f16",
        FloatDType::BF16 => "bf16",
        FloatDType::F64 => "f64",
        _ => "f32",
    }
}

/// How the measured modes train for `d`: `"f32"`, or `"mixed_f16"` (F16 compute, F32 master weights
/// and optimizer, dynamic loss scaling).
pub fn precision_name(d: FloatDType) -> &'static str {
    match d {
        FloatDType::F16 => "mixed_f16",
        _ => "f32",
    }
}

fn parse_order(s: &str) -> Result<bitsparse_burn::TileOrder, String> {
    bitsparse_burn::TileOrder::parse(s).map_err(|e| e.to_string())
}

impl Args {
    /// Whether the run goes through burn-train's Learner (`--devices` ≥ 2 or `--learner`).
    pub fn data_parallel(&self) -> bool {
        self.devices > 1 || self.learner
    }

    /// The initial arena size per device.
    pub fn arena_bytes(&self) -> u64 {
        self.arena_bytes.unwrap_or(self.arena_mb << 20)
    }

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
            ("--devices", self.devices),
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
        if self.data_parallel() && self.dtype != FloatDType::F32 {
            return Err("--dtype f16 is for the single-device run; the data-parallel run trains in f32".into());
        }
        if self.data_parallel() && self.plot.is_some() {
            return Err("--plot draws the single-device run; it is not available with --devices/--learner".into());
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
        // A failed data-parallel worker step: burn-train catches it, the run reports the error.
        if info.payload().is::<parallel::WorkerAbort>() {
            return;
        }
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
    if args.data_parallel() {
        return main_parallel(args);
    }
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

/// `--devices N`: the data-parallel run, reported like the single-device one.
fn main_parallel(args: &Args) -> Result<ExitCode, String> {
    let result = parallel::run(args)?;
    let doc = report::json_parallel(args, &result);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| format!("serialising the report: {e}"))?;
    if let Some(path) = &args.out {
        std::fs::write(path, format!("{text}\n")).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if args.json {
        println!("{text}");
    } else {
        print!("{}", report::table_parallel(args, &result));
    }
    if args.require_identical && result.bit_identical() != Some(true) {
        eprintln!(
            "error: --require-identical: a BitSparse mode was not bit-identical to its dense partner (or none ran)"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("burn-gpt").chain(extra.iter().copied())).expect("parses")
    }

    #[test]
    fn devices_defaults_to_the_single_device_run() {
        let a = parse(&[]);
        assert_eq!(a.devices, 1);
        assert!(!a.data_parallel() && !a.share_adapter);
        assert_eq!(a.arena_bytes(), 16 << 20);
        assert!(a.check().is_ok());
    }

    #[test]
    fn devices_flags_select_the_learner() {
        let a = parse(&["--devices", "2", "--share-adapter"]);
        assert!(a.data_parallel() && a.share_adapter);
        assert!(parse(&["--learner"]).data_parallel());
        assert_eq!(parse(&["--arena-bytes", "4096"]).arena_bytes(), 4096);
    }

    #[test]
    fn devices_zero_and_plot_with_devices_are_refused() {
        assert_eq!(parse(&["--devices", "0"]).check().unwrap_err(), "--devices must be at least 1");
        assert!(parse(&["--devices", "2", "--plot", "x.svg"]).check().is_err());
        assert!(Args::try_parse_from(["burn-gpt", "--devices", "two"]).is_err());
    }

    #[test]
    fn dtype_flag() {
        assert_eq!(parse(&[]).dtype, FloatDType::F32);
        let a = parse(&["--dtype", "f16"]);
        assert_eq!(a.dtype, FloatDType::F16);
        assert!(a.check().is_ok());
        assert_eq!(dtype_name(a.dtype), "f16");
        assert!(Args::try_parse_from(["burn-gpt", "--dtype", "bf16"]).is_err());
        assert!(parse(&["--dtype", "f16", "--devices", "2"]).check().is_err());
    }
}
