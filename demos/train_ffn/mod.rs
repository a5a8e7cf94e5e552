//! The demo trainer's reusable parts, shared by `demos/train_ffn.rs` (the example) and
//! `demos/tests/train_ffn.rs`, through the demos crate's library.
//!
//! [`run`] trains the same seeded model once per cache mode, compares losses and weight hashes step by
//! step (and all final weights bit by bit), and gathers the cache accounting the report prints.

#![allow(dead_code)]

pub mod cache;
pub mod config;
pub mod data;
pub mod gpu;
pub mod model;
pub mod reference;
pub mod report;

use std::time::Instant;

use bitsparse::Result;

pub use config::{CacheMode, Config};
use data::Corpus;
use gpu::Gpu;
use model::{Model, StepStats};
pub use report::Report;

/// Arena regrows after which a run gives up.
const MAX_REGROWS: u32 = 8;

/// One mode's run.
#[derive(Clone, Debug)]
pub struct ModeRun {
    pub mode: CacheMode,
    /// Statistics of every step.
    pub stats: Vec<StepStats>,
    /// Final weights (f32 bits).
    pub params: Vec<u32>,
    /// Hidden-cache bytes after the last forward.
    pub cache_bytes: cache::CacheBytes,
    /// Times the arena overflowed, was grown and the steps since the last checkpoint re-run.
    pub regrows: u32,
    /// Times the arena was shrunk to follow the density.
    pub shrinks: u32,
    /// Cached x bytes per layer.
    pub x_bytes_per_layer: u64,
    /// Wall time of the steps (logging reads included), seconds.
    pub seconds: f64,
    /// (steps, seconds) of each window between two logging points that ran without an overflow: the
    /// GPU is waited for only at the window's end (the logging point's status and statistics reads),
    /// never per op.
    pub windows: Vec<(u32, f64)>,
}

impl ModeRun {
    /// Mean wall time per step, milliseconds.
    pub fn step_ms(&self) -> f64 {
        self.seconds * 1e3 / self.stats.len().max(1) as f64
    }

    /// Steady-state wall time per step, milliseconds: the windows between logging points after the
    /// first (which holds the pipelines' and the clocks' warm-up), steps recorded back to back with no
    /// per-op wait; `None` when the run had fewer than two clean windows.
    pub fn steady_step_ms(&self) -> Option<f64> {
        let rest = self.windows.get(1..).filter(|w| !w.is_empty())?;
        let steps: u32 = rest.iter().map(|w| w.0).sum();
        let secs: f64 = rest.iter().map(|w| w.1).sum();
        (steps > 0).then(|| secs * 1e3 / steps as f64)
    }
}

/// Progress callback: (mode, stats of the steps so far). Called at logging points.
pub type Progress<'a> = &'a mut dyn FnMut(CacheMode, &[StepStats]);

/// Trains one mode for `cfg.steps` steps.
pub fn run_mode(gpu: &mut Gpu, cfg: &Config, corpus: &Corpus, mode: CacheMode, progress: Progress) -> Result<ModeRun> {
    let mut model = Model::new(gpu, cfg, corpus, mode)?;
    // Build and warm the pipelines outside the timed loop.
    bitsparse::host::sync::wait_idle(&gpu.device)?;
    let start = Instant::now();
    let mut regrows = 0;
    let mut windows = Vec::new();
    let mut window_start = (model.steps_done(), Instant::now());
    while model.steps_done() < cfg.steps {
        model.step(gpu, corpus)?;
        let s = model.steps_done();
        if mode == CacheMode::DenseBaseline && cfg.dump_at.contains(&s) {
            // Outside the timed windows: the partial window is kept (up to the GPU finishing it), the
            // dump's read is not timed.
            bitsparse::host::sync::wait_idle(&gpu.device)?;
            windows.push((s - window_start.0, window_start.1.elapsed().as_secs_f64()));
            let path = cfg.dump_dir.join(format!("relu_step{s}.safetensors"));
            model.dump_relu(gpu, &path)?;
            eprintln!("[{:<13}] step {s}: relu(z) of every layer written to {}", mode.name(), path.display());
            window_start = (s, Instant::now());
        }
        if s % cfg.log_every == 0 || s == cfg.steps {
            // A logging point: the only place the host looks at the GPU's state.
            if !model.verify(gpu)? {
                window_start = (model.steps_done(), Instant::now());
                regrows += 1;
                if regrows > MAX_REGROWS {
                    return Err(bitsparse::Error::InvalidArgument(format!("the arena overflowed {regrows} times")));
                }
                eprintln!(
                    "[{:<13}] arena overflow before step {s}: grown, re-running from step {}",
                    mode.name(),
                    model.steps_done()
                );
                continue;
            }
            model.checkpoint(gpu);
            let stats = model.read_stats(gpu)?;
            windows.push((s - window_start.0, window_start.1.elapsed().as_secs_f64()));
            progress(mode, &stats);
            window_start = (s, Instant::now());
        }
    }
    bitsparse::host::sync::wait_idle(&gpu.device)?;
    let seconds = start.elapsed().as_secs_f64();
    let stats = model.read_stats(gpu)?;
    let params = model.read_params(gpu)?;
    let cache_bytes = model.cache_bytes(gpu)?;
    let shrinks = model.cache_resizes();
    Ok(ModeRun {
        mode,
        stats,
        params,
        cache_bytes,
        regrows,
        shrinks,
        x_bytes_per_layer: model.x_bytes_per_layer(),
        seconds,
        windows,
    })
}

/// The first difference between two runs' losses, weight hashes or final weights, if any.
pub fn first_mismatch(a: &ModeRun, b: &ModeRun) -> Option<String> {
    for (sa, sb) in a.stats.iter().zip(&b.stats) {
        if sa.loss.to_bits() != sb.loss.to_bits() {
            return Some(format!(
                "step {}: loss {} ({}) vs {} ({})",
                sa.step,
                sa.loss,
                a.mode.name(),
                sb.loss,
                b.mode.name()
            ));
        }
        if sa.weight_hash != sb.weight_hash {
            return Some(format!(
                "step {}: weight hash differs between {} and {}",
                sa.step,
                a.mode.name(),
                b.mode.name()
            ));
        }
        if sa.nonzeros != sb.nonzeros {
            return Some(format!(
                "step {}: relu(z) nonzero counts differ between {} and {}",
                sa.step,
                a.mode.name(),
                b.mode.name()
            ));
        }
    }
    if a.stats.len() != b.stats.len() {
        return Some("different step counts".into());
    }
    if let Some(i) = a.params.iter().zip(&b.params).position(|(x, y)| x != y) {
        return Some(format!("final weight {i} differs between {} and {}", a.mode.name(), b.mode.name()));
    }
    None
}

/// Trains every mode in `modes` (the first is the reference) and builds the report.
pub fn run(gpu: &mut Gpu, cfg: &Config, corpus: &Corpus, modes: &[CacheMode], progress: Progress) -> Result<Report> {
    let mut runs = Vec::new();
    for &m in modes {
        runs.push(run_mode(gpu, cfg, corpus, m, progress)?);
    }
    Report::new(cfg, corpus.vocab, runs)
}
