//! `bitsparse compress` of whole `.safetensors` / `.npy` dump files: every activation tensor compressed
//! on the GPU into one container, the header and every other tensor stored verbatim, so `decompress`
//! (which needs nothing new: it concatenates the decoded records) restores the file byte-exactly.
//!
//! Recognising a dump file: by extension (`.safetensors`, `.npy`), else by content (the npy magic; a
//! plausible safetensors header only when `--dtype` is absent, since `--dtype` says "raw elements").
//! Only the first bytes and the length are read to decide, so a raw file is still read once, by the
//! raw path in `codec_cmds.rs`.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use bitsparse::files::{self, pack, Kind, ParsedFile};
use bitsparse::{DType, Options};

use super::engine::Engine;
use super::output::AtomicOutput;
use super::{print_json, print_stdout, CliError, Globals};

/// What kind of file `path` is, from its name and first bytes. An unreadable file is `Raw` (the raw path
/// then reports it).
pub fn sniff(path: &Path, dtype_given: bool) -> Kind {
    let mut head = Vec::new();
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(16).read_to_end(&mut head);
    }
    files::detect(path, &head, len, dtype_given)
}

/// The tensor name of a `.npy` or raw file: the file's stem.
pub fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Prints a clap-style usage error and exits 2 (CONVENTIONS.md: usage errors are clap's, exit 2).
pub fn usage_error(msg: &str) -> ! {
    use clap::CommandFactory;
    super::Cli::command().error(clap::error::ErrorKind::MissingRequiredArgument, msg).exit()
}

/// Compresses a dump file. Called by `compress` when [`sniff`] says the input is not raw.
#[allow(clippy::too_many_arguments)]
pub fn compress(
    g: &Globals,
    kind: Kind,
    input: &Path,
    output: &Path,
    dtype: Option<DType>,
    sign_pack: bool,
    verify: bool,
    json: bool,
) -> Result<(), CliError> {
    let bytes = std::fs::read(input).map_err(|e| CliError::file(input, format!("cannot read: {e}")))?;
    let parsed = ParsedFile::parse(&bytes, kind, dtype, &stem(input)).map_err(|e| CliError::file(input, e))?;
    let mut out = AtomicOutput::create(output).map_err(|e| CliError::file(output, format!("cannot write: {e}")))?;
    let needs_gpu = parsed.tensors.iter().any(|t| matches!(t.elem, files::Elem::Act(_)));
    let engine = if needs_gpu { Some(Engine::open(&g.choice).map_err(CliError::plain)?) } else { None };

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
    container.write_to(out.writer()).map_err(|e| CliError::file(output, format!("cannot write: {e}")))?;
    out.commit().map_err(|e| CliError::file(output, format!("cannot write: {e}")))?;

    let stored = container.encoded_len();
    let ratio = bytes.len() as f64 / stored as f64;
    if json {
        let tensors: Vec<serde_json::Value> = container
            .records
            .iter()
            .filter_map(|r| match r.kind {
                bitsparse::container::RecordKind::Tensor { dtype, elements, sign_pack } => Some(serde_json::json!({
                    "name": r.name, "dtype": dtype.name(), "elements": elements, "sign_pack": sign_pack,
                    "original_bytes": r.original_len, "stored_bytes": r.stored.len(),
                })),
                _ => None,
            })
            .collect();
        return print_json(&serde_json::json!({
            "input": input.display().to_string(),
            "output": output.display().to_string(),
            "source": kind.name(),
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
    print_stdout(&format!(
        "{} -> {}: {} file, {} tensor(s) compressed, {} stored verbatim, {} -> {stored} bytes, ratio {ratio:.3}{}{}",
        input.display(),
        output.display(),
        kind.name(),
        report.compressed.len(),
        report.verbatim.len(),
        bytes.len(),
        if verify { ", verified" } else { "" },
        engine.as_ref().map_or(String::new(), |e| format!("; {}", e.describe())),
    ))
}
