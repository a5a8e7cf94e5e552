//! Shared helpers of the tests that run the `bitsparse` binary from the outside (`tests/cli/`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_bitsparse");

/// A fresh directory for one test, `bitsparse-<prefix>-<pid>-<name>` under the temp dir.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bitsparse-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The binary with a clean adapter environment (the tests pass flags or set variables explicitly).
pub fn command() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("WGPU_ADAPTER_NAME").env_remove("WGPU_BACKEND");
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        c.env("XDG_RUNTIME_DIR", "/tmp");
    }
    c
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn assert_ok(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(0), "{what}: expected success, stderr:\n{}", stderr(o));
}

/// Exit 1, exactly one `error: ` line mentioning every string of `mentions`, no panic text.
pub fn assert_error(o: &Output, mentions: &[&str], what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: expected exit 1, stderr:\n{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(lines.len(), 1, "{what}: expected one `error: ` line, stderr:\n{err}");
    for m in mentions {
        assert!(lines[0].contains(m), "{what}: error line does not mention `{m}`: {}", lines[0]);
    }
    assert!(!err.contains("panicked"), "{what}: panic text on stderr:\n{err}");
}

/// [`assert_error`], and also no `internal` error text and nothing on stdout.
pub fn assert_error_quiet(o: &Output, mentions: &[&str], what: &str) {
    assert_error(o, mentions, what);
    assert!(!stderr(o).contains("internal"), "{what}: internal error on stderr:\n{}", stderr(o));
    assert!(o.stdout.is_empty(), "{what}: stdout not empty on error");
}

/// Success, and stdout is one JSON document.
pub fn json(o: &Output, what: &str) -> Value {
    assert_ok(o, what);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{what}: stdout is not one JSON document: {e}"))
}
