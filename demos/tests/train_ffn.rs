//! The demo trainer (demos/train_ffn): the cache modes train bit-identically, and the BitSparse cache's
//! bytes match the densities the run reached. Runs on whatever adapter `GpuContext` picks (lavapipe
//! here); without one the tests are reported as ignored, and fail under `CI=true` (the workspace's GPU
//! test harness, `tests/common/harness.rs`, this binary being `harness = false`).

#[path = "../../tests/common/mod.rs"]
mod common;

use bitsparse_demos::train_ffn as trainer;

use bitsparse::host::context::{enumerate, AdapterChoice, GpuContext};
use common::harness::{needs_test, Absent, Requirement};
use trainer::{data::Corpus, gpu::Gpu, report::expected_stream_bytes, CacheMode, Config};

/// The adapter `GpuContext::new(&AdapterChoice::default())` opens: none enumerated is a skip, one that
/// does not open a failure.
static ADAPTER: Requirement = Requirement::new("a wgpu adapter", || {
    let backends = AdapterChoice::default().with_env().backends().map_err(|e| Absent::Broken(e.to_string()))?;
    if enumerate(backends).is_empty() {
        return Err(Absent::Missing("wgpu finds none".into()));
    }
    GpuContext::new(&AdapterChoice::default()).map(drop).map_err(|e| Absent::Broken(e.to_string()))
});

fn main() {
    common::harness::main(vec![
        needs_test!(train_bit_identical_small, ADAPTER),
        needs_test!(train_bit_identical_arena_regrow, ADAPTER),
        needs_test!(train_bit_identical_detects_a_difference, ADAPTER),
        needs_test!(no_host_sync_train_step, ADAPTER),
        needs_test!(train_gradients_match_cpu_reference, ADAPTER),
        needs_test!(train_bit_identical_arena_shrink, ADAPTER),
        needs_test!(train_fp8_storage_runs_and_is_reported_apart, ADAPTER),
        needs_test!(train_dump_at_writes_each_layers_relu, ADAPTER),
    ])
}

/// The host-sync counter is process-wide: the tests of this file run one at a time so that one test's
/// logging reads cannot land inside another's counted window.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn gpu() -> Gpu {
    let ctx =
        GpuContext::new(&AdapterChoice::default()).expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)");
    Gpu::new(ctx.device, ctx.queue)
}

fn corpus(cfg: &Config) -> Corpus {
    Corpus::new(trainer::data::DEFAULT_TEXT.as_bytes(), cfg.context).unwrap()
}

/// Trains `cfg` in each of `modes` on the default corpus, one test at a time (see `SERIAL`).
fn train(cfg: &Config, modes: &[CacheMode]) -> trainer::Report {
    let _serial = serial();
    let corpus = corpus(cfg);
    let mut gpu = gpu();
    trainer::run(&mut gpu, cfg, &corpus, modes, &mut |_, _| {}).unwrap()
}

fn train_bit_identical_small() {
    let cfg = Config::tiny();
    let modes = [CacheMode::DenseBaseline, CacheMode::DenseMinimal, CacheMode::BitSparseCodec, CacheMode::BitSparse];
    let report = train(&cfg, &modes);

    assert!(report.bit_identical, "modes differ: {:?}", report.mismatch);
    assert_eq!(report.steps, cfg.steps);
    assert!(report.loss.iter().all(|l| l.is_finite()));
    assert!(report.loss.last().unwrap() < report.loss.first().unwrap(), "the model did not learn: {:?}", report.loss);

    // Dense sizes: x (2d) + r (2H) + a (2H) bytes per token per layer, and x + r.
    let (d, h, l) = (cfg.d as f64, cfg.hidden() as f64, cfg.layers as f64);
    assert_eq!(report.cache_bytes_per_token_dense, l * (2.0 * d + 4.0 * h));
    assert_eq!(report.cache_bytes_per_token_dense_minimal, l * (2.0 * d + 2.0 * h));

    // BitSparse bytes from the library's arena accounting (slot sizes and head) must match the nonzero
    // counts measured by the trainer's own kernel: fixed sections + 15 or 16 bits per nonzero, each
    // tile's stream rounded up to a word; the arena's slack between tensors is small.
    let n = cfg.tokens as u64 * cfg.hidden() as u64;
    assert_eq!(report.final_density.len(), cfg.layers as usize);
    let mut lo = cfg.layers as u64 * cfg.tokens as u64 * cfg.d as u64 * 2;
    let mut hi = lo;
    for &rho in &report.final_density {
        assert!(rho > 0.05 && rho < 0.95, "density {rho} is not in a range that tests anything");
        let nnz = (rho * n as f64).round() as u64;
        let (a, b) = expected_stream_bytes(n, nnz, cfg.sign_pack).unwrap();
        lo += a;
        hi += b;
    }
    let t = cfg.tokens as f64;
    assert_eq!(report.bitsparse_storage, "arena");
    let arena = report.modes.iter().find(|m| m.mode == "bitsparse").unwrap();
    let codec = report.modes.iter().find(|m| m.mode == "bitsparse-codec").unwrap();
    assert_eq!(arena.layer_bytes, codec.layer_bytes, "arena and plain codec store different sizes");
    assert!(arena.slack_bytes_per_token * t <= 16.0 * l, "arena slack {} B", arena.slack_bytes_per_token * t);
    let got = report.cache_bytes_per_token_bitsparse;
    let streams = got - arena.slack_bytes_per_token;
    assert!(
        streams >= lo as f64 / t && streams <= hi as f64 / t,
        "bitsparse {streams} B/token outside {}..{}",
        lo as f64 / t,
        hi as f64 / t
    );
    // And the saving is what those bytes imply (a wrong accounting of either side moves it).
    let expected_saving = 1.0 - got / report.cache_bytes_per_token_dense;
    assert!((report.saving - expected_saving).abs() < 1e-12);
    let mean_rho = report.final_density.iter().sum::<f64>() / l;
    // Per layer and token: x (2d bytes) + mask (H/8) + 15 bits per nonzero (sign packed); the headers and
    // tile tables add a little on top.
    let approx = l * (2.0 * d + h / 8.0 + h * mean_rho * 15.0 / 8.0);
    assert!(
        got >= approx && got < approx * 1.05 + 1.0,
        "bitsparse {got} B/token far from the density estimate {approx}"
    );
}

fn train_bit_identical_arena_regrow() {
    // An arena far too small: the first steps overflow, their gated updates change nothing, the trainer
    // finds the failure at its logging point, grows the arena and re-runs them; the result is still
    // bit-identical to the dense run.
    let mut cfg = Config::tiny();
    cfg.arena_bytes = Some(4096);
    let report = train(&cfg, &[CacheMode::DenseBaseline, CacheMode::BitSparse]);
    assert!(report.bit_identical, "modes differ: {:?}", report.mismatch);
    let arena = report.modes.iter().find(|m| m.mode == "bitsparse").unwrap();
    assert!(arena.regrows >= 1, "the tiny arena never overflowed");
}

fn train_bit_identical_detects_a_difference() {
    let _serial = serial();
    // The comparison must be able to fail: two runs that differ only in the learning rate diverge.
    let mut cfg = Config::tiny();
    cfg.steps = 3;
    let corpus = corpus(&cfg);
    let mut gpu = gpu();
    let a = trainer::run_mode(&mut gpu, &cfg, &corpus, CacheMode::DenseBaseline, &mut |_, _| {}).unwrap();
    cfg.lr *= 1.0001;
    let b = trainer::run_mode(&mut gpu, &cfg, &corpus, CacheMode::BitSparse, &mut |_, _| {}).unwrap();
    let m = trainer::first_mismatch(&a, &b).expect("different learning rates must not compare equal");
    // Step 0's loss is computed before the first update, so the first difference is a weight hash.
    assert!(m.contains("weight hash"), "{m}");
}

fn no_host_sync_train_step() {
    let _serial = serial();
    // Recording a whole training step (forward, backward through the arena's fused kernels, gated
    // update, statistics) performs no host synchronisation; the trainer's one submit per step is the
    // only one, and the logging-point reads are outside the step.
    let cfg = Config::tiny();
    let corpus = corpus(&cfg);
    let mut gpu = gpu();
    for mode in [CacheMode::DenseBaseline, CacheMode::BitSparse] {
        let mut model = trainer::model::Model::new(&mut gpu, &cfg, &corpus, mode).unwrap();
        for _ in 0..2 {
            model.upload_step(&gpu, &corpus);
            let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            let before = bitsparse::host::sync::host_syncs();
            model.record_step(&mut enc).unwrap();
            assert_eq!(
                bitsparse::host::sync::host_syncs(),
                before,
                "{}: recording a step synchronised with the host",
                mode.name()
            );
            let before = bitsparse::host::sync::host_syncs();
            model.step(&gpu, &corpus).unwrap(); // the real step: exactly one (counted) submit
            assert_eq!(bitsparse::host::sync::host_syncs(), before + 1, "{}: a step is one submit", mode.name());
        }
    }
}

fn train_gradients_match_cpu_reference() {
    // Bit-identity between modes would also hold for a wrong backward pass: compare the first step's
    // loss and every weight's gradient with a CPU port of the model (BF16 rounding at the same points,
    // its own summation order, so the tolerance is BF16-level).
    let _serial = serial();
    let cfg = Config::tiny();
    let corpus = corpus(&cfg);
    let mut gpu = gpu();
    for mode in [CacheMode::DenseBaseline, CacheMode::BitSparse] {
        let mut model = trainer::model::Model::new(&mut gpu, &cfg, &corpus, mode).unwrap();
        model.step(&gpu, &corpus).unwrap();
        let loss = model.read_stats(&gpu).unwrap()[0].loss;
        let grads = model.read_grads(&gpu).unwrap();
        let params = model.layout.init(&cfg);
        let (rows, targets) = corpus.batch(cfg.seed, 0, cfg.tokens, cfg.context);
        let (ref_loss, ref_grads) =
            trainer::reference::loss_and_grads(&cfg, corpus.vocab, &model.layout, &params, &rows, &targets);
        assert!((loss - ref_loss).abs() < 1e-3 * ref_loss.abs(), "{}: loss {loss} vs CPU {ref_loss}", mode.name());
        let lay = &model.layout;
        let mut tensors = vec![("embed", lay.embed), ("unembed", lay.unembed)];
        for l in 0..cfg.layers as usize {
            tensors.push(("w1", lay.w1[l]));
            tensors.push(("w2", lay.w2[l]));
        }
        for (name, (off, n)) in tensors {
            let (a, b) = (&grads[off as usize..(off + n) as usize], &ref_grads[off as usize..(off + n) as usize]);
            let diff: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum::<f64>().sqrt();
            let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum::<f64>().sqrt();
            assert!(norm > 0.0, "{name}: zero reference gradient");
            assert!(diff < 2e-2 * norm, "{}: {name} gradient off by {:.3e} relative", mode.name(), diff / norm);
        }
    }
}

fn train_bit_identical_arena_shrink() {
    // An arena far too large: at the first logging point the library's sizing policy says 1 MiB will
    // do, the trainer recreates it smaller before the next step, and the run stays bit-identical.
    let mut cfg = Config::tiny();
    cfg.arena_bytes = Some(8 << 20);
    let report = train(&cfg, &[CacheMode::DenseBaseline, CacheMode::BitSparse]);
    assert!(report.bit_identical, "modes differ: {:?}", report.mismatch);
    let arena = report.modes.iter().find(|m| m.mode == "bitsparse").unwrap();
    assert_eq!((arena.shrinks, arena.regrows), (1, 0));
    let t = cfg.tokens as f64;
    let x = (cfg.layers * cfg.d * 2) as f64;
    assert_eq!(arena.reserved_bytes_per_token, x + (1 << 20) as f64 / t);
}

fn train_fp8_storage_runs_and_is_reported_apart() {
    // FP8 storage is lossy by design: it must not enter the bit-identity verdict, it must store less
    // than the BF16 form, and its loss must stay close to the lossless run's.
    let cfg = Config::tiny();
    let modes = [CacheMode::DenseBaseline, CacheMode::BitSparse, CacheMode::BitSparseFp8(bitsparse::DType::E4m3)];
    let report = train(&cfg, &modes);
    assert!(report.bit_identical, "lossless modes differ: {:?}", report.mismatch);
    assert_eq!(report.lossy.len(), 1);
    let f = &report.lossy[0];
    assert_eq!(f.mode, "bitsparse-fp8-e4m3");
    assert!(f.cache_bytes_per_token < report.cache_bytes_per_token_bitsparse);
    assert!(f.saving > report.saving);
    assert!(f.max_abs_loss_diff > 0.0, "FP8 storage changed nothing: the mode did not store FP8");
    assert!(f.max_abs_loss_diff < 0.05 * f.reference_final_loss, "FP8 storage drifted by {}", f.max_abs_loss_diff);
}

/// `--dump-at`: the dense run writes each layer's relu(z) after the chosen steps; the file parses as
/// safetensors, holds one BF16 `[tokens, hidden]` tensor per layer, and its nonzero count is the one the
/// trainer's own statistics kernel counted at that step; a dump changes no training bit.
fn train_dump_at_writes_each_layers_relu() {
    let dir = std::env::temp_dir().join(format!("bitsparse-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = Config::tiny();
    cfg.dump_at = vec![2, cfg.steps];
    cfg.dump_dir = dir.clone();
    let with = train(&cfg, &[CacheMode::DenseBaseline, CacheMode::BitSparse]);
    assert!(with.bit_identical, "{:?}", with.mismatch);
    let without = train(&Config::tiny(), &[CacheMode::DenseBaseline]);
    assert_eq!(with.loss, without.loss, "dumping changed the training");
    let (t, h) = (cfg.tokens as u64, cfg.hidden() as u64);
    for step in [2, cfg.steps] {
        let bytes = std::fs::read(dir.join(format!("relu_step{step}.safetensors"))).expect("dump written");
        let parsed =
            bitsparse_files::ParsedFile::parse(&bytes, bitsparse_files::Kind::Safetensors, None, "dump").unwrap();
        assert_eq!(parsed.tensors.len(), cfg.layers as usize);
        for (l, tensor) in parsed.tensors.iter().enumerate() {
            assert_eq!(tensor.name, format!("layers.{l}.relu"));
            assert_eq!(tensor.shape, vec![t, h]);
            let data = &bytes[tensor.range.clone()];
            assert_eq!(data.len() as u64, t * h * 2);
            let nnz = bitsparse::cpu::count_nonzeros(data, bitsparse::DType::Bf16);
            if step == cfg.steps {
                let want = (with.final_density[l] * (t * h) as f64).round() as u64;
                assert_eq!(nnz, want, "layer {l}: the dump's nonzeros vs the trainer's count");
            }
            assert!(nnz > 0 && nnz < t * h, "layer {l}: {nnz} nonzeros");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
