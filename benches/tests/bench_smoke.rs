//! Smoke test of the benchmark harness on lavapipe (Vulkan): the quick sweep runs, its JSON has the
//! fields of docs/CONVENTIONS.md with sane values, the outputs are written, and a device without timestamp
//! queries is refused with `Error::Unsupported`; the roofline kernels (fill, read, copy) run.
//!
//! On the workspace's GPU test harness (`tests/common/harness.rs`, this binary being `harness = false`):
//! without lavapipe the tests are reported as ignored, and fail under `CI=true`.

#[path = "../../tests/common/mod.rs"]
mod common;

use bitsparse::host::context::{self, AdapterChoice, GpuContext};
use bitsparse::DType;
use bitsparse_bench::{self as bench, BenchConfig, Op};
use common::harness::{needs_test, Absent, Requirement};

/// lavapipe (a CPU adapter) on Vulkan.
static LAVAPIPE: Requirement = Requirement::new("lavapipe (Vulkan)", || match lavapipe_adapter() {
    Some(_) => Ok(()),
    None => Err(Absent::Missing("wgpu finds no CPU Vulkan adapter".into())),
});

fn main() {
    common::harness::main(vec![
        needs_test!(bench_quick_sweep_json_is_sane, LAVAPIPE),
        needs_test!(bench_without_timestamps_is_unsupported, LAVAPIPE),
        needs_test!(roofline_rates_are_sane, LAVAPIPE),
    ])
}

fn lavapipe_adapter() -> Option<wgpu::Adapter> {
    context::enumerate(wgpu::Backends::VULKAN).into_iter().find(|a| bench::is_cpu_adapter(&a.get_info()))
}

/// lavapipe on Vulkan (the harness has checked it is there).
fn lavapipe() -> wgpu::Adapter {
    lavapipe_adapter().expect("lavapipe went away")
}

fn quick() -> BenchConfig {
    BenchConfig {
        adapter: AdapterChoice { adapter: Some("llvmpipe".into()), backend: Some("vulkan".into()) },
        progress: false,
        ..BenchConfig::quick()
    }
}

fn bench_quick_sweep_json_is_sane() {
    let adapter = lavapipe();
    let gpu = GpuContext::from_adapter(adapter, wgpu::Features::empty()).unwrap();
    let report = bench::run_on(&gpu, &quick()).unwrap();

    assert!(!report.adapter.name.is_empty() && report.adapter.backend == "vulkan", "{:?}", report.adapter);
    assert!(report.copy_gbps.is_finite() && report.copy_gbps > 0.0, "copy_gbps {}", report.copy_gbps);
    for n in &report.notes {
        let failed = ["NOT bit-exact", "differs", "header says", "arena slot status", "arena stream of"];
        assert!(!failed.iter().any(|f| n.contains(f)), "harness check failed: {n}");
    }
    for op in Op::ALL {
        assert!(report.rows.iter().any(|r| r.op == op), "no {op} rows");
    }
    // The fused and plain kernels take BF16 only.
    for op in [Op::FusedForward, Op::FusedBackward, Op::PlainForward, Op::PlainBackward] {
        assert!(report.rows.iter().filter(|r| r.op == op).all(|r| r.dtype == "bf16"), "{op} rows for a non-BF16 batch");
    }
    // 2 dtypes × 3 densities × 2 sizes batches; copy once, decompress four times (sign modes × format
    // versions) and compress six times (sign modes × (version 1 in both tile orders, version 2)) each;
    // the BF16 half of them also fused forward (sign modes × tile orders), fused backward (sign modes ×
    // with/without a) and plain (once) rows.
    let count = |op: Op| report.rows.iter().filter(|r| r.op == op).count();
    assert_eq!(count(Op::Copy), 12);
    assert_eq!(count(Op::Compress), 72);
    assert_eq!(count(Op::Decompress), 48);
    assert_eq!(count(Op::FusedForward), 24);
    assert_eq!(count(Op::FusedBackward), 24);
    assert_eq!(count(Op::PlainBackward), 6);
    let count_where = |op: Op, f: &dyn Fn(&bitsparse_bench::report::Row) -> bool| {
        report.rows.iter().filter(|r| r.op == op && f(r)).count()
    };
    for (order, rows) in [("ordered", 24), ("unordered", 48)] {
        assert_eq!(count_where(Op::Compress, &|r| r.tile_order.as_deref() == Some(order)), rows, "{order}");
        assert_eq!(count_where(Op::FusedForward, &|r| r.tile_order.as_deref() == Some(order)), 12, "{order}");
    }
    assert_eq!(count_where(Op::FusedBackward, &|r| r.with_a == Some(true)), 12);
    assert_eq!(count_where(Op::Decompress, &|r| r.tile_order.is_none() && r.format_version == Some(1)), 24);
    assert_eq!(count_where(Op::Decompress, &|r| r.tile_order.is_none() && r.format_version == Some(2)), 24);
    assert_eq!(count_where(Op::Compress, &|r| r.format_version == Some(2)), 24);
    // The GPU's version-2 stream (tile starts: one word per tile) is the canonical one (decompress row,
    // one base per 16 tiles) plus the difference in directory words, the data being the same.
    for c in report.rows.iter().filter(|r| r.op == Op::Compress && r.format_version == Some(2)) {
        let d = report
            .rows
            .iter()
            .find(|r| {
                r.op == Op::Decompress
                    && r.format_version == Some(2)
                    && r.dtype == c.dtype
                    && r.sign_pack == c.sign_pack
                    && r.density == c.density
                    && r.elements == c.elements
            })
            .unwrap();
        let (stored_c, stored_d) = (1.0 / c.ratio.unwrap(), 1.0 / d.ratio.unwrap());
        let dense = c.elements as f64 * DType::from_name(&c.dtype).unwrap().bytes() as f64;
        let tiles = (c.elements as f64 / 4096.0).ceil();
        let extra = (stored_c - stored_d) * dense / 4.0;
        let want = tiles - (tiles / 16.0).ceil();
        assert!((extra - want).abs() < 0.5, "{c:?} vs {d:?}: {extra} words more, not {want}");
    }
    // Version 2 never stores more than version 1 but for its group bases (one word per 16 tiles).
    for v2 in report.rows.iter().filter(|r| r.op == Op::Decompress && r.format_version == Some(2)) {
        let v1 = report
            .rows
            .iter()
            .find(|r| {
                r.op == Op::Decompress
                    && r.format_version == Some(1)
                    && r.dtype == v2.dtype
                    && r.sign_pack == v2.sign_pack
                    && r.density == v2.density
                    && r.elements == v2.elements
            })
            .unwrap();
        assert!(v2.ratio.unwrap() >= 0.995 * v1.ratio.unwrap(), "{v2:?} vs {v1:?}");
    }
    // The fused forward stores what compress stores for the same support: the same ratio.
    for f in report.rows.iter().filter(|r| r.op == Op::FusedForward) {
        let c = report
            .rows
            .iter()
            .find(|r| {
                r.op == Op::Compress
                    && r.dtype == "bf16"
                    && r.sign_pack == f.sign_pack
                    && r.density == f.density
                    && r.elements == f.elements
            })
            .unwrap();
        assert_eq!(f.ratio, c.ratio, "{f:?}");
    }
    for r in &report.rows {
        assert!(r.reps >= 3, "{r:?}");
        assert!(r.ms > 0.0 && r.gbps > 0.0 && r.copy_fraction > 0.0, "{r:?}");
        assert!((r.measured_density - r.density).abs() < 0.02, "{r:?}");
        match r.op {
            Op::Copy => {
                assert!(r.ratio.is_none() && r.bound_fraction.is_none() && !r.sign_pack, "{r:?}");
                assert_eq!(r.copy_fraction, 1.0);
            }
            Op::PlainForward | Op::PlainBackward => {
                assert!(r.ratio.is_none() && r.bound_fraction.is_none() && !r.sign_pack, "{r:?}");
            }
            _ => {
                let ratio = r.ratio.expect("codec and fused rows have a ratio");
                let bf = r.bound_fraction.expect("codec and fused rows have a bound fraction");
                assert!(ratio > 1.0, "density ≤ 0.5 must compress: {r:?}");
                // Version 2 codes values below the bound's b − s bits, so only it may pass 1.
                assert!(bf > 0.0 && (bf <= 1.0 || r.format_version == Some(2)), "{r:?}");
                // At ρ = 0.5 the mask costs the entropy's 1 bit and values their width: close to the bound.
                if r.density == 0.5 && r.elements == 1 << 18 {
                    assert!(bf > 0.95, "{r:?}");
                }
            }
        }
    }
    // Sign packing stores fewer bits per value: a better ratio at the same data.
    let ratio = |sp: bool| {
        report
            .rows
            .iter()
            .find(|r| {
                r.op == Op::Compress
                    && r.dtype == "bf16"
                    && r.density == 0.5
                    && r.sign_pack == sp
                    && r.elements == 1 << 18
            })
            .and_then(|r| r.ratio)
            .unwrap()
    };
    assert!(ratio(true) > ratio(false));

    // The JSON carries exactly the fields of docs/CONVENTIONS.md.
    let v: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    for k in ["adapter", "copy_gbps", "rows"] {
        assert!(v.get(k).is_some(), "missing top-level {k}");
    }
    for k in ["name", "backend", "driver"] {
        assert!(v["adapter"][k].is_string(), "missing adapter.{k}");
    }
    let row = &v["rows"][0];
    for k in [
        "op",
        "dtype",
        "sign_pack",
        "density",
        "measured_density",
        "elements",
        "reps",
        "ms",
        "gbps",
        "copy_fraction",
        "ratio",
        "bound_fraction",
    ] {
        assert!(row.get(k).is_some(), "missing row field {k}");
    }

    let dir = std::env::temp_dir().join(format!("bitsparse-bench-smoke-{}", std::process::id()));
    let files = bench::write_outputs(&report, &dir, "").unwrap();
    assert_eq!(files.len(), 4);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(text.len() > 200, "{} is nearly empty", f.display());
    }
    assert!(std::fs::read_to_string(dir.join("ratio.svg")).unwrap().contains("<svg"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn bench_without_timestamps_is_unsupported() {
    let adapter = lavapipe();
    let ts = wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
    let gpu = GpuContext::from_adapter(adapter, ts).unwrap();
    match bench::run_on(&gpu, &quick()) {
        Err(bitsparse::Error::Unsupported(msg)) => assert!(msg.contains("timestamp"), "{msg}"),
        other => panic!("expected Unsupported, got {:?}", other.map(|r| r.rows.len())),
    }
}

/// The roofline kernels run, the fill writes its pattern (checked inside `measure`), and the rates are
/// finite and positive over the bytes asked for (rounded to 16).
fn roofline_rates_are_sane() {
    let adapter = lavapipe();
    let gpu = GpuContext::from_adapter(adapter, wgpu::Features::empty()).unwrap();
    let r = bench::roofline::measure(&gpu.device, &gpu.queue, (1 << 20) + 8, 3, 0.0).unwrap();
    assert_eq!(r.bytes, (1 << 20) + 16);
    assert_eq!(r.reps, 3);
    for (what, g) in [("copy", r.copy_gbps), ("fill", r.fill_gbps), ("read", r.read_gbps)] {
        assert!(g.is_finite() && g > 0.0, "{what}: {g} GB/s");
    }
}
