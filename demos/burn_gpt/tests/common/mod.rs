//! What the `burn-gpt` binary's tests share: running it, and the visible skip when no adapter exists.

use std::process::{Command, Output};

use serde_json::Value;

/// The model size of the tests' runs.
pub const TINY: &[&str] = &["--d-model", "32", "--n-layer", "2", "--n-head", "2", "--context", "16", "--batch", "2"];

/// Runs the `burn-gpt` binary with `args`, in a cubecl environment of its own ([`environment`]).
pub fn burn_gpt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_burn-gpt"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()))
        .env("CUBECL_ENVIRONMENT", environment(args))
        .output()
        .expect("run burn-gpt")
}

/// The cubecl environment of a run with `args` (its persistent caches live in `target/environment/
/// <name>.db`): one per argument list, so runs of parallel tests never share a database file. They
/// did share the default one, and a fresh clone's `.ci/run` failed once (thirty-first session) with
/// two runs writing it at once: "internal: page must be loaded in add_dirty() so its contents can be
/// subjournaled" from turso 0.8.3, the database cubecl 0.11.3 keeps its caches in; a rerun passed.
fn environment(args: &[&str]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut h);
    format!("burn-gpt-test-{:016x}", h.finish())
}

/// `true` when the run could not find an adapter at all (and `CI` is not `true`): the caller skips.
pub fn no_adapter(out: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("no wgpu adapter") {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true and no wgpu adapter (install mesa-vulkan-drivers): {stderr}");
        }
        println!("SKIPPED: no wgpu adapter ({})", stderr.trim());
        return true;
    }
    false
}

/// The JSON document a `--json` run with `args` prints, or `None` when there is no adapter (and `CI` is
/// not `true`); any other failure fails the test.
pub fn json_run(args: &[&str]) -> Option<Value> {
    let out = burn_gpt(args);
    if no_adapter(&out) {
        return None;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "burn-gpt {args:?} failed ({}):\n{stderr}", out.status);
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    Some(
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{stdout}\nstderr:\n{stderr}")),
    )
}
