//! The benchmark report: the JSON of docs/CONVENTIONS.md, its Markdown table, and writing the files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use bitsparse::error::{Error, Result};

use super::op::Op;

/// The adapter a report was measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdapterReport {
    /// `AdapterInfo::name`.
    pub name: String,
    /// `vulkan`, `gl`, `metal`, `dx12`.
    pub backend: String,
    /// Driver name and version string.
    pub driver: String,
}

/// One measured op in one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The op.
    pub op: Op,
    /// `bf16`, `f16`, `e4m3`, `e5m2`.
    pub dtype: String,
    /// Sign packing (false for ops without a compressed side).
    pub sign_pack: bool,
    /// Nominal density of the data.
    pub density: f64,
    /// Nonzero elements ÷ elements of the data actually used.
    pub measured_density: f64,
    /// Elements.
    pub elements: u64,
    /// Timed repetitions.
    pub reps: u32,
    /// Median GPU time in milliseconds.
    pub ms: f64,
    /// Bytes that must move ÷ median time, in GB/s (1e9 bytes).
    pub gbps: f64,
    /// `gbps` ÷ the copy shader's GB/s timed in the same batch (1 for copy rows).
    pub copy_fraction: f64,
    /// Dense bytes ÷ stored bytes; null where it means nothing.
    pub ratio: Option<f64>,
    /// Entropy bound bits ÷ achieved bits; null where it means nothing.
    pub bound_fraction: Option<f64>,
    /// `"ordered"` / `"unordered"` on compress and fused-forward rows; null elsewhere (and in files
    /// written before the field existed).
    #[serde(default)]
    pub tile_order: Option<String>,
    /// Fused-backward rows: whether it also wrote the dense `a` for dW₂; null elsewhere.
    #[serde(default)]
    pub with_a: Option<bool>,
    /// Codec rows: the stream's format version; null elsewhere.
    #[serde(default)]
    pub format_version: Option<u32>,
}

/// The row's variant column: its tile order, or for a fused backward whether it also wrote `a`; a
/// format-version-2 stream says so.
fn variant(r: &Row) -> String {
    let v = match (&r.tile_order, r.with_a) {
        (Some(o), _) => o.clone(),
        (None, Some(true)) => "with a".into(),
        (None, Some(false)) => "dL/dz only".into(),
        (None, None) => "–".into(),
    };
    match (r.format_version, v.as_str()) {
        (Some(2), "–") => "format v2".into(),
        (Some(2), _) => format!("{v}, format v2"),
        _ => v,
    }
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The adapter.
    pub adapter: AdapterReport,
    /// Median GB/s of the copy-shader runs interleaved with the kernels, at the largest size measured.
    pub copy_gbps: f64,
    /// The measurements.
    pub rows: Vec<Row>,
    /// Remarks for a reader (skipped sizes, missing ops, mismatches): in the Markdown, not the JSON,
    /// whose fields docs/CONVENTIONS.md fixes.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Context for the Markdown (codec path, limits, sweep): not in the JSON either.
    #[serde(skip)]
    pub context: Vec<String>,
}

/// The files [`write_outputs`] writes.
pub const FILES: [&str; 4] = ["bench.json", "bench.md", "throughput.svg", "ratio.svg"];

impl BenchReport {
    /// The JSON document (pretty-printed).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::InvalidArgument(format!("serialising the report: {e}")))
    }

    /// The Markdown report: header, context, a table per size, notes.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let a = &self.adapter;
        let _ = writeln!(s, "# bitsparse benchmark: {} ({}, {})\n", a.name, a.backend, a.driver);
        let _ = writeln!(
            s,
            "Copy shader: **{} GB/s** (median of the copy runs interleaved with the kernels, largest size).\n",
            sig(self.copy_gbps, 4)
        );
        for c in &self.context {
            let _ = writeln!(s, "- {c}");
        }
        if !self.context.is_empty() {
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "GB/s counts the bytes that must move (compress: dense read + mask + values written; decompress: the reverse; copy: read + write). \
             `× copy` is GB/s ÷ the copy timed in the same batch; `bound` is the entropy bound ÷ achieved bits per element.\n"
        );
        let mut sizes: Vec<u64> = self.rows.iter().map(|r| r.elements).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for n in sizes.iter().rev() {
            let _ = writeln!(s, "## {} elements ({})\n", n, human(*n));
            let _ = writeln!(
                s,
                "| op | variant | dtype | sign pack | density | measured | reps | ms | GB/s | × copy | ratio | bound |"
            );
            let _ = writeln!(s, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
            let mut rows: Vec<&Row> = self.rows.iter().filter(|r| r.elements == *n).collect();
            rows.sort_by(|x, y| {
                (x.op, &x.tile_order, x.with_a, x.format_version, &x.dtype, x.sign_pack)
                    .cmp(&(y.op, &y.tile_order, y.with_a, y.format_version, &y.dtype, y.sign_pack))
                    .then(y.density.total_cmp(&x.density))
            });
            for r in rows {
                let opt = |v: Option<f64>, p: usize| v.map_or("–".to_string(), |v| format!("{v:.p$}"));
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {:.4} | {} | {} | {} | {:.3} | {} | {} |",
                    r.op,
                    variant(r),
                    r.dtype,
                    if r.sign_pack { "yes" } else { "no" },
                    r.density,
                    r.measured_density,
                    r.reps,
                    sig(r.ms, 4),
                    sig(r.gbps, 3),
                    r.copy_fraction,
                    opt(r.ratio, 3),
                    opt(r.bound_fraction, 3)
                );
            }
            s.push('\n');
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "## Notes\n");
            for n in &self.notes {
                let _ = writeln!(s, "- {n}");
            }
        }
        s
    }
}

/// `x` with `digits` significant digits (no exponent): `0.0812`, `1.23`, `4270`.
pub fn sig(x: f64, digits: i32) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let decimals = (digits - 1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// `201326592` → `192Mi`, `65536` → `64Ki` (binary prefixes: the sweep's sizes are powers of two
/// or multiples of them).
pub fn human(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{}Mi", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{}Ki", n >> 10)
    } else {
        n.to_string()
    }
}

/// A file-name-safe adapter tag: `NVIDIA H200` on Vulkan → `nvidia-h200-vulkan`.
pub fn adapter_slug(a: &AdapterReport) -> String {
    let raw = format!("{} {}", a.name, a.backend).to_ascii_lowercase();
    let mut out = String::new();
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "adapter".into()
    } else {
        out
    }
}

/// `target/bench/<adapter-slug>/` (under `CARGO_TARGET_DIR` when set).
pub fn default_out_dir(a: &AdapterReport) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target"));
    target.join("bench").join(adapter_slug(a))
}

/// Writes `text` to `path` through a temporary file beside it, renamed on success (docs/CONVENTIONS.md: a
/// failed write leaves an existing file untouched).
pub fn write_atomic(path: &Path, text: &[u8]) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

/// Writes `bench.json`, `bench.md`, `throughput.svg` and `ratio.svg` into `dir` (created if needed),
/// each file name prefixed with `prefix` (empty for the default layout; the adapter slug for files kept
/// in `benches/results/`). Returns the paths written.
pub fn write_outputs(report: &BenchReport, dir: &Path, prefix: &str) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let path = |f: &str| dir.join(if prefix.is_empty() { f.to_string() } else { format!("{prefix}-{f}") });
    let files = [
        (path(FILES[0]), report.to_json()?.into_bytes()),
        (path(FILES[1]), report.to_markdown().into_bytes()),
        (path(FILES[2]), super::plot::throughput_svg(report)?.into_bytes()),
        (path(FILES[3]), super::plot::ratio_svg(report)?.into_bytes()),
    ];
    let mut out = Vec::new();
    for (p, bytes) in files {
        write_atomic(&p, &bytes)?;
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(0.081234, 3), "0.0812");
        assert_eq!(sig(1.2345, 3), "1.23");
        assert_eq!(sig(4271.6, 3), "4272");
        assert_eq!(sig(0.0, 3), "0");
    }

    #[test]
    fn slug_is_file_safe() {
        let a = AdapterReport {
            name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            backend: "vulkan".into(),
            driver: "x".into(),
        };
        assert_eq!(adapter_slug(&a), "llvmpipe-llvm-15-0-6-256-bits-vulkan");
        let h = AdapterReport { name: "NVIDIA H200".into(), backend: "vulkan".into(), driver: "y".into() };
        assert_eq!(adapter_slug(&h), "nvidia-h200-vulkan");
    }

    #[test]
    fn json_has_the_convention_fields_and_nulls() {
        let r = BenchReport {
            adapter: AdapterReport { name: "a".into(), backend: "vulkan".into(), driver: "d".into() },
            copy_gbps: 2.0,
            rows: vec![Row {
                op: Op::Copy,
                dtype: "bf16".into(),
                sign_pack: false,
                density: 0.5,
                measured_density: 0.49,
                elements: 10,
                reps: 5,
                ms: 1.0,
                gbps: 2.0,
                copy_fraction: 1.0,
                ratio: None,
                bound_fraction: None,
                tile_order: None,
                with_a: None,
                format_version: None,
            }],
            notes: vec!["n".into()],
            context: vec![],
        };
        let v: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
        assert_eq!(v["adapter"]["backend"], "vulkan");
        assert_eq!(v["rows"][0]["op"], "copy");
        assert!(v["rows"][0]["ratio"].is_null());
        assert!(v.get("notes").is_none());
        let keys: Vec<&String> = v["rows"][0].as_object().unwrap().keys().collect();
        // CONVENTIONS.md's 12 row fields and its 3 extensions (null on a copy row).
        assert_eq!(keys.len(), 15);
        for k in ["tile_order", "with_a", "format_version"] {
            assert!(v["rows"][0][k].is_null(), "{k} on a copy row");
        }
        assert!(r.to_markdown().contains("| copy | – | bf16 |"));
    }
}
