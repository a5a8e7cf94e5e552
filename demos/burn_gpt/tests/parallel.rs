//! `--devices N`: the data-parallel run through burn-train's Learner, on two devices opened from one
//! adapter (`--share-adapter`: lavapipe has one), and the typed error when more devices are asked for
//! than there are adapters.
//!
//! Plain `#[test]`s like `smoke.rs`: without a wgpu adapter they fail under `CI=true` and otherwise print
//! `SKIPPED` with the reason and return (libtest then lists them as passed: read the output).

use std::sync::OnceLock;

use serde_json::Value;

mod common;
use common::{burn_gpt, json_run, no_adapter, TINY};

/// One run of every mode on two shared-adapter devices.
fn report() -> Option<&'static Value> {
    static RUN: OnceLock<Option<Value>> = OnceLock::new();
    RUN.get_or_init(|| {
        let mut args = vec!["--devices", "2", "--share-adapter", "--steps", "3", "--warmup", "1", "--json"];
        args.extend_from_slice(TINY);
        json_run(&args)
    })
    .as_ref()
}

#[test]
fn data_parallel_two_devices_reports_throughput_and_bytes_per_device() {
    let Some(doc) = report() else { return };
    assert_eq!(doc["devices"], 2);
    assert_eq!(doc["strategy"], "multi_device_optim_main_device");
    assert_eq!(doc["adapters"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["batch_per_device"], 2);
    assert_eq!(doc["tokens_per_step"], 2 * 2 * 16);
    for mode in ["dense", "bitsparse", "ckpt_dense", "ckpt_bitsparse"] {
        let losses = doc[format!("loss_{mode}")].as_array().unwrap_or_else(|| panic!("loss_{mode} missing"));
        assert_eq!(losses.len(), 3);
        assert!(losses.iter().all(|l| l.as_f64().is_some_and(f64::is_finite)), "loss_{mode}: {losses:?}");
        let per_device = &doc["measurements"][mode]["losses_all_per_device"];
        assert_eq!(per_device.as_array().map(Vec::len), Some(3), "{mode}: {per_device}");
        assert!(per_device[0].as_array().is_some_and(|d| d.len() == 2), "{mode}: {per_device}");
        for field in ["tokens_per_s", "activation_bytes_per_token_per_device", "step_ms"] {
            let v = doc[format!("{field}_{mode}")].as_f64();
            assert!(v.is_some_and(|v| v.is_finite() && v > 0.0), "{field}_{mode} = {v:?}");
        }
    }
    let bytes = |m: &str| doc[format!("activation_bytes_per_token_per_device_{m}")].as_f64().unwrap();
    assert!(bytes("bitsparse") < bytes("dense"), "bitsparse {} ≥ dense {}", bytes("bitsparse"), bytes("dense"));
    assert!(bytes("ckpt_bitsparse") < bytes("ckpt_dense"));
    // Every BitSparse step read its status once (no overflow at the default arena).
    assert_eq!(doc["arena_overflows"], 0);
    assert_eq!(doc["status_reads"], 2 * (3 + 1) * 2, "2 BitSparse modes × 4 steps × 2 devices");
    assert!(doc["arena_used_bytes"].as_u64().is_some_and(|b| b > 0));
}

/// Two devices: burn-train's sum of the two gradients commutes exactly, so the run is deterministic and
/// the checkpointed pair stays bit-identical (every loss on every device, all final weights), as in the
/// single-device run (`smoke.rs` says why the pair without checkpointing is not held to it).
#[test]
fn data_parallel_two_devices_is_bit_identical_under_checkpointing() {
    let Some(doc) = report() else { return };
    assert_eq!(doc["reduction_deterministic"], true);
    let pairs = doc["bit_identity"].as_array().expect("bit_identity");
    let ckpt = pairs.iter().find(|p| p["mode"] == "ckpt_bitsparse").expect("the checkpointed pair");
    assert_eq!(ckpt["losses_compared"], 6);
    assert!(ckpt["first_mismatch_step"].is_null(), "ckpt_bitsparse differs from ckpt_dense: {ckpt:#}");
    assert_eq!(ckpt["final_weights_equal"], true, "{ckpt:#}");
    assert_eq!(doc["loss_ckpt_dense"], doc["loss_ckpt_bitsparse"]);
}

/// An arena far too small: every device overflows, grows and recomputes inside the Learner's step, and
/// the gradients the Learner applies are still the dense ones (checkpointed pair, bit for bit).
#[test]
fn arena_overflow_burn_data_parallel_recomputes_the_step() {
    let mut args = vec!["--devices", "2", "--share-adapter", "--steps", "2", "--warmup", "0", "--json"];
    args.extend_from_slice(&["--modes", "ckpt_dense,ckpt_bitsparse", "--arena-bytes", "4096"]);
    args.extend_from_slice(TINY);
    let out = burn_gpt(&args);
    if no_adapter(&out) {
        return;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "burn-gpt failed ({}):\n{stderr}", out.status);
    assert!(stderr.contains("arena overflow"), "no overflow was reported:\n{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert!(doc["arena_overflows"].as_u64().is_some_and(|n| n >= 2), "{}", doc["arena_overflows"]);
    let ckpt = &doc["bit_identity"][0];
    assert!(ckpt["first_mismatch_step"].is_null() && ckpt["final_weights_equal"] == true, "{ckpt:#}");
}

#[test]
fn data_parallel_more_devices_than_adapters_is_a_typed_error() {
    let mut args = vec!["--devices", "3", "--steps", "1", "--json"];
    args.extend_from_slice(TINY);
    let out = burn_gpt(&args);
    if no_adapter(&out) {
        return;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        println!("SKIPPED: this machine has at least 3 adapters");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{stderr}");
    assert!(lines[0].starts_with("error: --devices 3: only "), "{stderr}");
    assert!(lines[0].contains("--share-adapter"), "{stderr}");
}
