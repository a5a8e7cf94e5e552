//! What the run prints: the JSON document, the readable table, the SVG plot.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::parallel::{DpModeResult, DpResult};
use crate::run::{ModeResult, RunResult};
use crate::train::MemoryMeasure;
use crate::train::Mode;
use crate::Args;

/// 1 − a/b, the share of `b` that `a` saves.
fn saving(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(1.0 - a / b),
        _ => None,
    }
}

/// The JSON document. Per-mode fields are named `<field>_<mode>` (`loss_dense`, `step_ms_ckpt_bitsparse`,
/// ...) and are `null` for a mode that did not run.
pub fn json(args: &Args, r: &RunResult) -> Value {
    let logged = r.logged_steps(args);
    let mut doc = Map::new();
    doc.insert("steps".into(), json!(args.steps));
    doc.insert("warmup".into(), json!(args.warmup));
    doc.insert("pretrain_steps".into(), json!(args.pretrain));
    doc.insert("pretrain_loss".into(), json!(r.pretrain_loss));
    doc.insert("adapter".into(), json!(r.adapter));
    doc.insert(
        "config".into(),
        json!({
            "d_model": args.d_model, "n_layer": args.n_layer, "n_head": args.n_head, "context": args.context,
            "batch": args.batch, "lr": args.lr, "seed": args.seed, "vocab": r.shape.vocab,
            "d_ff": 4 * args.d_model, "activation": "relu2", "dtype": crate::dtype_name(args.dtype), "arena_mb": args.arena_mb,
            "arena_bytes": args.arena_bytes(),
            "tile_order": args.tile_order.name(), "precision": crate::precision_name(args.dtype),
        }),
    );
    doc.insert("modes".into(), json!(r.modes.keys().map(|m| m.name()).collect::<Vec<_>>()));
    doc.insert("tokens_per_step".into(), json!(r.tokens_per_step));
    doc.insert("logged_steps".into(), json!(logged));
    doc.insert("weights_compared_every".into(), json!(args.compare_every));
    doc.insert("bit_identical".into(), json!(r.bit_identical()));
    doc.insert("bit_identity".into(), json!(r.identity));
    for mode in Mode::ALL {
        let m = r.modes.get(&mode);
        let losses = m.map(|m| logged.iter().map(|&s| m.losses[s as usize]).collect::<Vec<_>>());
        doc.insert(format!("loss_{}", mode.name()), json!(losses));
        doc.insert(
            format!("activation_bytes_per_token_{}", mode.name()),
            json!(m.and_then(ModeResult::bytes_per_token)),
        );
        doc.insert(format!("mlp_bytes_per_token_{}", mode.name()), json!(m.and_then(ModeResult::mlp_bytes_per_token)));
        doc.insert(format!("step_ms_{}", mode.name()), json!(m.and_then(ModeResult::median_ms)));
    }
    let per_token = |mode: Mode| r.modes.get(&mode).and_then(ModeResult::bytes_per_token);
    let mlp = |mode: Mode| r.modes.get(&mode).and_then(ModeResult::mlp_bytes_per_token);
    doc.insert("saving".into(), json!(saving(per_token(Mode::BitSparse), per_token(Mode::Dense))));
    doc.insert("saving_ckpt".into(), json!(saving(per_token(Mode::CkptBitSparse), per_token(Mode::CkptDense))));
    doc.insert("mlp_saving".into(), json!(saving(mlp(Mode::BitSparse), mlp(Mode::Dense))));
    doc.insert("mlp_saving_ckpt".into(), json!(saving(mlp(Mode::CkptBitSparse), mlp(Mode::CkptDense))));
    doc.insert("final_density".into(), json!(r.final_density));
    let arena = r.modes.iter().filter(|(m, _)| m.is_bitsparse()).map(|(_, v)| v);
    doc.insert("arena_used_bytes".into(), json!(arena.clone().filter_map(|v| v.arena_used_bytes).max()));
    doc.insert("arena_capacity_bytes".into(), json!(arena.clone().filter_map(|v| v.arena_capacity_bytes).max()));
    doc.insert("arena_overflows".into(), json!(arena.map(|v| v.overflows).sum::<u32>()));
    doc.insert("measurements".into(), measurements(r));
    doc.insert("run_seconds".into(), json!(r.run_seconds));
    Value::Object(doc)
}

/// The raw figures behind the per-token numbers and the step medians, per mode.
fn measurements(r: &RunResult) -> Value {
    let mut out = Map::new();
    for (mode, m) in &r.modes {
        out.insert(
            mode.name().into(),
            json!({
                "model": m.model_memory,
                "mlp_per_layer": m.mlp_memory,
                "step_ms_all": m.step_ms,
                "losses_all": m.losses,
                "arena_used_bytes_last_step": m.arena_used_bytes,
                "op_host_ms_all": m.op_host_ms,
                "op_server_ms_all": m.op_server_ms,
                "skipped_steps": m.skipped_steps,
                "loss_scale": m.loss_scale,
            }),
        );
    }
    Value::Object(out)
}

/// The table printed without `--json`.
pub fn table(args: &Args, r: &RunResult) -> String {
    let mut s = format!(
        "adapter: {} ({})\nmodel  : d_model {}, {} layers, {} heads, context {}, batch {} ({} tokens/step), vocab {}\n\n",
        r.adapter.name,
        r.adapter.backend,
        args.d_model,
        args.n_layer,
        args.n_head,
        args.context,
        args.batch,
        r.tokens_per_step,
        r.shape.vocab
    );
    s += &format!(
        "{:<16} {:>12} {:>16} {:>14} {:>14}\n",
        "mode", "final loss", "act. B/token", "MLP B/token", "ms/step (med)"
    );
    let opt = |v: Option<f64>, p: usize| v.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "-".into());
    for (mode, m) in &r.modes {
        s += &format!(
            "{:<16} {:>12} {:>16} {:>14} {:>14}\n",
            mode.name(),
            opt(m.losses.last().map(|&l| l as f64), 4),
            opt(m.bytes_per_token(), 0),
            opt(m.mlp_bytes_per_token(), 0),
            opt(m.median_ms(), 1)
        );
    }
    let per_token = |mode: Mode| r.modes.get(&mode).and_then(ModeResult::bytes_per_token);
    let pct = |v: Option<f64>| v.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "-".into());
    s += &format!(
        "\nsaving: {} (autodiff), {} (checkpointed)\n",
        pct(saving(per_token(Mode::BitSparse), per_token(Mode::Dense))),
        pct(saving(per_token(Mode::CkptBitSparse), per_token(Mode::CkptDense)))
    );
    s += &format!(
        "final density of relu(z) per layer: [{}]\n",
        r.final_density.iter().map(|d| format!("{d:.3}")).collect::<Vec<_>>().join(", ")
    );
    for id in &r.identity {
        s += &format!(
            "{} vs {}: loss bit-equal {}/{} steps, weights bit-equal {}/{} compared steps{}\n",
            id.mode,
            id.partner,
            id.loss_steps_equal,
            id.loss_steps_compared,
            id.weight_steps_equal,
            id.weight_steps_compared,
            id.first_mismatch_step.map(|s| format!(" (first mismatch at step {s})")).unwrap_or_default()
        );
    }
    s += &match r.bit_identical() {
        Some(true) => "bit-identical: yes\n".to_string(),
        Some(false) => "bit-identical: NO\n".to_string(),
        None => "bit-identical: not checked (no BitSparse mode ran with its dense partner)\n".to_string(),
    };
    s
}

/// Writes the SVG: loss per step per mode (top), activation bytes per token per mode (bottom).
pub fn plot(r: &RunResult, path: &Path) -> Result<(), String> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
    }
    let root = SVGBackend::new(path, (960, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, bottom) = root.split_vertically(400);

    let all = r.modes.values().flat_map(|m| m.losses.iter().copied()).filter(|l| l.is_finite());
    let lmax = all.clone().fold(f32::MIN, f32::max) as f64;
    let lmin = all.fold(f32::MAX, f32::min) as f64;
    let pad = ((lmax - lmin) * 0.05).max(1e-3);
    let steps = r.modes.values().map(|m| m.losses.len()).max().unwrap_or(1).max(2) as f64;
    let mut chart = ChartBuilder::on(&top)
        .caption("training loss per step (cross-entropy, nats/char)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..steps - 1.0, (lmin - pad)..(lmax + pad))
        .map_err(|e| err(&e))?;
    chart.configure_mesh().x_desc("step").x_label_formatter(&|x| format!("{x:.0}")).draw().map_err(|e| err(&e))?;
    for (mode, m) in &r.modes {
        let color = Palette99::pick(mode.index()).to_rgba();
        // Dashed look for the BitSparse modes: they should lie exactly on their dense partner.
        let width = if mode.is_bitsparse() { 1 } else { 3 };
        chart
            .draw_series(LineSeries::new(
                m.losses.iter().enumerate().map(|(s, &l)| (s as f64, l as f64)),
                color.stroke_width(width),
            ))
            .map_err(|e| err(&e))?
            .label(mode.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;

    let bars: Vec<(Mode, f64)> = r.modes.iter().filter_map(|(m, v)| v.bytes_per_token().map(|b| (*m, b))).collect();
    let ymax = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.15;
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(&bottom)
        .caption("activation bytes per token (measured: Burn pool + BitSparse arena)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
        .map_err(|e| err(&e))?;
    let names: Vec<String> = bars.iter().map(|b| b.0.name().to_string()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = (x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("bytes / token")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, &(mode, b))| {
            let color = Palette99::pick(mode.index()).to_rgba();
            Rectangle::new([(i as f64 + 0.15, 0.0), (i as f64 + 0.85, b)], color.filled())
        }))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(
            bars.iter().enumerate().map(|(i, &(_, b))| {
                Text::new(format!("{b:.0}"), (i as f64 + 0.35, b + ymax * 0.02), ("sans-serif", 14))
            }),
        )
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The JSON document of a data-parallel run (`--devices N`). Per-mode fields are `<field>_<mode>` and
/// `null` for a mode that did not run; per-device figures are in `measurements`.
pub fn json_parallel(args: &Args, r: &DpResult) -> Value {
    let n = r.adapters.len();
    let logged: Vec<u64> = (0..args.steps).filter(|s| s % args.log_every == 0 || *s + 1 == args.steps).collect();
    let mut doc = Map::new();
    doc.insert("devices".into(), json!(n));
    doc.insert("strategy".into(), json!(r.strategy));
    doc.insert("share_adapter".into(), json!(args.share_adapter));
    doc.insert("adapters".into(), json!(r.adapters));
    doc.insert("adapter".into(), json!(r.adapters.first()));
    doc.insert("steps".into(), json!(args.steps));
    doc.insert("warmup".into(), json!(args.warmup));
    doc.insert("pretrain_steps".into(), json!(args.pretrain));
    doc.insert("pretrain_loss".into(), json!(r.pretrain_loss));
    doc.insert(
        "config".into(),
        json!({
            "d_model": args.d_model, "n_layer": args.n_layer, "n_head": args.n_head, "context": args.context,
            "batch": args.batch, "lr": args.lr, "seed": args.seed, "vocab": r.shape.vocab,
            "d_ff": 4 * args.d_model, "activation": "relu2", "dtype": crate::dtype_name(args.dtype), "arena_bytes": args.arena_bytes(),
            "tile_order": args.tile_order.name(),
        }),
    );
    doc.insert("batch_per_device".into(), json!(args.batch));
    doc.insert("tokens_per_step_per_device".into(), json!(args.batch * args.context));
    doc.insert("tokens_per_step".into(), json!(n * args.batch * args.context));
    doc.insert("modes".into(), json!(r.modes.keys().map(|m| m.name()).collect::<Vec<_>>()));
    doc.insert("logged_steps".into(), json!(logged));
    // burn-train sums the devices' gradients in the order the workers finish: two addends commute
    // exactly, three or more need not.
    doc.insert("reduction_deterministic".into(), json!(n <= 2));
    doc.insert("bit_identical".into(), json!(r.bit_identical()));
    doc.insert("bit_identity".into(), json!(r.identity));
    for mode in Mode::ALL {
        let m = r.modes.get(&mode);
        let losses = m.map(|m| {
            let mean = m.mean_losses();
            logged.iter().map(|&s| mean[s as usize]).collect::<Vec<_>>()
        });
        doc.insert(format!("loss_{}", mode.name()), json!(losses));
        doc.insert(format!("tokens_per_s_{}", mode.name()), json!(m.map(|m| m.tokens_per_s)));
        doc.insert(
            format!("activation_bytes_per_token_per_device_{}", mode.name()),
            json!(m.and_then(DpModeResult::bytes_per_token_per_device)),
        );
        doc.insert(format!("step_ms_{}", mode.name()), json!(m.and_then(DpModeResult::median_ms)));
    }
    let per_token = |mode: Mode| r.modes.get(&mode).and_then(DpModeResult::bytes_per_token_per_device);
    doc.insert("saving".into(), json!(saving(per_token(Mode::BitSparse), per_token(Mode::Dense))));
    doc.insert("saving_ckpt".into(), json!(saving(per_token(Mode::CkptBitSparse), per_token(Mode::CkptDense))));
    let arena = r.modes.iter().filter(|(m, _)| m.is_bitsparse()).map(|(_, v)| v);
    doc.insert("arena_used_bytes".into(), json!(arena.clone().flat_map(|v| v.arena_used_bytes.iter().copied()).max()));
    doc.insert(
        "arena_capacity_bytes".into(),
        json!(arena.clone().flat_map(|v| v.arena_capacity_bytes.iter().copied()).max()),
    );
    doc.insert("arena_overflows".into(), json!(arena.clone().map(|v| v.overflows).sum::<u32>()));
    doc.insert("status_reads".into(), json!(arena.map(|v| v.status_reads).sum::<u64>()));
    let mut out = Map::new();
    for (mode, m) in &r.modes {
        out.insert(
            mode.name().into(),
            json!({
                "model_per_device": m.memory,
                "activation_bytes_per_token_all_devices": m.memory.iter().map(MemoryMeasure::per_token).collect::<Vec<_>>(),
                "step_ms_all": m.step_ms,
                "losses_all_per_device": m.losses,
                "arena_used_bytes_last_step_per_device": m.arena_used_bytes,
                "arena_capacity_bytes_per_device": m.arena_capacity_bytes,
                "arena_overflows": m.overflows,
                "status_reads": m.status_reads,
            }),
        );
    }
    doc.insert("measurements".into(), Value::Object(out));
    doc.insert("run_seconds".into(), json!(r.run_seconds));
    Value::Object(doc)
}

/// The table of a data-parallel run.
pub fn table_parallel(args: &Args, r: &DpResult) -> String {
    let n = r.adapters.len();
    let mut s = String::new();
    for (i, a) in r.adapters.iter().enumerate() {
        s += &format!("device {i}: {} ({})\n", a.name, a.backend);
    }
    s += &format!(
        "strategy: burn-train {} over {n} device(s), {} sequences × {} tokens per device ({} tokens/step)\n\n",
        r.strategy,
        args.batch,
        args.context,
        n * args.batch * args.context
    );
    s += &format!(
        "{:<16} {:>12} {:>18} {:>14} {:>14}\n",
        "mode", "final loss", "B/token/device", "tokens/s", "ms/step (med)"
    );
    let opt = |v: Option<f64>, p: usize| v.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "-".into());
    for (mode, m) in &r.modes {
        s += &format!(
            "{:<16} {:>12} {:>18} {:>14} {:>14}\n",
            mode.name(),
            opt(m.mean_losses().last().copied(), 4),
            opt(m.bytes_per_token_per_device(), 0),
            opt(Some(m.tokens_per_s), 0),
            opt(m.median_ms(), 1)
        );
    }
    for id in &r.identity {
        s += &format!(
            "{} vs {}: losses bit-equal {}/{} (step × device), final weights {}\n",
            id.mode,
            id.partner,
            id.losses_equal,
            id.losses_compared,
            if id.final_weights_equal { "bit-equal" } else { "differ" }
        );
    }
    s
}
