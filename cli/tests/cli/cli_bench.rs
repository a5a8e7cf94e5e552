//! `bitsparse bench` from the outside: the quick sweep on lavapipe prints the bench JSON of
//! docs/CONVENTIONS.md as the only thing on stdout, writes its four files under `--out`, and an unusable
//! `--out` fails before any benchmarking with one `error: ` line.

use std::process::Output;

use crate::common;
use crate::common::harness::{needs_test, Test, VULKAN};

pub fn tests() -> Vec<Test> {
    vec![needs_test!(bench_quick_json_and_outputs, VULKAN)]
}

fn run(args: &[&str]) -> Output {
    let mut c = common::cli::command();
    for (k, _) in std::env::vars() {
        if k.starts_with("BITSPARSE_BENCH_") {
            c.env_remove(k);
        }
    }
    c.args(args).output().expect("spawn bitsparse")
}

fn bench_quick_json_and_outputs() {
    let d = std::env::temp_dir().join(format!("bitsparse-cli-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let o = run(&["--backend", "vulkan", "bench", "--quick", "--json", "--out", d.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is exactly one JSON document");
    assert_eq!(v["adapter"]["backend"], "vulkan");
    assert!(v["copy_gbps"].as_f64().unwrap() > 0.0);
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["op"] == "compress") && rows.iter().any(|r| r["op"] == "decompress"));
    for f in ["bench.json", "bench.md", "throughput.svg", "ratio.svg"] {
        assert!(d.join(f).is_file(), "{f} not written");
        assert!(err.contains(f), "stderr does not say {f} was written");
    }
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("bench.json")).unwrap()).unwrap();
    assert_eq!(kept["rows"].as_array().unwrap().len(), rows.len());
    // --out naming a file, not a directory: refused up front.
    let f = d.join("bench.md");
    let o = run(&["--backend", "vulkan", "bench", "--quick", "--out", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{err}");
    assert!(err.contains("bench.md"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
