//! `bitsparse analyze FILE`: what BitSparse would do with each tensor of an activation dump, measured by
//! really compressing it on the GPU (with and without sign packing) rather than estimated.
//!
//! Per tensor: shape, elements, nonzeros, density, values with the sign bit set (sign packing is possible
//! only without any), compressed bytes of each form, ratio (dense bytes ÷ stored bytes), the entropy
//! bound of docs/CONVENTIONS.md for each form and the share of it reached (`bound_fraction`, for the smallest
//! form the tensor allows: sign-packed where possible), and a histogram of per-tile densities. F32 tensors
//! are analysed as F32 (b = 32 in the bound), as `compress` stores them; other dtypes are listed as skipped.
//!
//! Ratios and bound fractions are `null` for a tensor without elements (nothing to compress, only the
//! stream header), as density is.

use std::path::{Path, PathBuf};

use bitsparse::cpu::v2::{stream_stats, StreamStats};
use bitsparse::format::entropy_bound_bits;
use bitsparse::{DType, Options};
use bitsparse_files::{self as files, stats, Elem, ParsedFile, Tensor};
use serde_json::{json, Value};

use super::codec_cmds::DTypeArg;
use super::engine::Engine;
use super::file_cmds::{sniff, stem};
use super::{print_json, print_stdout, CliError, Globals};

/// `analyze` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print one JSON document `{"file", "format", "adapter", "tensors": [...], "skipped": [...]}`.
    #[arg(long)]
    json: bool,
    /// Element type of a raw file, or of a .npy void array (ml_dtypes' bfloat16 is `V2`, FP8 `V1`).
    #[arg(long, value_enum)]
    dtype: Option<DTypeArg>,
    /// A .safetensors, .npy or raw element file; `-` for standard input.
    file: PathBuf,
}

/// The measurements of one analysed tensor (`*_bytes`: format version 2, what `compress` writes).
struct Analysis {
    dtype: DType,
    stats: stats::TensorStats,
    dense_bytes: u64,
    plain_bytes: u64,
    packed_bytes: Option<u64>,
    plain_bytes_v1: u64,
    packed_bytes_v1: Option<u64>,
    /// Where the bits of the smallest version-2 form go.
    v2: StreamStats,
    /// Empirical entropy of the nonzero values (bits per value, from their bit patterns' histogram).
    value_entropy: f64,
}

/// The empirical entropy of the nonzero elements' bit patterns, bits per nonzero.
fn value_entropy(data: &[u8], dtype: DType) -> f64 {
    let eb = dtype.bytes() as usize;
    let mut hist: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for c in data.chunks_exact(eb) {
        let v = c.iter().rev().fold(0u32, |a, &b| a << 8 | b as u32);
        if v != 0 {
            *hist.entry(v).or_default() += 1;
        }
    }
    let total: u64 = hist.values().sum();
    hist.values().map(|&c| c as f64 / total as f64).map(|p| -p * p.log2()).sum()
}

impl Analysis {
    fn n(&self) -> u64 {
        self.stats.elements
    }
    fn ratio(&self, stored: u64) -> Option<f64> {
        (self.n() > 0).then(|| self.dense_bytes as f64 / stored as f64)
    }
    fn bound_bits(&self, sign_pack: bool) -> Option<f64> {
        self.stats.density().map(|d| entropy_bound_bits(d, self.dtype, sign_pack))
    }
    /// Bound bits ÷ achieved bits of one form.
    fn fraction(&self, sign_pack: bool, stored: u64) -> Option<f64> {
        self.bound_bits(sign_pack).map(|b| b * self.n() as f64 / (stored as f64 * 8.0))
    }
    /// Empirical entropy of the values ÷ the bits the smallest version-2 form spends on them.
    fn value_entropy_fraction(&self) -> Option<f64> {
        (self.v2.value_bits > 0).then(|| self.value_entropy * self.stats.nonzeros as f64 / self.v2.value_bits as f64)
    }
    fn best_fraction(&self) -> Option<f64> {
        match self.packed_bytes {
            Some(p) => self.fraction(true, p),
            None => self.fraction(false, self.plain_bytes),
        }
    }
}

fn analyse(engine: &Engine, path: &Path, t: &Tensor, data: &[u8]) -> Result<Option<Analysis>, CliError> {
    let dtype = match &t.elem {
        Elem::Act(d) => *d,
        Elem::Other(_) => return Ok(None),
    };
    let st = stats::stats(data, dtype);
    let what = format!("tensor `{}`", t.name);
    let err = |e| CliError::tensor(path, &what, e);
    let plain = engine.compress_both(data, dtype, Options::default()).map_err(err)?;
    let packed = if st.negatives == 0 {
        Some(engine.compress_both(data, dtype, Options::SIGN_PACK).map_err(err)?)
    } else {
        None
    };
    let best = packed.as_ref().unwrap_or(&plain);
    let v2 = stream_stats(&best.1).map_err(err)?;
    Ok(Some(Analysis {
        dtype,
        stats: st,
        dense_bytes: data.len() as u64,
        plain_bytes: plain.1.len() as u64,
        packed_bytes: packed.as_ref().map(|p| p.1.len() as u64),
        plain_bytes_v1: plain.0.len() as u64,
        packed_bytes_v1: packed.as_ref().map(|p| p.0.len() as u64),
        v2,
        value_entropy: value_entropy(data, dtype),
    }))
}

pub fn run(g: &Globals, a: &Args) -> Result<(), CliError> {
    let path = &a.file;
    let dtype = a.dtype.map(DType::from);
    let bytes = super::io::read_input(path)?;
    let kind = sniff(path, &bytes, dtype.is_some());
    if kind == files::Kind::Raw && dtype.is_none() {
        return Err(CliError::file(path, "not a .safetensors or .npy file: a raw element file needs --dtype"));
    }
    let parsed = ParsedFile::parse(&bytes, kind, dtype, &stem(path)).map_err(|e| CliError::file(path, e))?;
    let needs_gpu = parsed.tensors.iter().any(|t| !matches!(t.elem, Elem::Other(_)));
    let engine = if needs_gpu { Some(Engine::open(&g.choice).map_err(CliError::plain)?) } else { None };

    let mut done: Vec<(&Tensor, Analysis)> = Vec::new();
    let mut skipped: Vec<(&Tensor, String)> = Vec::new();
    for t in &parsed.tensors {
        let data = &bytes[t.range.clone()];
        match (&t.elem, &engine) {
            (Elem::Other(why), _) => skipped.push((t, why.clone())),
            (_, Some(e)) => match analyse(e, path, t, data)? {
                Some(an) => done.push((t, an)),
                None => skipped.push((t, "not analysed".into())),
            },
            (_, None) => return Err(CliError::plain("internal: activation tensor without a device")),
        }
    }

    if a.json {
        return print_json(&json!({
            "file": path.display().to_string(),
            "format": kind.name(),
            "adapter": engine.as_ref().map(|e| e.describe_json()),
            "tensors": done.iter().map(|(t, an)| tensor_json(t, an)).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|(t, why)| json!({
                "name": t.name, "dtype": t.dtype_name, "shape": t.shape, "elements": t.elements,
                "bytes": t.range.len(), "reason": why,
            })).collect::<Vec<_>>(),
        }));
    }
    print_stdout(&table(path, kind, engine.as_ref(), &done, &skipped))
}

fn tensor_json(t: &Tensor, an: &Analysis) -> Value {
    json!({
        "name": t.name,
        "dtype": t.dtype_name,
        "analysed_as": an.dtype.name(),
        "shape": t.shape,
        "elements": an.n(),
        "nonzeros": an.stats.nonzeros,
        "density": an.stats.density(),
        "negatives": an.stats.negatives,
        "sign_pack_possible": an.packed_bytes.is_some(),
        "dense_bytes": an.dense_bytes,
        "compressed_bytes": an.plain_bytes,
        "compressed_bytes_sign_pack": an.packed_bytes,
        "ratio": an.ratio(an.plain_bytes),
        "ratio_sign_pack": an.packed_bytes.and_then(|p| an.ratio(p)),
        "bound_bits_per_element": an.bound_bits(false),
        "bound_bits_per_element_sign_pack": an.bound_bits(true),
        "achieved_bits_per_element": (an.n() > 0).then(|| an.plain_bytes as f64 * 8.0 / an.n() as f64),
        "achieved_bits_per_element_sign_pack": an.packed_bytes.filter(|_| an.n() > 0).map(|p| p as f64 * 8.0 / an.n() as f64),
        "bound_fraction_plain": an.fraction(false, an.plain_bytes),
        "bound_fraction_sign_pack": an.packed_bytes.and_then(|p| an.fraction(true, p)),
        "bound_fraction": an.best_fraction(),
        "format_version": 2,
        "compressed_bytes_v1": an.plain_bytes_v1,
        "compressed_bytes_v1_sign_pack": an.packed_bytes_v1,
        "bound_fraction_v1": an.packed_bytes_v1.map_or_else(|| an.fraction(false, an.plain_bytes_v1), |p| an.fraction(true, p)),
        "tile_encodings": an.v2.named_encodings().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "position_bits": an.v2.position_bits,
        "value_bits": an.v2.value_bits,
        "directory_bits": an.v2.directory_bits,
        "padding_bits": an.v2.padding_bits,
        "value_entropy_bits_per_value": (an.stats.nonzeros > 0).then_some(an.value_entropy),
        "value_entropy_fraction": an.value_entropy_fraction(),
        "tiles": an.stats.tiles,
        "tile_density_histogram": {
            "bins": (0..stats::HIST_BINS).map(|i| format!("{:.1}-{:.1}", i as f64 / 10.0, (i + 1) as f64 / 10.0)).collect::<Vec<_>>(),
            "counts": an.stats.tile_histogram,
        },
    })
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("-".to_string(), f)
}

fn table(
    path: &Path,
    kind: files::Kind,
    engine: Option<&Engine>,
    done: &[(&Tensor, Analysis)],
    skipped: &[(&Tensor, String)],
) -> String {
    let mut out = format!(
        "{}: {} file, {} tensor(s) analysed, {} skipped\n",
        path.display(),
        kind.name(),
        done.len(),
        skipped.len()
    );
    if let Some(e) = engine {
        out += &format!("adapter: {}\n", e.describe());
    }
    out.push('\n');
    let mut rows = vec![[
        "tensor", "dtype", "shape", "elements", "density", "neg", "bytes", "ratio", "bound%", "bytes±", "ratio±",
        "bound%±",
    ]
    .map(String::from)
    .to_vec()];
    for (t, an) in done {
        let dtype = t.dtype_name.clone();
        rows.push(vec![
            t.name.clone(),
            dtype,
            files::shape_string(&t.shape),
            an.n().to_string(),
            opt(an.stats.density(), |d| format!("{:.4}", d)),
            an.stats.negatives.to_string(),
            an.plain_bytes.to_string(),
            opt(an.ratio(an.plain_bytes), |r| format!("{r:.3}")),
            opt(an.fraction(false, an.plain_bytes), |f| format!("{:.1}", f * 100.0)),
            an.packed_bytes.map_or("-".into(), |p| p.to_string()),
            opt(an.packed_bytes.and_then(|p| an.ratio(p)), |r| format!("{r:.3}")),
            opt(an.packed_bytes.and_then(|p| an.fraction(true, p)), |f| format!("{:.1}", f * 100.0)),
        ]);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for row in &rows {
        // Names and dtypes left-aligned, numbers right-aligned.
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                let pad = w.saturating_sub(c.chars().count());
                if i < 3 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    if !done.is_empty() {
        out += "\n(± = sign-packed, possible only when no value has its sign bit set; neg = such values;\n \
                ratio = dense bytes ÷ stored bytes; bound% = entropy bound H(ρ)+(b−s)·ρ ÷ achieved bits)\n";
        out += "\ntiles per density bin (0-10%, 10-20%, …, 90-100%):\n";
        let name_w = done.iter().map(|(t, _)| t.name.chars().count()).max().unwrap_or(0);
        for (t, an) in done {
            let counts: Vec<String> = an.stats.tile_histogram.iter().map(|c| format!("{c:>5}")).collect();
            out += &format!("  {:<name_w$}  {}  ({} tiles)\n", t.name, counts.join(""), an.stats.tiles);
        }
    }
    if !done.is_empty() {
        out += "\nformat version 2, smallest form: tiles mask/positions/empty/raw, bits per element on positions + values, values ÷ their entropy:\n";
        let name_w = done.iter().map(|(t, _)| t.name.chars().count()).max().unwrap_or(0);
        for (t, an) in done {
            let e = an.v2.tile_encodings;
            let per = |b: u64| if an.n() > 0 { b as f64 / an.n() as f64 } else { 0.0 };
            out += &format!(
                "  {:<name_w$}  {}/{}/{}/{}  {:.3} + {:.3}  {}  (version 1: {} bytes)\n",
                t.name,
                e[0],
                e[1],
                e[2],
                e[3],
                per(an.v2.position_bits),
                per(an.v2.value_bits),
                opt(an.value_entropy_fraction(), |f| format!("{:.1}%", f * 100.0)),
                an.packed_bytes_v1.unwrap_or(an.plain_bytes_v1),
            );
        }
    }
    if !skipped.is_empty() {
        out += "\nskipped:\n";
        for (t, why) in skipped {
            out += &format!(
                "  {} ({} {}, {} bytes): {why}\n",
                t.name,
                t.dtype_name,
                files::shape_string(&t.shape),
                t.range.len()
            );
        }
    }
    out.trim_end().to_string()
}
