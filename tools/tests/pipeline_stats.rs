//! `pipeline_stats` on lavapipe, which has no statistics extension, so `--compile-only`: every pipeline
//! the codec can build (both paths, every width, arena, fused, both tile orders) goes through naga and
//! the driver, and `--shaders DIR` really reads the file it is given.
//!
//! On the workspace's GPU test harness (`tests/common/harness.rs`, this binary being `harness = false`):
//! without a Vulkan adapter the tests are reported as ignored, and fail under `CI=true`.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;

use common::harness::{needs_test, VULKAN};

fn main() {
    common::harness::main(vec![
        needs_test!(compile_only_builds_every_pipeline, VULKAN),
        needs_test!(shaders_dir_replaces_a_bundled_file, VULKAN),
    ])
}

/// Runs the tool on lavapipe; (exit status 0, stdout and stderr).
fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeline_stats"))
        .args(["--compile-only", "--policy", "unchecked", "--device", "llvmpipe"])
        .args(args)
        .output()
        .expect("pipeline_stats runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The line of the pipeline labelled `label` (file:entry [defines]).
fn line<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(label) && l[label.len()..].starts_with(' '))
}

fn compile_only_builds_every_pipeline() {
    let (ok, text) = run(&[]);
    assert!(ok, "pipeline_stats --compile-only failed:\n{text}");
    assert!(!text.contains("ERROR"), "{text}");
    let built = text.lines().filter(|l| l.contains("(pipeline built")).count();
    assert!(built >= 150, "only {built} pipelines built:\n{text}");
    // What the arena, the bench and the training demos run by default, and the version-2 kernels.
    for label in [
        "compress.wgsl:compress [SUBGROUP,STAGE16,UNORDERED]",
        "compress.wgsl:compress [SUBGROUP,ARENA,FUSED_FWD,STAGE16,UNORDERED]",
        "compress.wgsl:compress [BITS32,SUBGROUP,ARENA,FUSED_FWD,DIRECT,UNORDERED]",
        "decompress.wgsl:decompress [SUBGROUP,ARENA,FUSED_BWD]",
        "decompress.wgsl:decompress [BITS8,SUBGROUP]",
        "decompress_v2.wgsl:decompress_v2 [SUBGROUP]",
        "compress_v2.wgsl:compress [SUBGROUP,STAGE16]",
    ] {
        let l = line(&text, label).unwrap_or_else(|| panic!("no pipeline {label}:\n{text}"));
        assert!(l.contains("(pipeline built"), "{l}");
    }
}

fn shaders_dir_replaces_a_bundled_file() {
    let label = "decompress_v2.wgsl:decompress_v2 [SUBGROUP]";
    let filter = ["--filter", label];
    let (ok, bundled) = run(&filter);
    assert!(ok, "{bundled}");
    assert!(line(&bundled, label).expect("bundled decoder").contains("wg=128x1x1"), "{bundled}");

    let dir = std::env::temp_dir().join(format!("bitsparse-pipeline-stats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = bitsparse::shaders::raw("decompress_v2.wgsl").expect("bundled decompress_v2.wgsl");
    let file = dir.join("decompress_v2.wgsl");
    let dir_arg = dir.to_str().unwrap();

    // An edit the tool can only show by reading the file: another workgroup size.
    assert_eq!(src.matches("@workgroup_size(128)").count(), 1);
    std::fs::write(&file, src.replace("@workgroup_size(128)", "@workgroup_size(64)")).unwrap();
    let (ok, edited) = run(&[&filter[..], &["--shaders", dir_arg]].concat());
    assert!(ok, "{edited}");
    assert!(line(&edited, label).expect("edited decoder").contains("wg=64x1x1"), "{edited}");

    // A broken file is an error of that pipeline, and the tool's exit status says so.
    std::fs::write(&file, format!("{src}\nfn broken( {{\n")).unwrap();
    let (ok, broken) = run(&[&filter[..], &["--shaders", dir_arg]].concat());
    std::fs::remove_dir_all(&dir).ok();
    assert!(!ok, "a broken shader passed:\n{broken}");
    assert!(line(&broken, label).expect("broken decoder").contains("ERROR"), "{broken}");
}
