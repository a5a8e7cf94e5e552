//! The sweep: for each dtype, density and size one *batch* (one tensor), in which every op's case and the
//! copy shader are timed interleaved, repetition after repetition, so each op is compared with a copy
//! measured under the same conditions (clocks, temperature, neighbours).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use bitsparse::error::{Error, Result};
use bitsparse::format::{DType, Layout, Options};
use bitsparse::host::context::{backend_name, GpuContext};
use bitsparse::host::sync;
use bitsparse::Codec;

use super::case::{self, BatchCtx, Case};
use super::config::{BenchConfig, Resolved};
use super::copy::CopyKernel;
use super::data::{self, Stats};
use super::gpu;
use super::op::Op;
use super::report::{human, AdapterReport, BenchReport, Row};
use super::timer::{median, span_ms, StampMode, Timer};

/// Whether an adapter is a CPU rasteriser (lavapipe, llvmpipe, SwiftShader): those get the reduced sweep.
pub fn is_cpu_adapter(info: &wgpu::AdapterInfo) -> bool {
    let name = info.name.to_ascii_lowercase();
    info.device_type == wgpu::DeviceType::Cpu
        || ["llvmpipe", "lavapipe", "swiftshader"].iter().any(|s| name.contains(s))
}

/// The adapter as the report names it.
pub fn adapter_report(info: &wgpu::AdapterInfo) -> AdapterReport {
    let driver = format!("{} {}", info.driver, info.driver_info).trim().to_string();
    AdapterReport { name: info.name.clone(), backend: backend_name(info.backend).to_string(), driver }
}

/// Opens the adapter `config` chooses and runs the sweep on it.
pub fn run(config: &BenchConfig) -> Result<BenchReport> {
    let gpu = GpuContext::new(&config.adapter)?;
    run_on(&gpu, config)
}

/// Runs the sweep on an opened device. Needs timestamp queries (`Error::Unsupported` without them).
pub fn run_on(gpu: &GpuContext, config: &BenchConfig) -> Result<BenchReport> {
    let mode = StampMode::for_device(&gpu.device)?;
    let cpu = is_cpu_adapter(&gpu.info);
    let sweep = config.resolve(cpu)?;
    let codec_config = crate::codec_config_from_env()?;
    let codec = Codec::with_config(&gpu.device, codec_config.clone())?;
    let copy = CopyKernel::new(&gpu.device)?;
    let dense = std::cell::OnceCell::new();
    let limits = gpu.device.limits();
    let mut report = BenchReport {
        adapter: adapter_report(&gpu.info),
        copy_gbps: f64::NAN,
        rows: Vec::new(),
        notes: Vec::new(),
        context: Vec::new(),
    };
    report.context = vec![
        format!("codec path: {}", codec.path().name()),
        format!(
            "timestamps: {}",
            match mode {
                StampMode::Encoder => "CommandEncoder::write_timestamp",
                StampMode::EmptyPass => "empty compute passes with timestamp writes",
            }
        ),
        format!(
            "sweep: {} timed repetitions after {} warm-up, {:.2} s of copies before each batch{}",
            sweep.reps,
            sweep.warmup,
            sweep.spin_up_s,
            if cpu { " (CPU adapter: reduced sweep)" } else { "" }
        ),
        format!(
            "limits: max_buffer_size {}, max_storage_buffer_binding_size {}",
            limits.max_buffer_size, limits.max_storage_buffer_binding_size
        ),
        format!("data: synthetic ReLU² (bitsparse::cpu::synthetic_relu2), seed {}", config.seed),
    ];
    for op in &sweep.ops {
        if !case::implemented(*op) {
            report.notes.push(format!("{op}: no rows, the kernel does not exist yet"));
        }
    }

    // Sizes each dtype can hold: the dense tensor and the worst-case stream must fit one buffer.
    let mut plan: Vec<(DType, Vec<u64>)> = Vec::new();
    for &dtype in &sweep.dtypes {
        let mut ok = Vec::new();
        for &n in &sweep.sizes {
            match fits(dtype, n, limits.max_buffer_size) {
                Ok(()) => ok.push(n),
                Err(why) => report.notes.push(format!("skipped {dtype} at {n} elements: {why}")),
            }
        }
        plan.push((dtype, ok));
    }
    let batches: u64 = plan.iter().map(|(_, s)| (s.len() * sweep.densities.len()) as u64).sum();
    let pb = progress(config.progress, batches);

    // Per tensor size: every copy sample of the run so far, and the best batch median (the reference a
    // disturbed batch is recognised by).
    let mut copies: std::collections::BTreeMap<u64, (Vec<f64>, f64)> = std::collections::BTreeMap::new();
    for (dtype, sizes) in &plan {
        let Some(&nmax) = sizes.last() else { continue };
        for &density in &sweep.densities {
            pb.set_message(format!("{dtype} ρ={density}: generating {} elements", human(nmax)));
            let full = data::synthetic(nmax, density, *dtype, config.seed);
            for &n in sizes {
                pb.set_message(format!("{dtype} ρ={density} {}", human(n)));
                let data = &full[..(n * dtype.bytes()) as usize];
                let stats = Stats::of(data, *dtype);
                let input = gpu::buffer_with(&gpu.device, "bitsparse.bench.input", data)?;
                let bctx = BatchCtx {
                    device: &gpu.device,
                    queue: &gpu.queue,
                    codec: &codec,
                    copy: &copy,
                    dtype: *dtype,
                    density,
                    data,
                    stats: &stats,
                    input: &input,
                    verify: config.verify,
                    dense: &dense,
                    kernel_constants: codec_config.kernel_constants.as_deref(),
                    fused: std::cell::OnceCell::new(),
                };
                // CPU adapters: no retries (their copies vary with the host's load, not with a disturbance).
                let best = if cpu { None } else { Some(copies.get(&n).map_or(0.0, |c| c.1)) };
                let out = run_batch(&bctx, &sweep, mode, best)?;
                let g = median(&out.copy_gbps_samples);
                let (samples, best) = copies.entry(n).or_insert((Vec::new(), 0.0));
                *best = best.max(g);
                samples.extend(out.copy_gbps_samples);
                report.notes.extend(out.notes);
                report.rows.extend(out.rows);
                pb.inc(1);
            }
        }
    }
    pb.finish_and_clear();
    if let Some((n, (s, _))) = copies.iter().next_back() {
        report.copy_gbps = median(s);
        report.context.push(format!("copy_gbps: median of {} copy runs at {} elements", s.len(), n));
    }
    Ok(report)
}

/// Why `n` elements of `dtype` cannot be benchmarked on a device with this `max_buffer_size`, if so.
fn fits(dtype: DType, n: u64, max_buffer: u64) -> std::result::Result<(), String> {
    let dense = n * dtype.bytes() + gpu::GUARD + 16;
    if dense > max_buffer {
        return Err(format!("{dense} dense bytes exceed max_buffer_size {max_buffer}"));
    }
    for sp in [false, true] {
        let l = Layout::new(dtype, n, Options { sign_pack: sp }).map_err(|e| e.to_string())?;
        let cap = l.capacity_bytes() + gpu::GUARD + 16;
        if cap > max_buffer {
            return Err(format!("a stream of up to {cap} bytes exceeds max_buffer_size {max_buffer}"));
        }
    }
    Ok(())
}

fn progress(show: bool, len: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{bar:32}] {pos}/{len} batches  {msg}") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// What one batch produced.
struct BatchOut {
    rows: Vec<Row>,
    notes: Vec<String>,
    copy_gbps_samples: Vec<f64>,
}

/// A batch whose copy ran below this fraction of the run's best copy at its size is timed again.
const DISTURBED_FRACTION: f64 = 0.85;
/// How many times a disturbed batch is timed again at most.
const DISTURBED_RETRIES: u32 = 2;

/// Whether a batch whose copy ran at `copy` GB/s was disturbed, given the run's best copy `best` at its
/// size (0 when there is none yet, or on CPU adapters, whose timings are not compared this way).
fn disturbed(copy: f64, best: f64) -> bool {
    copy.is_nan() || copy < DISTURBED_FRACTION * best
}

/// Whether a batch timed so far with these interleaved copies (GB/s, one per timing) is timed again,
/// given the run's best copy at its size (`Some(0.0)`: none yet, `None`: a CPU adapter).
fn time_again(copies: &[f64], best_copy: Option<f64>) -> bool {
    let Some(best) = best_copy else { return false };
    let fastest = copies.iter().copied().fold(f64::NAN, f64::max);
    copies.len() <= DISTURBED_RETRIES as usize && ((best == 0.0 && copies.len() == 1) || disturbed(fastest, best))
}

/// Makes the batch's cases, times them interleaved, checks them, and turns them into rows.
/// `best_copy`: the fastest batch copy (GB/s, median) this run has measured at this size so far, 0 if
/// none (then the batch is timed twice, so one disturbed timing cannot set the reference), `None` on a
/// CPU adapter (timed once).
fn run_batch(ctx: &BatchCtx<'_>, sweep: &Resolved, mode: StampMode, best_copy: Option<f64>) -> Result<BatchOut> {
    // The copy case always runs: every row's copy_fraction needs it. Its rows appear only if asked for.
    let mut cases: Vec<Box<dyn Case + '_>> = Vec::new();
    cases.extend(case::make(Op::Copy, false, &[], ctx)?);
    for &op in sweep.ops.iter().filter(|&&o| o != Op::Copy) {
        if !case::implemented(op) {
            continue;
        }
        let modes: &[bool] = if op.uses_sign_pack() { &sweep.sign_pack } else { &[false] };
        for &sp in modes {
            cases.extend(case::make(op, sp, &sweep.tile_orders, ctx)?);
        }
    }
    let copy_bytes = cases[0].bytes_moved() as f64;
    let gbps = |bytes: f64, ms: f64| if ms > 0.0 { bytes / (ms * 1e6) } else { f64::NAN };

    // A disturbed batch (on the H200, now and then a whole batch's copy ran at 40 % of its usual
    // bandwidth, and every case in it with it) is timed again rather than reported: up to
    // `DISTURBED_RETRIES` more times while its copy stays below `DISTURBED_FRACTION` of the best copy
    // this run has seen at this size. The first batch of a size has no reference yet: it is always
    // timed twice. The attempt with the fastest copy is kept, and a note gives every attempt's copy.
    let mut times = time_cases(ctx, &cases, sweep, mode)?;
    let mut copies = vec![gbps(copy_bytes, median(&times[0]))];
    let mut copy_gbps = copies[0];
    while time_again(&copies, best_copy) {
        let again = time_cases(ctx, &cases, sweep, mode)?;
        let g = gbps(copy_bytes, median(&again[0]));
        copies.push(g);
        if g > copy_gbps {
            times = again;
            copy_gbps = g;
        }
    }
    let mut out = BatchOut {
        rows: Vec::new(),
        notes: Vec::new(),
        copy_gbps_samples: times[0].iter().map(|&ms| gbps(copy_bytes, ms)).collect(),
    };
    let reference = best_copy.unwrap_or(0.0).max(copy_gbps);
    if copies.iter().any(|&g| disturbed(g, reference)) {
        let list: Vec<String> = copies.iter().map(|g| format!("{g:.0}")).collect();
        let still =
            if disturbed(copy_gbps, reference) { "; still below: compare its copy_fraction, not its ms" } else { "" };
        out.notes.push(format!(
            "{} ρ={} n={}: timed {} times (copy {} GB/s against this run's best {reference:.0}), kept the attempt with the fastest copy{still}",
            ctx.dtype,
            ctx.density,
            ctx.n(),
            copies.len(),
            list.join(", "),
        ));
    }
    for (c, t) in cases.iter().zip(&times) {
        if c.op() == Op::Copy && !sweep.ops.contains(&Op::Copy) {
            continue;
        }
        let check = c.check(ctx)?;
        if let Some(n) = check.note {
            out.notes.push(n);
        }
        let ms = median(t);
        let g = gbps(c.bytes_moved() as f64, ms);
        out.rows.push(Row {
            op: c.op(),
            dtype: ctx.dtype.name().to_string(),
            sign_pack: c.sign_pack(),
            density: ctx.density,
            measured_density: ctx.stats.measured_density,
            elements: ctx.n(),
            reps: t.len() as u32,
            ms,
            gbps: g,
            copy_fraction: if c.op() == Op::Copy { 1.0 } else { g / copy_gbps },
            ratio: check.ratio,
            bound_fraction: check.bound_fraction,
            tile_order: c.tile_order().map(|o| o.name().to_string()),
            with_a: c.with_a(),
            format_version: c.format_version(),
        });
    }
    Ok(out)
}

/// Spin-up, warm-up, then `reps` timed rounds of every case, each case fenced off from its neighbours.
/// Returns the milliseconds of each case, one per repetition.
fn time_cases(
    ctx: &BatchCtx<'_>,
    cases: &[Box<dyn Case + '_>],
    sweep: &Resolved,
    mode: StampMode,
) -> Result<Vec<Vec<f64>>> {
    let (device, queue) = (ctx.device, ctx.queue);
    let mut fenced: Vec<&wgpu::Buffer> = vec![ctx.input];
    for c in cases {
        fenced.extend(c.buffers());
    }
    let encoder = || device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench") });

    let per_submit = ((256u64 << 20) / cases[0].bytes_moved().max(1)).clamp(1, 1000);
    gpu::spin_up(device, queue, sweep.spin_up_s, |enc| {
        for _ in 0..per_submit {
            cases[0].record(enc)?;
        }
        Ok(())
    })?;
    // Warm-up rounds, not waited for: the timed rounds follow them on the queue without a gap.
    for _ in 0..sweep.warmup {
        let mut enc = encoder();
        for c in cases {
            c.before(&mut enc)?;
            gpu::fence(&mut enc, &fenced);
            c.record(&mut enc)?;
        }
        sync::submit(queue, [enc.finish()]);
    }

    let per_round = 2 * cases.len() as u32;
    let rounds_per_timer = (wgpu::QUERY_SET_MAX_QUERIES / per_round).max(1);
    if per_round > wgpu::QUERY_SET_MAX_QUERIES {
        return Err(Error::InvalidArgument(format!(
            "{} cases in one batch are more than one query set holds",
            cases.len()
        )));
    }
    let mut times = vec![Vec::with_capacity(sweep.reps as usize); cases.len()];
    let mut done = 0;
    while done < sweep.reps {
        let rounds = rounds_per_timer.min(sweep.reps - done);
        let mut timer = Timer::new(device, rounds * per_round, mode)?;
        let mut spans = Vec::with_capacity((rounds * per_round) as usize);
        for _ in 0..rounds {
            let mut enc = encoder();
            for (i, c) in cases.iter().enumerate() {
                c.before(&mut enc)?;
                gpu::fence(&mut enc, &fenced);
                let a = timer.stamp(&mut enc)?;
                c.record(&mut enc)?;
                let b = timer.stamp(&mut enc)?;
                spans.push((i, a, b));
            }
            sync::submit(queue, [enc.finish()]);
        }
        let ns = timer.read_ns(device, queue)?;
        for (i, a, b) in spans {
            times[i].push(span_ms(&ns, a, b));
        }
        done += rounds;
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::{disturbed, time_again};

    #[test]
    fn a_batch_is_timed_again_while_disturbed_and_the_first_one_twice() {
        assert!(!time_again(&[4000.0], None), "CPU adapters: once");
        assert!(time_again(&[4000.0], Some(0.0)), "the first batch of a size: twice");
        assert!(!time_again(&[1600.0, 4000.0], Some(0.0)));
        assert!(!time_again(&[3900.0], Some(4050.0)));
        assert!(time_again(&[1600.0], Some(4050.0)));
        assert!(time_again(&[1600.0, 1700.0], Some(4050.0)));
        assert!(!time_again(&[1600.0, 1700.0, 1650.0], Some(4050.0)), "at most two more timings");
        assert!(!time_again(&[1600.0, 4000.0], Some(4050.0)), "a good timing ends it");
    }

    #[test]
    fn disturbed_batches_are_those_well_below_the_best_copy() {
        assert!(disturbed(1580.0, 4050.0), "the H200's disturbed e4m3 batch");
        assert!(!disturbed(3900.0, 4050.0));
        assert!(!disturbed(4100.0, 4050.0), "a new best is not disturbed");
        assert!(!disturbed(1.0, 0.0), "no reference yet (first batch, CPU adapters): never retried");
        assert!(disturbed(f64::NAN, 4050.0));
    }
}
