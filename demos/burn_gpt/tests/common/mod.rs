//! What the `burn-gpt` binary's tests share: running it, and the visible skip when no adapter exists.

use std::process::{Command, Output};

/// Runs the `burn-gpt` binary with `args`.
pub fn burn_gpt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_burn-gpt"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()))
        .output()
        .expect("run burn-gpt")
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
