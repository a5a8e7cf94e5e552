//! `bitsparse compress` of whole `.safetensors` / `.npy` dump files: every activation tensor compressed
//! on the GPU into one container, the header and every other tensor stored verbatim, so `decompress`
//! (which needs nothing new: it concatenates the decoded records) restores the file byte-exactly.
//!
//! Recognising a dump file: by extension (`.safetensors`, `.npy`), else — only when `--dtype` is absent,
//! since `--dtype` says "raw elements" — by content (the npy magic; a plausible safetensors header). The
//! content is the bytes already read: every input is read exactly once (`io::read_input`).

use std::path::Path;
use std::time::Instant;

use bitsparse::{DType, Options};
use bitsparse_files::{self as files, pack, Kind, ParsedFile};

use super::engine::Engine;
use super::io::Output;
use super::{print_json, print_summary, CliError, Globals};

/// What kind of file `bytes` (read from `path`) is, from the name and the first bytes.
pub fn sniff(path: &Path, bytes: &[u8], dtype_given: bool) -> Kind {
    files::detect(path, &bytes[..bytes.len().min(16)], bytes.len() as u64, dtype_given)
}

/// The tensor name of a `.npy` or raw file: the file's stem (`stdin` for `-`).
pub fn stem(path: &Path) -> String {
    if super::io::is_std(path) {
        return "stdin".to_string();
    }
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Prints a clap-style usage error and exits 2 (docs/CONVENTIONS.md: usage errors are clap's, exit 2).
pub fn usage_error(msg: &str) -> ! {
    use clap::CommandFactory;
    super::Cli::command().error(clap::error::ErrorKind::MissingRequiredArgument, msg).exit()
}

/// Compresses a dump file (`bytes`, read from `input`). Called by `compress` when [`sniff`] says the
/// input is not raw.
#[allow(clippy::too_many_arguments)]
pub fn compress(
    g: &Globals,
    kind: Kind,
    input: &Path,
    bytes: Vec<u8>,
    output: &Path,
    dtype: Option<DType>,
    sign_pack: bool,
    verify: bool,
    json: bool,
    version: bitsparse::FormatVersion,
) -> Result<(), CliError> {
    let parsed = ParsedFile::parse(&bytes, kind, dtype, &stem(input)).map_err(|e| CliError::file(input, e))?;
    let mut out = Output::open(output)?;
    let needs_gpu = parsed.tensors.iter().any(|t| matches!(t.elem, files::Elem::Act(_)));
    let engine =
        if needs_gpu { Some(Engine::open(&g.choice).map_err(CliError::plain)?.with_version(version)) } else { None };

    let t0 = Instant::now();
    let (container, report) = pack::to_container(&parsed, &bytes, Options { sign_pack }, |d, t, o| match &engine {
        Some(e) => e.compress(d, t, o),
        None => Err(bitsparse::Error::InvalidArgument("internal: activation tensor without a device".into())),
    })
    .map_err(|(e, _)| CliError::file(input, e))?;
    let secs = t0.elapsed().as_secs_f64();
    for (name, negatives) in &report.not_sign_packed {
        eprintln!(
            "note: {}: tensor `{name}` has {negatives} value(s) with the sign bit set: stored without sign packing",
            input.display()
        );
    }
    if verify {
        let back = container
            .decode(|s| match &engine {
                Some(e) => e.decompress(s),
                None => Err(bitsparse::Error::InvalidArgument("internal: tensor record without a device".into())),
            })
            .map_err(|e| CliError::file(input, format!("verification failed: {e}")))?;
        if back != bytes {
            return Err(CliError::file(input, "verification failed: the decompressed bytes differ from the input"));
        }
    }
    let to_stdout = out.is_stdout();
    container.write_to(&mut out.writer()).map_err(|e| CliError::file(output, format!("cannot write: {e}")))?;
    out.commit().map_err(|e| CliError::file(output, format!("cannot write: {e}")))?;

    let stored = container.encoded_len();
    let ratio = bytes.len() as f64 / stored as f64;
    if json {
        let tensors: Vec<serde_json::Value> = container
            .records
            .iter()
            .filter_map(|r| match r.kind {
                bitsparse_files::container::RecordKind::Tensor { dtype, elements, sign_pack } => {
                    Some(serde_json::json!({
                        "name": r.name, "dtype": dtype.name(), "elements": elements, "sign_pack": sign_pack,
                        "original_bytes": r.original_len, "stored_bytes": r.stored.len(),
                    }))
                }
                _ => None,
            })
            .collect();
        return print_json(&serde_json::json!({
            "input": input.display().to_string(),
            "output": output.display().to_string(),
            "source": kind.name(),
            "format_version": version.byte(),
            "tensors": tensors,
            "verbatim": report.verbatim,
            "not_sign_packed": report.not_sign_packed.iter().map(|(n, k)| serde_json::json!({"name": n, "negatives": k})).collect::<Vec<_>>(),
            "original_bytes": bytes.len(),
            "container_bytes": stored,
            "ratio": ratio,
            "verified": verify,
            "seconds": secs,
            "adapter": engine.as_ref().map(|e| e.describe_json()),
        }));
    }
    print_summary(
        to_stdout,
        &format!(
        "{} -> {}: {} file, {} tensor(s) compressed, {} stored verbatim, {} -> {stored} bytes, ratio {ratio:.3}{}{}",
        input.display(),
        output.display(),
        kind.name(),
        report.compressed.len(),
        report.verbatim.len(),
        bytes.len(),
        if verify { ", verified" } else { "" },
        engine.as_ref().map_or(String::new(), |e| format!("; {}", e.describe())),
    ),
    )
}
