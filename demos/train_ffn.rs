//! Demo trainer: a residual stack of ReLU² FFN blocks trained on next-character prediction with wgpu,
//! once with the activation cache kept dense and once kept in BitSparse form; checks that the two runs
//! are bit-identical and reports the memory the compressed cache saves.
//!
//! `cargo run --release --example train_ffn` (small default config, under two minutes on lavapipe);
//! `-- --json` prints one JSON document; `-- --help` lists the knobs. See the "Demo: training" section of README.md.

use bitsparse_demos::train_ffn as trainer;

use std::path::PathBuf;
use std::process::ExitCode;

use bitsparse::host::context::{AdapterChoice, GpuContext};
use clap::Parser;
use trainer::{data::Corpus, gpu::Gpu, CacheMode, Config};

#[derive(Parser, Debug)]
#[command(
    name = "train_ffn",
    about = "ReLU² FFN stack trained on wgpu: dense activation cache vs BitSparse, bit-identical"
)]
struct Cli {
    /// Model width d (hidden is 4d).
    #[arg(long, default_value_t = Config::default().d)]
    d: u32,
    /// Number of FFN blocks.
    #[arg(long, default_value_t = Config::default().layers)]
    layers: u32,
    /// Tokens (predictions) per step.
    #[arg(long, default_value_t = Config::default().tokens)]
    tokens: u32,
    /// Characters of context summed into each prediction's input.
    #[arg(long, default_value_t = Config::default().context)]
    context: u32,
    /// Training steps.
    #[arg(long, default_value_t = Config::default().steps)]
    steps: u32,
    /// Adam learning rate.
    #[arg(long, default_value_t = Config::default().lr)]
    lr: f32,
    /// Seed for weights and batches.
    #[arg(long, default_value_t = Config::default().seed)]
    seed: u64,
    /// Print progress (and read statistics back) every N steps.
    #[arg(long, default_value_t = Config::default().log_every)]
    log_every: u32,
    /// Store the compressed relu(z) with its sign bit (sign packing off).
    #[arg(long)]
    no_sign_pack: bool,
    /// Also run the minimal dense cache (x + r, a recomputed) as a third mode.
    #[arg(long)]
    with_minimal: bool,
    /// Also run BitSparse through the plain codec (worst-case slots, the trainer's own activation
    /// kernels) as a cross-check of the arena path.
    #[arg(long)]
    with_codec: bool,
    /// Also run the lossy FP8-storage mode (e4m3 or e5m2; delayed per-tensor scale), reported beside
    /// the others and not part of the bit-identity check. `none` to skip it.
    #[arg(long, default_value = "e4m3")]
    fp8: String,
    /// Arena capacity in bytes for the BitSparse mode (default: sized for --arena-density). A small
    /// value shows the overflow recovery: the failed steps change no weights, the arena grows, they re-run.
    #[arg(long)]
    arena_bytes: Option<u64>,
    /// Density of relu(z) the initial arena is sized for.
    #[arg(long, default_value_t = Config::default().arena_density)]
    arena_density: f64,
    /// How the arena's compresses place their tiles: unordered (one atomic per tile) or ordered.
    #[arg(long, default_value = "unordered", value_parser = |s: &str| bitsparse::TileOrder::parse(s).map_err(|e| e.to_string()))]
    tile_order: bitsparse::TileOrder,
    /// After these steps (comma-separated) the dense run writes each layer's relu(z) (BF16) to
    /// --dump-dir as relu_step<S>.safetensors, for `bitsparse analyze`.
    #[arg(long, value_delimiter = ',')]
    dump_at: Vec<u32>,
    /// Where --dump-at writes.
    #[arg(long, default_value = "target/train_ffn/dumps")]
    dump_dir: PathBuf,
    /// Train on this UTF-8/ASCII text file instead of the shipped one (bytes are the characters).
    #[arg(long)]
    text: Option<PathBuf>,
    /// Where to write the SVG plot.
    #[arg(long, default_value = "target/train_ffn/train_ffn.svg")]
    plot: PathBuf,
    /// Time one step op by op (each op submitted and waited for alone) for each mode, print the table
    /// on stderr and exit.
    #[arg(long)]
    profile: bool,
    /// Print one JSON document on stdout (messages go to stderr).
    #[arg(long)]
    json: bool,
    /// Adapter name substring (case-insensitive).
    #[arg(long, env = "WGPU_ADAPTER_NAME")]
    adapter: Option<String>,
    /// Backend: vulkan, gl, metal or dx12.
    #[arg(long, env = "WGPU_BACKEND")]
    backend: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(ok) => {
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: &Cli) -> bitsparse::Result<bool> {
    let cfg = Config {
        d: cli.d,
        layers: cli.layers,
        tokens: cli.tokens,
        context: cli.context,
        steps: cli.steps,
        lr: cli.lr,
        seed: cli.seed,
        log_every: cli.log_every,
        sign_pack: !cli.no_sign_pack,
        arena_bytes: cli.arena_bytes,
        arena_density: cli.arena_density,
        tile_order: cli.tile_order,
        dump_at: cli.dump_at.clone(),
        dump_dir: cli.dump_dir.clone(),
    };
    cfg.validate()?;
    let text = match &cli.text {
        Some(p) => std::fs::read(p).map_err(|e| bitsparse::Error::InvalidArgument(format!("{}: {e}", p.display())))?,
        None => trainer::data::DEFAULT_TEXT.as_bytes().to_vec(),
    };
    let corpus = Corpus::new(&text, cfg.context)?;
    let ctx = GpuContext::new(&AdapterChoice { adapter: cli.adapter.clone(), backend: cli.backend.clone() })?;
    eprintln!("adapter: {}", ctx.describe());
    let mut gpu = Gpu::new(ctx.device.clone(), ctx.queue.clone());
    let mut modes = vec![CacheMode::DenseBaseline];
    if cli.with_minimal {
        modes.push(CacheMode::DenseMinimal);
    }
    if cli.with_codec {
        modes.push(CacheMode::BitSparseCodec);
    }
    modes.push(CacheMode::BitSparse);
    match cli.fp8.to_ascii_lowercase().as_str() {
        "none" => {}
        "e4m3" => modes.push(CacheMode::BitSparseFp8(bitsparse::DType::E4m3)),
        "e5m2" => modes.push(CacheMode::BitSparseFp8(bitsparse::DType::E5m2)),
        other => {
            return Err(bitsparse::Error::InvalidArgument(format!("--fp8 must be e4m3, e5m2 or none, not `{other}`")))
        }
    }
    if cli.profile {
        for &m in &modes {
            let mut model = trainer::model::Model::new(&mut gpu, &cfg, &corpus, m)?;
            model.profile_step(&gpu, &corpus)?; // warm-up
            let rows = model.profile_step(&gpu, &corpus)?;
            let total: f64 = rows.iter().map(|r| r.1).sum();
            eprintln!("[{}] one step, op by op: {total:.2} ms", m.name());
            for (label, ms) in rows {
                eprintln!("  {label:<20} {ms:>9.3} ms");
            }
        }
        return Ok(true);
    }
    let layers = cfg.layers as u64;
    let n = cfg.tokens as f64 * cfg.hidden() as f64;
    let mut progress = |mode: CacheMode, stats: &[trainer::model::StepStats]| {
        if let Some(s) = stats.last() {
            let dens: Vec<String> =
                s.nonzeros.iter().take(layers as usize).map(|&c| format!("{:.3}", c as f64 / n)).collect();
            eprintln!("[{:<13}] step {:>5}  loss {:.4}  density [{}]", mode.name(), s.step + 1, s.loss, dens.join(" "));
        }
    };
    let report = trainer::run(&mut gpu, &cfg, &corpus, &modes, &mut progress)?;
    let plot_ok = match report.plot(&cli.plot) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("warning: plot not written: {e}");
            false
        }
    };
    if cli.json {
        let mut v = serde_json::to_value(&report).map_err(|e| bitsparse::Error::InvalidArgument(e.to_string()))?;
        v["adapter"] = serde_json::json!({ "name": ctx.info.name, "backend": bitsparse::host::context::backend_name(ctx.info.backend) });
        v["plot"] = if plot_ok { serde_json::json!(cli.plot.display().to_string()) } else { serde_json::Value::Null };
        println!("{}", serde_json::to_string_pretty(&v).map_err(|e| bitsparse::Error::InvalidArgument(e.to_string()))?);
    } else {
        print!("{}", report.text());
        if plot_ok {
            println!("plot: {}", cli.plot.display());
        }
    }
    Ok(report.bit_identical)
}
