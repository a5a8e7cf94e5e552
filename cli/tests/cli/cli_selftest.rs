//! `bitsparse selftest` and the conformance suite behind it (`bitsparse::conformance`): on lavapipe every
//! case passes on both paths, on llvmpipe GL (`gl_*`) on the portable path; the JSON and exit status follow
//! docs/CONVENTIONS.md; a case whose expectation is not met is reported as a failure (the suite can fail).

use std::process::Output;

use bitsparse::conformance::{self, Case, Data, Status, SuiteOptions, Variant};
use bitsparse::host::context::GpuContext;
use bitsparse::{CodecPath, DType};
use serde_json::Value;

use crate::common;
use crate::common::cli::stderr;
use crate::common::harness::{cpu_test, gl_test, needs_test, vulkan_test, Test, VULKAN};

pub fn tests() -> Vec<Test> {
    vec![
        needs_test!(selftest_json_on_lavapipe_passes, VULKAN),
        needs_test!(selftest_human_matrix, VULKAN),
        cpu_test!(selftest_without_adapters_fails),
        gl_test!(gl_selftest_portable_path_passes),
        vulkan_test!(a_failing_case_is_reported),
    ]
}

fn run(args: &[&str]) -> Output {
    common::cli::command().args(args).output().expect("spawn bitsparse")
}

fn selftest_json_on_lavapipe_passes() {
    let o = run(&["selftest", "--json", "--backend", "vulkan"]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(v["ok"], true);
    let adapters = v["adapters"].as_array().unwrap();
    assert!(!adapters.is_empty());
    for a in adapters {
        for k in ["name", "backend", "status", "cases", "failures"] {
            assert!(a.get(k).is_some(), "adapter entry lacks `{k}`: {a}");
        }
        assert_eq!(a["backend"], "vulkan");
    }
    let lava = adapters.iter().find(|a| a["status"] == "pass").expect("a passing adapter");
    assert!(lava["failures"].as_array().unwrap().is_empty());
    // Both paths, every dtype, and the case count adds up.
    assert_eq!(lava["paths"], serde_json::json!(["subgroup", "portable"]));
    let matrix = lava["matrix"].as_array().unwrap();
    assert_eq!(matrix.len(), 2 * bitsparse::DType::ALL.len(), "{lava}");
    let total: u64 = matrix.iter().map(|c| c["cases"].as_u64().unwrap()).sum();
    assert_eq!(total, lava["cases"].as_u64().unwrap());
    assert!(matrix.iter().all(|c| c["failed"] == 0));
    let dtypes = bitsparse::DType::ALL.len();
    assert!(total >= (2 * dtypes * 2 * (conformance::LENGTHS.len() + conformance::DENSITIES.len())) as u64);
}

fn selftest_human_matrix() {
    let o = run(&["--backend", "vulkan", "selftest", "--no-progress"]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for w in ["adapter", "bf16", "e5m2", "subgroup", "portable", "pass", "selftest: PASS"] {
        assert!(text.contains(w), "matrix lacks `{w}`:\n{text}");
    }
}

fn selftest_without_adapters_fails() {
    let o = run(&["selftest", "--json", "--adapter", "no-such-adapter-anywhere"]);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is still one JSON document");
    assert_eq!(v["adapters"], serde_json::json!([]));
    assert_eq!(v["ok"], false);
    let err = stderr(&o);
    assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{err}");
    assert!(err.contains("no adapter"), "{err}");
}

fn gl_selftest_portable_path_passes(ctx: GpuContext) {
    let r = conformance::run_on(&ctx, &SuiteOptions::default(), &mut |_, _, _| {});
    assert_eq!(r.status, Status::Pass, "{:?}", r.failures);
    assert_eq!(r.paths, ["portable"]);
    assert_eq!(r.backend, "gl");
}

/// The suite reports what it checks: a case whose expectation fails is a failure with a message, not a
/// pass. (The sign-bit case with sign packing off must fail: the input compresses without error.)
fn a_failing_case_is_reported(ctx: GpuContext) {
    let codec = bitsparse::Codec::new(&ctx.device).unwrap();
    let good = Case {
        path: CodecPath::Subgroup,
        variant: Variant::Default,
        dtype: DType::F16,
        sign_pack: true,
        data: Data::SignBitError,
    };
    conformance::run_case(&ctx, &codec, &good).unwrap();
    let bad = Case { sign_pack: false, ..good.clone() };
    let e = conformance::run_case(&ctx, &codec, &bad).unwrap_err();
    assert!(e.contains("without an error"), "{e}");
    let bits = Case { data: Data::Bits { n: 5000, density: 0.3, seed: 1 }, sign_pack: false, ..good };
    conformance::run_case(&ctx, &codec, &bits).unwrap();
}
