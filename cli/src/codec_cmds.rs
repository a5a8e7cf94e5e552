//! `bitsparse compress` and `bitsparse decompress`: raw element files to and from a container
//! (`bitsparse_files::container`), with the codec work on the GPU.
//!
//! Order of work in both commands: refuse an OUT that is IN, read the input once (`-`: stdin) and check
//! it, open the output (a temporary file for a regular OUT, so a missing output directory fails before
//! any GPU work; see `io.rs` for special files and `-`), open the adapter, code everything, write,
//! rename. Any error on the way drops the temporary file; nothing reaches a written-through OUT or stdout
//! before the whole result is ready.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bitsparse::format::entropy_bound_bits;
use bitsparse::{DType, Error, FormatVersion, Options};
use bitsparse_files::container::{Container, Record, RecordKind};

use super::engine::Engine;
use super::io::{self, Output};
use super::{print_json, print_summary, CliError, Globals};

/// `--dtype` values.
#[derive(Copy, Clone, Debug, clap::ValueEnum)]
pub enum DTypeArg {
    Bf16,
    F16,
    F32,
    E4m3,
    E5m2,
}

impl From<DTypeArg> for DType {
    fn from(d: DTypeArg) -> DType {
        match d {
            DTypeArg::Bf16 => DType::Bf16,
            DTypeArg::F16 => DType::F16,
            DTypeArg::F32 => DType::F32,
            DTypeArg::E4m3 => DType::E4m3,
            DTypeArg::E5m2 => DType::E5m2,
        }
    }
}

/// `compress` options.
#[derive(clap::Args, Debug)]
pub struct CompressArgs {
    /// Element type of a raw little-endian input (required for raw files). .safetensors and .npy files
    /// (recognised by extension or content) carry their dtypes; a .npy void array (ml_dtypes' bfloat16
    /// `V2`, FP8 `V1`) needs it.
    #[arg(long, value_enum)]
    dtype: Option<DTypeArg>,
    /// Store values without their sign bit (for ReLU outputs). An input value with its sign bit set is an error.
    #[arg(long)]
    sign_pack: bool,
    /// Decompress the result on the GPU and compare with the input before writing OUT.
    #[arg(long)]
    verify: bool,
    /// Tensor stream format: 2 (per-tile encodings, exponent-coded values; docs/FORMAT.md §14) or 1
    /// (mask + plain values, what bitsparse 0.1 wrote). Every version is read back.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    format_version: u8,
    /// Print one JSON document with the sizes and ratio instead of a summary line.
    #[arg(long)]
    json: bool,
    /// Raw little-endian element file, .safetensors or .npy; `-` for standard input.
    input: PathBuf,
    /// Container to write; `-` for standard output. A regular file is replaced atomically; a device, FIFO
    /// or symbolic link is written through.
    output: PathBuf,
}

impl CompressArgs {
    fn version(&self) -> FormatVersion {
        FormatVersion::from_byte(self.format_version).unwrap_or_default()
    }
}

/// `decompress` options.
#[derive(clap::Args, Debug)]
pub struct DecompressArgs {
    /// Print one JSON document instead of a summary line.
    #[arg(long)]
    json: bool,
    /// Container to read; `-` for standard input.
    input: PathBuf,
    /// File to restore; `-` for standard output. A regular file is replaced atomically; a device, FIFO
    /// or symbolic link is written through.
    output: PathBuf,
}

/// The checks every command with IN and OUT makes before reading: OUT is not IN, and `--json` (which
/// owns stdout) is not combined with OUT `-`.
fn check_paths(input: &Path, output: &Path, json: bool) {
    if json && io::is_std(output) {
        super::file_cmds::usage_error("--json prints to stdout, so OUT cannot be `-` with it");
    }
    io::check_distinct(input, output);
}

/// The library's message, with the sign-bit case phrased for a command-line user.
fn describe_error(e: &Error) -> String {
    match e {
        Error::SignBitSet { index: Some(i) } => {
            format!("--sign-pack given, but element {i} has its sign bit set (compress without --sign-pack)")
        }
        Error::SignBitSet { index: None } => {
            "--sign-pack given, but a value has its sign bit set (compress without --sign-pack)".to_string()
        }
        other => other.to_string(),
    }
}

pub fn compress(g: &Globals, a: &CompressArgs) -> Result<(), CliError> {
    check_paths(&a.input, &a.output, a.json);
    let given = a.dtype.map(DType::from);
    let data = io::read_input(&a.input)?;
    let kind = super::file_cmds::sniff(&a.input, &data, given.is_some());
    if kind != bitsparse_files::Kind::Raw {
        return super::file_cmds::compress(
            g,
            kind,
            &a.input,
            data,
            &a.output,
            given,
            a.sign_pack,
            a.verify,
            a.json,
            a.version(),
        );
    }
    let Some(dtype) = given else {
        super::file_cmds::usage_error(
            "--dtype is required for a raw element file (.safetensors and .npy files need none)",
        )
    };
    let options = Options { sign_pack: a.sign_pack };
    // Checked before opening a device: bad input should not wait for (or be masked by) the adapter.
    if data.len() as u64 % dtype.bytes() != 0 {
        let e = Error::PartialElement { bytes: data.len() as u64, elem_bytes: dtype.bytes() };
        return Err(CliError::file(&a.input, format!("{e} (--dtype {dtype})")));
    }
    let mut out = Output::open(&a.output)?;
    let engine = Engine::open(&g.choice).map_err(CliError::plain)?.with_version(a.version());

    let t0 = Instant::now();
    let container = Container::raw(&data, dtype, options, |d, t, o| engine.compress(d, t, o))
        .map_err(|e| CliError::file(&a.input, describe_error(&e)))?;
    let secs = t0.elapsed().as_secs_f64();
    if a.verify {
        let back = container
            .decode(|s| engine.decompress(s))
            .map_err(|e| CliError::file(&a.input, format!("verification failed: {}", describe_error(&e))))?;
        if back != data {
            return Err(CliError::file(&a.input, "verification failed: the decompressed bytes differ from the input"));
        }
    }
    let to_stdout = out.is_stdout();
    container.write_to(&mut out.writer()).map_err(|e| CliError::file(&a.output, format!("cannot write: {e}")))?;
    out.commit().map_err(|e| CliError::file(&a.output, format!("cannot write: {e}")))?;

    let n = data.len() as u64 / dtype.bytes();
    let stored = container.records[0].stored.len() as u64;
    let nonzeros = bitsparse::cpu::count_nonzeros(&data, dtype);
    let density = (n > 0).then(|| nonzeros as f64 / n as f64);
    let ratio = data.len() as f64 / stored as f64;
    // docs/CONVENTIONS.md: bound bits ÷ achieved bits, achieved = the whole tensor stream (not the container).
    let bound_fraction = density.map(|d| entropy_bound_bits(d, dtype, a.sign_pack) * n as f64 / (stored as f64 * 8.0));
    if a.json {
        return print_json(&serde_json::json!({
            "input": a.input.display().to_string(),
            "output": a.output.display().to_string(),
            "dtype": dtype.name(),
            "sign_pack": a.sign_pack,
            "elements": n,
            "nonzeros": nonzeros,
            "density": density,
            "original_bytes": data.len(),
            "stored_bytes": stored,
            "container_bytes": container.encoded_len(),
            "ratio": ratio,
            "bound_fraction": bound_fraction,
            "format_version": a.format_version,
            "verified": a.verify,
            "seconds": secs,
            "adapter": engine.describe_json(),
        }));
    }
    let bound = bound_fraction.map_or(String::new(), |f| format!(", {:.1}% of the entropy bound", f * 100.0));
    let dens = density.map_or("no elements".to_string(), |d| format!("density {d:.4}"));
    print_summary(
        to_stdout,
        &format!(
            "{} -> {}: {n} {dtype} elements ({dens}), {} -> {stored} bytes, ratio {ratio:.3}{bound}{}; {}",
            a.input.display(),
            a.output.display(),
            data.len(),
            if a.verify { ", verified" } else { "" },
            engine.describe(),
        ),
    )
}

pub fn decompress(g: &Globals, a: &DecompressArgs) -> Result<(), CliError> {
    check_paths(&a.input, &a.output, a.json);
    let bytes = io::read_input(&a.input)?;
    let container = Container::parse(&bytes).map_err(|e| CliError::file(&a.input, e))?;
    drop(bytes);
    let mut out = Output::open(&a.output)?;
    let needs_gpu = container.records.iter().any(|r| matches!(r.kind, RecordKind::Tensor { .. }));
    let engine = if needs_gpu { Some(Engine::open(&g.choice).map_err(CliError::plain)?) } else { None };

    // Every record is decoded before the first byte is written: a bad record late in the container must
    // not leave a partial file on a written-through OUT or on stdout.
    let t0 = Instant::now();
    let mut decoded = Vec::with_capacity(container.records.len());
    for (i, r) in container.records.iter().enumerate() {
        decoded.push(
            r.decode(|s| match &engine {
                Some(e) => e.decompress(s),
                None => Err(Error::InvalidArgument("internal: tensor record without a device".into())),
            })
            .map_err(|e| CliError::tensor(&a.input, &record_label(i, r), e))?,
        );
    }
    let secs = t0.elapsed().as_secs_f64();
    let to_stdout = out.is_stdout();
    for d in &decoded {
        out.writer().write_all(d).map_err(|e| CliError::file(&a.output, format!("cannot write: {e}")))?;
    }
    out.commit().map_err(|e| CliError::file(&a.output, format!("cannot write: {e}")))?;

    let tensors = container.records.iter().filter(|r| matches!(r.kind, RecordKind::Tensor { .. })).count();
    if a.json {
        return print_json(&serde_json::json!({
            "input": a.input.display().to_string(),
            "output": a.output.display().to_string(),
            "source": container.source.name(),
            "records": container.records.len(),
            "tensors": tensors,
            "original_bytes": container.original_len(),
            "seconds": secs,
            "adapter": engine.as_ref().map(|e| e.describe_json()),
        }));
    }
    print_summary(
        to_stdout,
        &format!(
            "{} -> {}: {} bytes restored from {} record(s), {tensors} tensor(s){}",
            a.input.display(),
            a.output.display(),
            container.original_len(),
            container.records.len(),
            engine.as_ref().map_or(String::new(), |e| format!("; {}", e.describe())),
        ),
    )
}

/// `record 0 (tensor `x`)`: the record index always, so a message locates the data in the container.
fn record_label(i: usize, r: &Record) -> String {
    format!("record {i} ({})", r.describe())
}
