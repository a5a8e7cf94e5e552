//! The `bitsparse` command line as a library (the binary is `src/main.rs`), so tests reach its
//! guards in-process.
//!
//! The command line: global options, the [`Command`] enum, exit codes and the one place errors are
//! printed.
//!
//! Outside contract (docs/CONVENTIONS.md): exit 0 on success; exit 1 with exactly one `error: ` line on stderr
//! naming the file (and tensor) for bad input or a runtime failure; exit 2 for usage errors (clap's own).
//! A panic anywhere is a bug, but still ends as `error: internal: ...` and exit 1, never a backtrace.
//!
//! Adding a subcommand: a module with an `Args` struct (clap `Args`) and a `run(&Globals, &Args) ->
//! Result<(), CliError>` function, one variant in [`Command`], one arm in [`run`].

mod analyze;
mod bench_cmd;
mod codec_cmds;
mod engine;
mod file_cmds;
mod info;
pub mod io;
mod selftest;

use std::path::Path;
use std::process::ExitCode;

use bitsparse::host::context::AdapterChoice;
use clap::{Parser, Subcommand, ValueEnum};

/// Lossless GPU compression of sparse ReLU / ReLU² activations (1-bit mask + compacted nonzeros).
#[derive(Parser, Debug)]
#[command(name = "bitsparse", version, about, propagate_version = true)]
pub struct Cli {
    /// Use the first adapter (in `bitsparse info` order) whose name contains SUBSTR, case-insensitively.
    /// Default: $WGPU_ADAPTER_NAME, else the system's high-performance adapter.
    #[arg(long, global = true, value_name = "SUBSTR")]
    adapter: Option<String>,
    /// Only consider adapters of this backend. Default: $WGPU_BACKEND, else all.
    #[arg(long, global = true, value_enum)]
    backend: Option<BackendArg>,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the adapters, in enumeration order, with the codec path each would use.
    Info(info::Args),
    /// Compress a raw element file, .safetensors or .npy into a bitsparse container, on the GPU.
    Compress(codec_cmds::CompressArgs),
    /// Restore the original bytes of a bitsparse container, on the GPU.
    Decompress(codec_cmds::DecompressArgs),
    /// Measure what BitSparse does with each tensor of a .safetensors / .npy / raw activation dump.
    Analyze(analyze::Args),
    /// Run the benchmark sweep (as `cargo bench`) on the chosen adapter.
    Bench(bench_cmd::Args),
    /// Run the conformance suite (GPU against the CPU reference) on every adapter found.
    Selftest(selftest::Args),
}

/// `--backend` values.
#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum BackendArg {
    Vulkan,
    Gl,
    Metal,
    Dx12,
}

impl BackendArg {
    fn name(self) -> &'static str {
        match self {
            BackendArg::Vulkan => "vulkan",
            BackendArg::Gl => "gl",
            BackendArg::Metal => "metal",
            BackendArg::Dx12 => "dx12",
        }
    }
}

/// Options every subcommand sees.
#[derive(Clone, Debug)]
pub struct Globals {
    /// The adapter choice, environment applied.
    pub choice: AdapterChoice,
}

/// A failure, ready to print as `error: {0}`. Built with [`CliError::file`] / [`CliError::tensor`] so that
/// the message names what it concerns.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    /// A failure concerning no particular file (adapter selection, internal).
    pub fn plain(e: impl std::fmt::Display) -> CliError {
        CliError(e.to_string())
    }

    /// A failure concerning `path`.
    pub fn file(path: &Path, e: impl std::fmt::Display) -> CliError {
        CliError(format!("{}: {e}", path.display()))
    }

    /// A failure concerning tensor `what` (e.g. "tensor `x`") of `path`.
    pub fn tensor(path: &Path, what: &str, e: impl std::fmt::Display) -> CliError {
        CliError(format!("{}: {what}: {e}", path.display()))
    }
}

/// Runs the CLI and returns the exit code.
pub fn main() -> ExitCode {
    quiet_driver_environment();
    install_panic_hook();
    io::install_signal_cleanup();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // Usage errors exit 2, --help / --version exit 0, as clap decides; clap prints them itself.
        Err(e) => e.exit(),
    };
    ExitCode::from(run_guarded(move || run(&cli)))
}

/// Runs one command body and turns its outcome into the exit status: 0; 1 with one `error:` line for
/// a [`CliError`]; 1 for a panic (a bug), whose `error: internal:` line the hook of [`main`] prints —
/// unwinding has dropped the output guards, so no temporary file is left. Public so tests can drive a
/// panic through it in-process (the shipped binary has no test hook).
pub fn run_guarded(body: impl FnOnce() -> Result<(), CliError>) -> u8 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("error: {}", one_line(&e.0));
            1
        }
        Err(_) => 1,
    }
}

fn run(cli: &Cli) -> Result<(), CliError> {
    let g = Globals {
        choice: AdapterChoice { adapter: cli.adapter.clone(), backend: cli.backend.map(|b| b.name().to_string()) }
            .with_env(),
    };
    match &cli.command {
        Command::Info(a) => info::run(&g, a),
        Command::Compress(a) => codec_cmds::compress(&g, a),
        Command::Decompress(a) => codec_cmds::decompress(&g, a),
        Command::Analyze(a) => analyze::run(&g, a),
        Command::Bench(a) => bench_cmd::run(&g, a),
        Command::Selftest(a) => selftest::run(&g, a),
    }
}

/// Mesa's drivers print their own `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` on
/// stderr when that variable is unset (a container, `env -i`, a cron job), which broke the contract of
/// exactly one `error:` line on failure and none on success. Headless compute needs no runtime directory,
/// so an unset one is pointed at the temporary directory before any thread or driver starts.
fn quiet_driver_environment() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // Single-threaded here: nothing else reads the environment yet.
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
}

/// The last resort: a panic (a bug) prints one `error: internal:` line instead of a backtrace. The
/// process then unwinds to [`main`], which exits 1, so output guards still remove their temporary files.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| eprintln!("{}", panic_line(info))));
}

/// The one line a panic prints: `error: internal: MESSAGE at FILE:LINE`, the message on one line.
pub fn panic_line(info: &std::panic::PanicHookInfo<'_>) -> String {
    let msg = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string());
    let loc = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
    format!("error: internal: {}{loc}", one_line(&msg))
}

/// Messages from lower layers (wgpu validation errors) can span lines; the contract is one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Prints `value` as the one JSON document on stdout.
pub fn print_json(value: &serde_json::Value) -> Result<(), CliError> {
    let s = serde_json::to_string_pretty(value).map_err(|e| CliError::plain(format!("internal: JSON: {e}")))?;
    print_stdout(&s)
}

/// Prints a command's summary line: on stdout, or on stderr when stdout carries the command's output
/// (OUT `-`), so a pipeline receives only the data.
pub fn print_summary(output_is_stdout: bool, text: &str) -> Result<(), CliError> {
    if output_is_stdout {
        eprintln!("{text}");
        Ok(())
    } else {
        print_stdout(text)
    }
}

/// Writes `text` and a newline to stdout. Unlike `println!`, a closed stdout (`bitsparse info | head -1`)
/// is an error line, not a panic.
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.write_all(b"\n"))
        .and_then(|_| out.flush())
        .map_err(|e| CliError::plain(format!("writing to stdout: {e}")))
}
