//! The report: bit-identity verdict, activation-cache bytes per token for the whole stack in each mode,
//! step times, density per layer over the steps, JSON and an SVG plot.

use std::path::Path;

use bitsparse::{DType, Error, Layout, Options, Result};
use serde::Serialize;

use super::config::{CacheMode, Config};
use super::ModeRun;

/// Bytes per token of one mode's activation cache (whole stack).
#[derive(Clone, Debug, Serialize)]
pub struct ModeSummary {
    pub mode: &'static str,
    /// Cache bytes per token actually held after the last forward (x + the hidden form).
    pub cache_bytes_per_token: f64,
    /// Bytes per token the trainer reserved for it (worst-case slots for a compressed form without arena).
    pub reserved_bytes_per_token: f64,
    /// Bytes held for each layer's hidden activation (stream or dense tensors), in layer order.
    pub layer_bytes: Vec<u64>,
    /// Bytes beyond the tensors' own streams (arena alignment slack), per token.
    pub slack_bytes_per_token: f64,
    /// Mean wall time per step, ms (every step, warm-up and logging reads included).
    pub step_ms: f64,
    /// Steady-state wall time per step, ms: the windows between logging points after the first, the
    /// GPU waited for only at their ends (`null` with fewer than two logging windows).
    pub steady_step_ms: Option<f64>,
    /// Arena regrows (overflow detected at a logging point, steps re-run).
    pub regrows: u32,
    /// Arena shrinks (the sizing policy found half the capacity enough).
    pub shrinks: u32,
    pub final_loss: f32,
}

/// Everything the example prints.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub steps: u32,
    pub config: ConfigSummary,
    /// Losses, weight hashes and nonzero counts equal at every step, and final weights equal bit for bit,
    /// across every mode run.
    pub bit_identical: bool,
    /// The first difference found, if any.
    pub mismatch: Option<String>,
    /// Dense baseline: x + r + a per layer (what autograd keeps for relu(z)² between two linears).
    pub cache_bytes_per_token_dense: f64,
    /// Minimal dense cache: x + r.
    pub cache_bytes_per_token_dense_minimal: f64,
    /// BitSparse: x + compressed r (header, tile offsets, mask, values, padding, arena slack), as held
    /// after the last forward, from the library's accounting (arena head and slot sizes).
    pub cache_bytes_per_token_bitsparse: f64,
    /// What the BitSparse form is expected to take given the final densities (lower, upper bound from
    /// per-tile word rounding).
    pub expected_bytes_per_token_bitsparse: (f64, f64),
    /// 1 − bitsparse / dense baseline.
    pub saving: f64,
    /// 1 − bitsparse / minimal dense.
    pub saving_vs_minimal: f64,
    /// How the reported BitSparse mode stores r: "arena" (the library's GPU arena and fused kernels) or
    /// "codec" (plain compress/decompress into per-layer worst-case slots).
    pub bitsparse_storage: &'static str,
    /// Density of relu(z) per layer at the last step, in layer order.
    pub final_density: Vec<f64>,
    /// Loss at every step (reference mode).
    pub loss: Vec<f32>,
    /// Density of relu(z) per layer at every step: density[step][layer].
    pub density: Vec<Vec<f64>>,
    pub modes: Vec<ModeSummary>,
    /// Lossy (FP8-storage) modes: not part of `bit_identical`; how far they drift from the reference.
    pub lossy: Vec<LossySummary>,
}

/// A lossy mode against the lossless reference.
#[derive(Clone, Debug, Serialize)]
pub struct LossySummary {
    pub mode: &'static str,
    pub cache_bytes_per_token: f64,
    /// 1 − its bytes / the dense baseline's.
    pub saving: f64,
    pub final_loss: f32,
    pub reference_final_loss: f32,
    /// Largest |loss − reference loss| over all steps.
    pub max_abs_loss_diff: f32,
    /// Density of relu(z) per layer at the last step (its own run: the weights differ).
    pub final_density: Vec<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConfigSummary {
    pub d: u32,
    pub hidden: u32,
    pub layers: u32,
    pub tokens_per_step: u32,
    pub context: u32,
    pub vocab: u32,
    pub lr: f32,
    pub seed: u64,
    pub sign_pack: bool,
    /// `"ordered"` / `"unordered"`: how the arena's compresses placed their tiles.
    pub tile_order: &'static str,
}

/// Bounds on the bytes of a compressed BF16 tensor of `n` elements with `nnz` nonzeros: every section is
/// fixed by n except the values, whose per-tile streams are each rounded up to whole words.
pub fn expected_stream_bytes(n: u64, nnz: u64, sign_pack: bool) -> Result<(u64, u64)> {
    let layout = Layout::new(DType::Bf16, n, Options { sign_pack })?;
    let bits = nnz * layout.value_width() as u64;
    let lo = layout.values_offset + bits.div_ceil(32);
    let hi = layout.values_offset + bits / 32 + layout.tiles;
    Ok((lo * 4, hi * 4))
}

impl Report {
    pub fn new(cfg: &Config, vocab: u32, runs: Vec<ModeRun>) -> Result<Report> {
        let reference = runs.first().ok_or_else(|| Error::InvalidArgument("no mode was run".into()))?;
        let lossless: Vec<&ModeRun> = runs[1..].iter().filter(|r| !r.mode.is_lossy()).collect();
        let mismatch = lossless.iter().find_map(|r| super::first_mismatch(reference, r));
        let t = cfg.tokens as f64;
        let layers = cfg.layers as u64;
        let n = cfg.tokens as u64 * cfg.hidden() as u64;
        let x = reference.x_bytes_per_layer;
        // Analytic dense sizes (what the dense modes allocate; checked against them below when run).
        let dense = (layers * (x + 4 * n)) as f64 / t;
        let minimal = (layers * (x + 2 * n)) as f64 / t;
        let per_token = |r: &ModeRun| (layers * x + r.cache_bytes.stored()) as f64 / t;
        let reserved = |r: &ModeRun| (layers * x + r.cache_bytes.reserved) as f64 / t;
        for r in &runs {
            let want = match r.mode {
                CacheMode::DenseBaseline => dense,
                CacheMode::DenseMinimal => minimal,
                CacheMode::BitSparse | CacheMode::BitSparseCodec | CacheMode::BitSparseFp8(_) => continue,
            };
            if per_token(r) != want {
                return Err(Error::InvalidArgument(format!(
                    "{} holds {} B/token, expected {want}",
                    r.mode.name(),
                    per_token(r)
                )));
            }
        }
        let last = reference.stats.last().ok_or_else(|| Error::InvalidArgument("no steps".into()))?;
        let final_density: Vec<f64> = last.nonzeros.iter().map(|&c| c as f64 / n as f64).collect();
        let mut lo = layers * x;
        let mut hi = layers * x;
        for &c in &last.nonzeros {
            let (a, b) = expected_stream_bytes(n, c as u64, cfg.sign_pack)?;
            lo += a;
            hi += b;
        }
        let sparse_run = runs
            .iter()
            .find(|r| r.mode == CacheMode::BitSparse)
            .or_else(|| runs.iter().find(|r| r.mode == CacheMode::BitSparseCodec));
        let bitsparse = sparse_run.map(per_token).unwrap_or(f64::NAN);
        let modes = runs
            .iter()
            .map(|r| ModeSummary {
                mode: r.mode.name(),
                cache_bytes_per_token: per_token(r),
                reserved_bytes_per_token: reserved(r),
                layer_bytes: r.cache_bytes.layers.iter().map(|l| l.stored).collect(),
                slack_bytes_per_token: r.cache_bytes.slack as f64 / t,
                step_ms: r.step_ms(),
                steady_step_ms: r.steady_step_ms(),
                regrows: r.regrows,
                shrinks: r.shrinks,
                final_loss: r.stats.last().map(|s| s.loss).unwrap_or(f32::NAN),
            })
            .collect();
        let lossy = runs
            .iter()
            .filter(|r| r.mode.is_lossy())
            .map(|r| LossySummary {
                mode: r.mode.name(),
                cache_bytes_per_token: per_token(r),
                saving: (1.0 - per_token(r) / dense).clamp(0.0, 1.0),
                final_loss: r.stats.last().map(|s| s.loss).unwrap_or(f32::NAN),
                reference_final_loss: last.loss,
                max_abs_loss_diff: r
                    .stats
                    .iter()
                    .zip(&reference.stats)
                    .map(|(a, b)| (a.loss - b.loss).abs())
                    .fold(0.0, f32::max),
                final_density: r
                    .stats
                    .last()
                    .map(|s| s.nonzeros.iter().map(|&c| c as f64 / n as f64).collect())
                    .unwrap_or_default(),
            })
            .collect();
        Ok(Report {
            lossy,
            steps: reference.stats.len() as u32,
            config: ConfigSummary {
                d: cfg.d,
                hidden: cfg.hidden(),
                layers: cfg.layers,
                tokens_per_step: cfg.tokens,
                context: cfg.context,
                vocab,
                lr: cfg.lr,
                seed: cfg.seed,
                sign_pack: cfg.sign_pack,
                tile_order: cfg.tile_order.name(),
            },
            bit_identical: mismatch.is_none() && !lossless.is_empty(),
            mismatch,
            cache_bytes_per_token_dense: dense,
            cache_bytes_per_token_dense_minimal: minimal,
            cache_bytes_per_token_bitsparse: bitsparse,
            expected_bytes_per_token_bitsparse: (lo as f64 / t, hi as f64 / t),
            saving: (1.0 - bitsparse / dense).clamp(0.0, 1.0),
            saving_vs_minimal: (1.0 - bitsparse / minimal).clamp(0.0, 1.0),
            bitsparse_storage: match sparse_run.map(|r| r.mode) {
                Some(CacheMode::BitSparse) => "arena",
                Some(_) => "codec",
                None => "none",
            },
            final_density,
            loss: reference.stats.iter().map(|s| s.loss).collect(),
            density: reference
                .stats
                .iter()
                .map(|s| s.nonzeros.iter().map(|&c| c as f64 / n as f64).collect())
                .collect(),
            modes,
        })
    }

    /// The human-readable summary.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let c = &self.config;
        s += &format!(
            "config: d={} hidden={} layers={} tokens/step={} context={} vocab={} steps={} lr={} seed={}\n",
            c.d, c.hidden, c.layers, c.tokens_per_step, c.context, c.vocab, self.steps, c.lr, c.seed
        );
        s += &format!(
            "bit-identical across modes ({}): {}\n",
            self.modes.iter().map(|m| m.mode).filter(|m| !m.contains("fp8")).collect::<Vec<_>>().join(", "),
            if self.bit_identical {
                "YES (loss, weight hashes and relu(z) counts at every step; final weights bit for bit)".to_string()
            } else {
                format!("NO — {}", self.mismatch.as_deref().unwrap_or("only one mode run"))
            }
        );
        s += "activation cache per token, whole stack:\n";
        s += &format!("  dense baseline (x + r + a)    {:>10.1} B\n", self.cache_bytes_per_token_dense);
        s += &format!("  dense minimal  (x + r)        {:>10.1} B\n", self.cache_bytes_per_token_dense_minimal);
        s += &format!(
            "  bitsparse (x + compressed r)  {:>10.1} B   (expected from densities: {:.1}..{:.1} B; storage: {})\n",
            self.cache_bytes_per_token_bitsparse,
            self.expected_bytes_per_token_bitsparse.0,
            self.expected_bytes_per_token_bitsparse.1,
            self.bitsparse_storage
        );
        s += &format!(
            "  saving: {:.1}% of the dense baseline, {:.1}% of the minimal dense cache\n",
            100.0 * self.saving,
            100.0 * self.saving_vs_minimal
        );
        for f in &self.lossy {
            s += &format!(
                "  {} (lossy, not in the check) {:>6.1} B   saving {:.1}%; final loss {:.4} vs {:.4}, max |Δloss| {:.4}\n",
                f.mode,
                f.cache_bytes_per_token,
                100.0 * f.saving,
                f.final_loss,
                f.reference_final_loss,
                f.max_abs_loss_diff
            );
        }
        s += "modes:\n";
        for m in &self.modes {
            s += &format!(
                "  {:<19} {:>9.2} ms/step (steady {})   final loss {:.4}   cache {:.1} B/token (slack {:.1}, reserved {:.1}){}\n",
                m.mode,
                m.step_ms,
                m.steady_step_ms.map(|v| format!("{v:.2}")).unwrap_or_else(|| "–".into()),
                m.final_loss,
                m.cache_bytes_per_token,
                m.slack_bytes_per_token,
                m.reserved_bytes_per_token,
                if m.regrows > 0 { format!(", arena grown {}×", m.regrows) } else { String::new() }
                    + &if m.shrinks > 0 { format!(", arena shrunk {}×", m.shrinks) } else { String::new() }
            );
        }
        s += &format!(
            "final density of relu(z) per layer: [{}]\n",
            self.final_density.iter().map(|d| format!("{d:.3}")).collect::<Vec<_>>().join(", ")
        );
        s
    }

    /// Writes the loss and per-layer density curves as an SVG.
    pub fn plot(&self, path: &Path) -> Result<()> {
        use plotters::prelude::*;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let err = |e: &dyn std::fmt::Display| Error::Io(std::io::Error::other(e.to_string()));
        let root = SVGBackend::new(path, (960, 720)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (top, bottom) = root.split_vertically(360);
        let steps = self.loss.len().max(2) as f64;
        let finite = self.loss.iter().copied().filter(|l| l.is_finite());
        let lmax = finite.clone().fold(0.0f32, f32::max).max(1e-3) as f64 * 1.05;
        let lmin = finite.fold(f32::INFINITY, f32::min).min(lmax as f32) as f64 * 0.95;
        let mut chart = ChartBuilder::on(&top)
            .caption("training loss (cross-entropy, nats/char)", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..steps, lmin..lmax)
            .map_err(|e| err(&e))?;
        chart.configure_mesh().x_desc("step").x_label_formatter(&|x| format!("{x:.0}")).draw().map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(self.loss.iter().enumerate().map(|(i, &l)| (i as f64, l as f64)), &BLUE))
            .map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&bottom)
            .caption("density of relu(z) per layer", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..steps, 0f64..1f64)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("nonzero fraction")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(|e| err(&e))?;
        let layers = self.final_density.len();
        for l in 0..layers {
            let color = Palette99::pick(l).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    self.density.iter().enumerate().map(|(i, d)| (i as f64, d[l])),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(format!("layer {l}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
        Ok(())
    }
}
