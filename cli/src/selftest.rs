//! `bitsparse selftest`: the conformance suite (`bitsparse::conformance`) on every adapter found, as a
//! cross-vendor rig runs it. Prints a pass/fail matrix (adapter × path × dtype), or with `--json`
//! `{"adapters": [{"name", "backend", "status", "cases", "failures", ...}], "ok"}`.
//!
//! Exit status (docs/CONVENTIONS.md): 0 only when at least one adapter could be opened and every adapter that
//! could be opened passed; an adapter whose `request_device` fails is `unavailable`, not failed. Failing
//! adapters make the command exit 1 with one `error: ` line naming them.
//!
//! `--adapter` / `--backend` (and their environment variables) narrow the set of adapters tested.

use bitsparse::conformance::{self, AdapterResult, Status, SuiteOptions};
use bitsparse::host::context::enumerate;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{print_json, print_stdout, CliError, Globals};

/// `selftest` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print one JSON document instead of the matrix.
    #[arg(long)]
    json: bool,
    /// Add the large cases (one tensor per element width past the device's storage-binding size; slow on
    /// CPU adapters).
    #[arg(long)]
    full: bool,
    /// No progress bar on stderr.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(g: &Globals, a: &Args) -> Result<(), CliError> {
    let backends = g.choice.backends().map_err(CliError::plain)?;
    let mut adapters = enumerate(backends);
    if let Some(sub) = &g.choice.adapter {
        let sub = sub.to_ascii_lowercase();
        adapters.retain(|ad| ad.get_info().name.to_ascii_lowercase().contains(&sub));
    }
    let options = SuiteOptions { full: a.full };
    // wgpu's default error handler panics; the suite catches that per case. Keep those panics from
    // printing the CLI's `error: internal:` line (the failure is reported in the matrix instead).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut results: Vec<AdapterResult> = Vec::new();
    for adapter in adapters {
        let info = adapter.get_info();
        let label = format!("{} ({})", info.name, bitsparse::host::context::backend_name(info.backend));
        let bar = if a.no_progress {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b.set_prefix(label.clone());
            b
        };
        let r = conformance::run_adapter(adapter, &options, &mut |done, total, case| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if let Some(c) = case {
                bar.set_message(c.name());
            }
        });
        bar.finish_and_clear();
        if !a.json {
            eprintln!("{label}: {} ({} cases, {:.1} s)", r.status.name(), r.cases, r.seconds);
        }
        results.push(r);
    }
    std::panic::set_hook(hook);

    if a.json {
        print_json(&serde_json::json!({
            "adapters": results.iter().map(to_json).collect::<Vec<_>>(),
            "ok": conformance::overall_ok(&results),
        }))?;
    } else {
        print_stdout(&matrix(&results))?;
    }
    if conformance::overall_ok(&results) {
        return Ok(());
    }
    let failed: Vec<String> =
        results.iter().filter(|r| r.status == Status::Fail).map(|r| format!("{} ({})", r.name, r.backend)).collect();
    Err(CliError::plain(if results.is_empty() {
        "selftest: no adapter found (is a Vulkan or GL driver installed? see README.md)".to_string()
    } else if failed.is_empty() {
        "selftest: no adapter could be opened".to_string()
    } else {
        format!("selftest failed on {}", failed.join(", "))
    }))
}

/// The human-readable matrix: one row per adapter and path, one column per dtype, then the failures.
fn matrix(results: &[AdapterResult]) -> String {
    let dtypes = bitsparse::DType::ALL;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["adapter".to_string(), "backend".into(), "path".into()];
    head.extend(dtypes.iter().map(|d| d.name().to_string()));
    head.push("status".into());
    rows.push(head);
    for r in results {
        if r.status == Status::Unavailable {
            let mut row = vec![r.name.clone(), r.backend.clone(), "-".into()];
            row.extend(dtypes.iter().map(|_| "-".to_string()));
            row.push("unavailable".into());
            rows.push(row);
            continue;
        }
        for path in &r.paths {
            let mut row = vec![r.name.clone(), r.backend.clone(), path.to_string()];
            let mut ok = true;
            for d in dtypes {
                let cell = r.matrix.iter().find(|c| c.path == *path && c.dtype == d.name());
                row.push(match cell {
                    Some(c) if c.failed == 0 => format!("ok {}/{}", c.cases, c.cases),
                    Some(c) => {
                        ok = false;
                        format!("FAIL {}/{}", c.failed, c.cases)
                    }
                    None => "-".into(),
                });
            }
            row.push(if ok { "pass" } else { "fail" }.into());
            rows.push(row);
        }
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out += line.join("  ").trim_end();
        out.push('\n');
    }
    for r in results {
        if let Some(reason) = &r.reason {
            out += &format!("{} ({}): unavailable: {reason}\n", r.name, r.backend);
        }
        for f in r.failures.iter().take(20) {
            out += &format!("{} ({}): FAILED {}: {}\n", r.name, r.backend, f.case, f.message);
        }
        if r.failures.len() > 20 {
            out += &format!(
                "{} ({}): … and {} more failures (--json lists them all)\n",
                r.name,
                r.backend,
                r.failures.len() - 20
            );
        }
    }
    let ok = conformance::overall_ok(results);
    out += &format!("selftest: {}", if ok { "PASS" } else { "FAIL" });
    out
}

/// The JSON of one adapter (docs/CONVENTIONS.md: `name`, `backend`, `status`, `cases`, `failures`, plus the
/// matrix, paths, reason and seconds).
fn to_json(r: &conformance::AdapterResult) -> serde_json::Value {
    serde_json::json!({
        "name": r.name,
        "backend": r.backend,
        "status": r.status.name(),
        "cases": r.cases,
        "failures": r.failures.iter().map(|f| serde_json::json!({
            "case": f.case, "path": f.path, "dtype": f.dtype, "message": f.message,
        })).collect::<Vec<_>>(),
        "paths": r.paths,
        "matrix": r.matrix.iter().map(|c| serde_json::json!({
            "path": c.path, "dtype": c.dtype, "cases": c.cases, "failed": c.failed,
        })).collect::<Vec<_>>(),
        "reason": r.reason,
        "seconds": r.seconds,
    })
}
