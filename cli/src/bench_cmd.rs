//! `bitsparse bench`: the benchmark sweep of `bitsparse_bench` (the same as `cargo bench`) on the chosen
//! adapter, with a progress bar on stderr. Writes `bench.json`, `bench.md` and the two SVG plots into
//! `--out DIR` (default `target/bench/<adapter>/`); prints the Markdown table, or with `--json` the bench
//! JSON of docs/CONVENTIONS.md, on stdout. The `BITSPARSE_BENCH_*` variables steer the sweep as for
//! `cargo bench` (benches/README.md).

use std::path::PathBuf;

use bitsparse_bench::{self as bench, BenchConfig};

use super::{print_stdout, CliError, Globals};

/// `bench` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the bench JSON on stdout (and nothing else) instead of the Markdown table.
    #[arg(long)]
    json: bool,
    /// Directory for bench.json, bench.md, throughput.svg and ratio.svg (default target/bench/<adapter>/).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The tiny sweep of the smoke tests (seconds on lavapipe).
    #[arg(long)]
    quick: bool,
    /// Skip the round-trip check of each codec op after timing.
    #[arg(long)]
    no_verify: bool,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(g: &Globals, a: &Args) -> Result<(), CliError> {
    let mut config =
        BenchConfig { adapter: g.choice.clone(), quick: a.quick, progress: !a.no_progress, ..BenchConfig::new() };
    if a.no_verify {
        config.verify = false;
    }
    let config = config.with_env().map_err(CliError::plain)?;
    // An unwritable --out should fail before minutes of benchmarking, not after.
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| CliError::file(dir, format!("cannot create: {e}")))?;
    }
    let report = bench::run(&config).map_err(|e| CliError::plain(format!("bench: {e}")))?;
    let dir = a.out.clone().unwrap_or_else(|| bench::default_out_dir(&report.adapter));
    let written =
        bench::write_outputs(&report, &dir, "").map_err(|e| CliError::file(&dir, format!("cannot write: {e}")))?;
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    for p in &written {
        eprintln!("wrote {}", p.display());
    }
    if a.json {
        let text = report.to_json().map_err(|e| CliError::plain(format!("internal: JSON: {e}")))?;
        print_stdout(&text)
    } else {
        print_stdout(&report.to_markdown())
    }
}
