//! `cargo bench` entry (custom harness): runs `bitsparse_bench::run` on the chosen adapter and writes
//! `bench.json`, `bench.md`, `throughput.svg` and `ratio.svg`. See benches/README.md.
//!
//! Flags (after `cargo bench --bench codec --`): `--quick`, `--out DIR`, `--results` (also write
//! adapter-named copies into benches/results/), `--results-dir DIR`, `--adapter SUBSTR`, `--backend NAME`,
//! `--json` (the JSON on stdout), `--no-progress`, `--no-verify`, `--replot FILE.json` (re-render the
//! Markdown and plots of a kept JSON, no GPU needed). Environment: `BITSPARSE_BENCH_QUICK=1`,
//! `BITSPARSE_BENCH_SIZES`, `BITSPARSE_BENCH_DENSITIES`, `BITSPARSE_BENCH_DTYPES`, `BITSPARSE_BENCH_OPS`,
//! `BITSPARSE_BENCH_SIGN_PACK`, `BITSPARSE_BENCH_REPS`, `BITSPARSE_BENCH_NO_VERIFY`, `WGPU_ADAPTER_NAME`,
//! `WGPU_BACKEND`.

use std::path::PathBuf;

use bitsparse_bench::{self as bench, BenchConfig};

struct Args {
    config: BenchConfig,
    out: Option<PathBuf>,
    results_dir: Option<PathBuf>,
    json: bool,
    replot: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args { config: BenchConfig::new(), out: None, results_dir: None, json: false, replot: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            // cargo passes `--bench`; libtest-style filters are not used by this harness.
            "--bench" => {}
            "--quick" => a.config.quick = true,
            "--json" => a.json = true,
            "--no-progress" => a.config.progress = false,
            "--no-verify" => a.config.verify = false,
            "--out" => a.out = Some(PathBuf::from(value("--out")?)),
            "--results" => a.results_dir = Some(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/results"))),
            "--results-dir" => a.results_dir = Some(PathBuf::from(value("--results-dir")?)),
            "--replot" => a.replot = Some(PathBuf::from(value("--replot")?)),
            "--adapter" => a.config.adapter.adapter = Some(value("--adapter")?),
            "--backend" => a.config.adapter.backend = Some(value("--backend")?),
            other if other.starts_with('-') => return Err(format!("unknown flag `{other}` (see benches/README.md)")),
            _ => {} // a name filter from `cargo bench NAME`: one benchmark here, nothing to filter
        }
    }
    Ok(a)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> bitsparse::Result<()> {
    let report = match &args.replot {
        // Re-renders the Markdown and plots of a kept JSON (e.g. one measured on the H200) without a GPU.
        Some(json) => {
            let text = std::fs::read_to_string(json)?;
            serde_json::from_str::<bench::BenchReport>(&text)
                .map_err(|e| bitsparse::Error::InvalidArgument(format!("{}: not a bench JSON: {e}", json.display())))?
        }
        None => bench::run(&args.config.with_env()?)?,
    };
    // `cargo bench` runs this binary inside benches/ (the harness's package): the default output goes
    // under the workspace's target/ as it did before the split, not benches/target/.
    let dir = args.out.unwrap_or_else(|| {
        let rel = bench::default_out_dir(&report.adapter);
        if rel.is_relative() {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(rel)
        } else {
            rel
        }
    });
    let mut written = bench::write_outputs(&report, &dir, "")?;
    if let Some(keep) = args.results_dir {
        written.extend(bench::write_outputs(&report, &keep, &bench::adapter_slug(&report.adapter))?);
    }
    if args.json {
        println!("{}", report.to_json()?);
    }
    eprintln!(
        "{} ({}): copy shader {:.1} GB/s, {} rows",
        report.adapter.name,
        report.adapter.backend,
        report.copy_gbps,
        report.rows.len()
    );
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    for p in written {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}
