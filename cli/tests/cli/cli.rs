//! The `bitsparse` binary from the outside: round trips, refusals, exit codes, error lines and output
//! files as docs/CONVENTIONS.md fixes them. Inputs are a few KB: every invocation opens lavapipe.

use std::path::{Path, PathBuf};
use std::process::Output;

use bitsparse::{conformance, DType};

use crate::common;
use crate::common::cli::{assert_error, assert_ok, command as cmd, s, stderr};
use crate::common::harness::{cpu_test, needs_test, Test, GL, VULKAN};

pub fn tests() -> Vec<Test> {
    vec![
        needs_test!(round_trip_every_dtype_with_and_without_sign_pack, VULKAN),
        needs_test!(round_trip_dense_special_values, VULKAN),
        needs_test!(partial_element_file_is_refused_naming_the_file, VULKAN),
        needs_test!(sign_bit_under_sign_pack_is_refused_and_outputs_untouched, VULKAN),
        needs_test!(corrupted_or_truncated_container_is_refused, VULKAN),
        cpu_test!(usage_errors_exit_2),
        needs_test!(info_json_is_one_document, VULKAN),
        needs_test!(global_flags_before_or_after_the_subcommand, VULKAN),
        needs_test!(gl_global_flags_before_or_after_the_subcommand, VULKAN, GL),
        needs_test!(gl_cli_round_trip_across_backends, VULKAN, GL),
        cpu_test!(bad_adapter_or_backend_choice_is_exit_1),
        cpu_test!(missing_input_or_output_directory_is_exit_1),
        cpu_test!(a_panic_is_one_error_line_and_leaves_no_files),
        needs_test!(compress_json_reports_the_ratio_against_the_bound, VULKAN),
    ]
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    common::cli::scratch("cli", name)
}

fn run(args: &[&str]) -> Output {
    cmd().args(args).output().expect("spawn bitsparse")
}

/// Files in `dir` (to prove no temporary file was left behind).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Deterministic test data: `n` elements of `elem_bytes` bytes, about `density` of them nonzero with
/// arbitrary bits (so NaNs, infinities, -0.0 and subnormals occur), sign bits cleared when `positive`.
fn sparse_bytes(n: usize, elem_bytes: usize, density: f64, positive: bool, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = vec![0u8; n * elem_bytes];
    for e in out.chunks_exact_mut(elem_bytes) {
        if (next() % 1_000_000) as f64 >= density * 1_000_000.0 {
            continue;
        }
        loop {
            let r = next();
            for (i, b) in e.iter_mut().enumerate() {
                *b = (r >> (8 * i)) as u8;
            }
            if positive {
                e[elem_bytes - 1] &= 0x7f;
            }
            if e.iter().any(|&b| b != 0) {
                break;
            }
        }
    }
    out
}

fn round_trip_every_dtype_with_and_without_sign_pack() {
    let d = scratch("round_trip");
    // The conformance suite's lengths (empty, one element, a word ± 1, a tile ± 1, several tiles), each
    // once, cycling through every dtype × sign mode (with one more length, enough to reach all ten).
    let combos = 2 * DType::ALL.len();
    let lengths: Vec<usize> = conformance::LENGTHS.iter().copied().chain([2 * 4096 + 5]).collect();
    assert!(lengths.len() >= combos, "fewer lengths than dtype × sign modes");
    for (k, &n) in lengths.iter().enumerate() {
        let dtype = DType::ALL[k % DType::ALL.len()];
        let sign_pack = k % combos >= DType::ALL.len();
        let (dtype, eb) = (dtype.name(), dtype.bytes() as usize);
        let data = sparse_bytes(n, eb, 0.2, sign_pack, k as u64 + 1);
        let (inp, bsp, back) = (d.join(format!("{k}.raw")), d.join(format!("{k}.bsp")), d.join(format!("{k}.back")));
        std::fs::write(&inp, &data).unwrap();
        let mut args = vec!["--backend", "vulkan", "compress", "--dtype", dtype];
        if sign_pack {
            args.push("--sign-pack");
        }
        args.extend([s(&inp), s(&bsp)]);
        let what = format!("{dtype} sign_pack={sign_pack} n={n}");
        assert_ok(&run(&args), &format!("compress {what}"));
        assert_ok(&run(&["--backend", "vulkan", "decompress", s(&bsp), s(&back)]), &format!("decompress {what}"));
        assert!(std::fs::read(&back).unwrap() == data, "{what}: round trip differs");
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn round_trip_dense_special_values() {
    let d = scratch("special");
    // Every 16-bit pattern once: NaNs, infinities, -0.0, subnormals, all survive bit-exactly.
    let data: Vec<u8> = (0..=u16::MAX).flat_map(|v| v.to_le_bytes()).collect();
    let (inp, bsp, back) = (d.join("all.raw"), d.join("all.bsp"), d.join("all.back"));
    std::fs::write(&inp, &data).unwrap();
    assert_ok(&run(&["compress", "--dtype", "f16", "--verify", s(&inp), s(&bsp)]), "compress");
    assert_ok(&run(&["decompress", s(&bsp), s(&back)]), "decompress");
    assert!(std::fs::read(&back).unwrap() == data);
    let _ = std::fs::remove_dir_all(&d);
}

fn partial_element_file_is_refused_naming_the_file() {
    let d = scratch("partial");
    let inp = d.join("odd-length.raw");
    std::fs::write(&inp, [1u8, 0, 2, 0, 3, 0, 4]).unwrap();
    let out = d.join("out.bsp");
    for dtype in ["bf16", "f16"] {
        let o = run(&["compress", "--dtype", dtype, s(&inp), s(&out)]);
        assert_error(&o, &["odd-length.raw", "7 bytes"], dtype);
        assert!(!out.exists());
    }
    // The same 7 bytes are whole FP8 elements.
    assert_ok(&run(&["compress", "--dtype", "e4m3", s(&inp), s(&out)]), "e4m3");
    assert!(out.exists());
    let _ = std::fs::remove_dir_all(&d);
}

fn sign_bit_under_sign_pack_is_refused_and_outputs_untouched() {
    let d = scratch("sign");
    for dtype in DType::ALL {
        let (dtype, eb) = (dtype.name(), dtype.bytes() as usize);
        let mut data = sparse_bytes(3000, eb, 0.3, true, 7);
        data[2000 * eb + eb - 1] |= 0x80; // element 2000 gets its sign bit
        let inp = d.join(format!("neg-{dtype}.raw"));
        std::fs::write(&inp, &data).unwrap();
        let fresh = d.join(format!("fresh-{dtype}.bsp"));
        let o = run(&["compress", "--dtype", dtype, "--sign-pack", s(&inp), s(&fresh)]);
        assert_error(&o, &[&format!("neg-{dtype}.raw"), "sign"], dtype);
        assert!(!fresh.exists(), "{dtype}: OUT created by a failed command");
        let existing = d.join(format!("existing-{dtype}.bsp"));
        std::fs::write(&existing, b"keep me").unwrap();
        let o = run(&["compress", "--dtype", dtype, "--sign-pack", s(&inp), s(&existing)]);
        assert_error(&o, &["sign"], dtype);
        assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
        // Without --sign-pack the same file is fine.
        assert_ok(&run(&["compress", "--dtype", dtype, s(&inp), s(&fresh)]), dtype);
    }
    let mut names = listing(&d);
    names.retain(|n| n.starts_with('.'));
    assert!(names.is_empty(), "temporary files left: {names:?}");
    let _ = std::fs::remove_dir_all(&d);
}

fn corrupted_or_truncated_container_is_refused() {
    let d = scratch("corrupt");
    let data = sparse_bytes(6000, 2, 0.2, false, 3);
    let (inp, good) = (d.join("in.raw"), d.join("good.bsp"));
    std::fs::write(&inp, &data).unwrap();
    assert_ok(&run(&["compress", "--dtype", "bf16", s(&inp), s(&good)]), "compress");
    let bytes = std::fs::read(&good).unwrap();
    let len = bytes.len();
    let bad = d.join("bad.bsp");
    let existing = d.join("existing.out");
    let fresh = d.join("fresh.out");
    // Magic, container header fields, header CRC, record header, stream header, mask, values, last byte.
    let flips = [0usize, 9, 22, 30, 37, 41, 60, 70, 90, 100, 150, len / 2, len - 5, len - 1];
    let mut cases: Vec<(String, Vec<u8>)> = flips
        .iter()
        .map(|&i| {
            let mut b = bytes.clone();
            b[i] ^= 0x04;
            (format!("flip at {i}"), b)
        })
        .collect();
    for cut in [0usize, 5, 39, 40, 60, 88, 120, len / 2, len - 1] {
        cases.push((format!("truncated to {cut}"), bytes[..cut].to_vec()));
    }
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"junk");
    cases.push(("trailing bytes".into(), longer));
    cases.push(("not a container".into(), data.clone()));
    for (what, b) in cases {
        std::fs::write(&bad, &b).unwrap();
        std::fs::write(&existing, b"previous").unwrap();
        let o = run(&["decompress", s(&bad), s(&fresh)]);
        assert_error(&o, &["bad.bsp"], &what);
        assert!(!fresh.exists(), "{what}: OUT created");
        let o = run(&["decompress", s(&bad), s(&existing)]);
        assert_error(&o, &["bad.bsp"], &what);
        assert_eq!(std::fs::read(&existing).unwrap(), b"previous", "{what}: existing OUT changed");
    }
    assert_eq!(listing(&d), ["bad.bsp", "existing.out", "good.bsp", "in.raw"], "stray files");
    // And the intact file still decodes: the refusals above were about the damage.
    assert_ok(&run(&["decompress", s(&good), s(&fresh)]), "intact");
    assert!(std::fs::read(&fresh).unwrap() == data);
    let _ = std::fs::remove_dir_all(&d);
}

fn usage_errors_exit_2() {
    // A raw file without --dtype: the input is read first (once), then refused as a usage error.
    let d = scratch("usage");
    let raw = d.join("a.raw");
    std::fs::write(&raw, [1u8, 0, 2, 0]).unwrap();
    let out = d.join("b.bsp");
    for args in [
        &["compress", "--bogus"][..],
        &["--no-such-flag", "info"],
        &["compress", "--dtype", "f64", "a", "b"],
        &["compress", s(&raw), s(&out)],
        &["decompress", "only-one"],
        &["--backend", "cuda", "info"],
        &["frobnicate"],
        &[],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: stderr:\n{}", stderr(&o));
    }
    assert!(!out.exists());
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&d);
}

fn info_json_is_one_document() {
    let o = run(&["info", "--json"]);
    assert_ok(&o, "info --json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let adapters = v["adapters"].as_array().expect("adapters list");
    assert!(adapters.iter().any(|a| a["backend"] == "vulkan"), "{v}");
    for (i, a) in adapters.iter().enumerate() {
        assert_eq!(a["index"], i);
        assert!(a["name"].is_string());
        let subgroups = a["subgroups"].as_bool().unwrap();
        assert_eq!(a["path"], if subgroups { "subgroup" } else { "portable" });
    }
    assert_eq!(adapters.iter().filter(|a| a["selected"] == true).count(), 1, "{v}");
    // --backend restricts the listing.
    let o = run(&["info", "--json", "--backend", "vulkan"]);
    assert_ok(&o, "info --backend vulkan");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["adapters"].as_array().unwrap().iter().all(|a| a["backend"] == "vulkan"));
    // The human table works too.
    assert_ok(&run(&["info"]), "info");
}

/// Compresses with `args` (global flags anywhere) and returns the adapter backend the JSON reports.
fn backend_used(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let inp = dir.join("g.raw");
    std::fs::write(&inp, sparse_bytes(100, 2, 0.5, false, 1)).unwrap();
    let out = dir.join("g.bsp");
    let mut c = cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    let all: Vec<&str> = args
        .iter()
        .map(|a| {
            if *a == "IN" {
                s(&inp)
            } else if *a == "OUT" {
                s(&out)
            } else {
                a
            }
        })
        .collect();
    let o = c.args(&all).output().unwrap();
    assert_ok(&o, &format!("{args:?} {env:?}"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    v["adapter"]["backend"].as_str().unwrap().to_string()
}

fn global_flags_before_or_after_the_subcommand() {
    let d = scratch("globals");
    let c = ["compress", "--json", "--dtype", "bf16", "IN", "OUT"];
    let before: Vec<&str> = ["--backend", "vulkan", "--adapter", "LLVMPIPE"].iter().chain(&c).copied().collect();
    let after: Vec<&str> = c.iter().chain(&["--adapter", "llvmpipe", "--backend", "vulkan"]).copied().collect();
    assert_eq!(backend_used(&d, &before, &[]), "vulkan");
    assert_eq!(backend_used(&d, &after, &[]), "vulkan");
    let _ = std::fs::remove_dir_all(&d);
}

/// The same with `--backend gl`, and `WGPU_BACKEND` honoured when the flag is absent, the flag winning
/// over it (the GL half of `global_flags_before_or_after_the_subcommand`, which ran only when GL was
/// there: now a test of its own, ignored without GL).
fn gl_global_flags_before_or_after_the_subcommand() {
    let d = scratch("gl-globals");
    let c = ["compress", "--json", "--dtype", "bf16", "IN", "OUT"];
    let gl_before: Vec<&str> = ["--backend", "gl"].iter().chain(&c).copied().collect();
    let gl_after: Vec<&str> = c.iter().chain(&["--backend", "gl"]).copied().collect();
    assert_eq!(backend_used(&d, &gl_before, &[]), "gl");
    assert_eq!(backend_used(&d, &gl_after, &[]), "gl");
    // The environment is honoured when the flag is absent, and the flag wins over it.
    assert_eq!(backend_used(&d, &c, &[("WGPU_BACKEND", "gl")]), "gl");
    let vk: Vec<&str> = c.iter().chain(&["--backend", "vulkan"]).copied().collect();
    assert_eq!(backend_used(&d, &vk, &[("WGPU_BACKEND", "gl")]), "vulkan");
    let _ = std::fs::remove_dir_all(&d);
}

fn gl_cli_round_trip_across_backends() {
    let d = scratch("gl");
    let data = sparse_bytes(5000, 1, 0.18, true, 11);
    let (inp, bsp, back) = (d.join("a.raw"), d.join("a.bsp"), d.join("a.back"));
    std::fs::write(&inp, &data).unwrap();
    // Compressed on GL (portable path), decompressed on Vulkan: the container is backend-neutral.
    assert_ok(
        &run(&["--backend", "gl", "compress", "--dtype", "e5m2", "--sign-pack", s(&inp), s(&bsp)]),
        "gl compress",
    );
    assert_ok(&run(&["--backend", "vulkan", "decompress", s(&bsp), s(&back)]), "vulkan decompress");
    assert!(std::fs::read(&back).unwrap() == data);
    let _ = std::fs::remove_dir_all(&d);
}

fn bad_adapter_or_backend_choice_is_exit_1() {
    let d = scratch("adapter");
    let inp = d.join("x.raw");
    std::fs::write(&inp, [0u8, 0, 1, 0]).unwrap();
    let out = d.join("x.bsp");
    let o = run(&["--adapter", "no-such-gpu-anywhere", "compress", "--dtype", "f16", s(&inp), s(&out)]);
    assert_error(&o, &["no-such-gpu-anywhere"], "--adapter");
    assert!(!out.exists());
    let o = cmd()
        .env("WGPU_ADAPTER_NAME", "no-such-gpu-anywhere")
        .args(["compress", "--dtype", "f16", s(&inp), s(&out)])
        .output()
        .unwrap();
    assert_error(&o, &["no-such-gpu-anywhere"], "WGPU_ADAPTER_NAME");
    let o = cmd().env("WGPU_BACKEND", "cuda").args(["compress", "--dtype", "f16", s(&inp), s(&out)]).output().unwrap();
    assert_error(&o, &["cuda"], "WGPU_BACKEND");
    assert!(!out.exists());
    assert_eq!(listing(&d), ["x.raw"]);
    let _ = std::fs::remove_dir_all(&d);
}

fn missing_input_or_output_directory_is_exit_1() {
    let d = scratch("paths");
    let o = run(&["compress", "--dtype", "bf16", s(&d.join("absent.raw")), s(&d.join("o.bsp"))]);
    assert_error(&o, &["absent.raw"], "missing input");
    std::fs::write(d.join("in.raw"), [0u8; 8]).unwrap();
    let o = run(&["compress", "--dtype", "bf16", s(&d.join("in.raw")), s(&d.join("no-dir/o.bsp"))]);
    assert_error(&o, &["no-dir"], "missing output directory");
    let _ = std::fs::remove_dir_all(&d);
}

/// A panic (a bug) inside a command ends as exit 1 and leaves neither OUT nor a temporary file: driven
/// in-process through the binary's own guard (the shipped binary has no test hook), with a temporary
/// output open and partly written when it happens. The hook's one-line message is checked too.
fn a_panic_is_one_error_line_and_leaves_no_files() {
    let d = scratch("panic");
    let out = d.join("out.bsp");
    let code = bitsparse_cli::run_guarded(|| {
        let mut o = bitsparse_cli::io::Output::open(&out)?;
        o.writer().write_all(b"partial").unwrap();
        assert!(listing(&d).iter().any(|n| n.starts_with(".bitsparse-tmp")), "temporary file exists");
        panic!("a bug\nspanning lines");
    });
    assert_eq!(code, 1);
    assert!(listing(&d).is_empty(), "output or temporary file left behind: {:?}", listing(&d));
    // The line the hook prints.
    let line = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let l2 = line.clone();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| *l2.lock().unwrap() = bitsparse_cli::panic_line(info)));
    let _ = std::panic::catch_unwind(|| panic!("two\nlines"));
    std::panic::set_hook(prev);
    let line = line.lock().unwrap().clone();
    assert!(line.starts_with("error: internal: two lines at "), "{line}");
    assert_eq!(line.lines().count(), 1);
    let _ = std::fs::remove_dir_all(&d);
}

fn compress_json_reports_the_ratio_against_the_bound() {
    let d = scratch("json");
    // ReLU² values (a few exponents a tile, which version 2's value code takes below the bound's 15
    // bits); random bit patterns would stay plain, and at ρ = 0.176 — mask tiles since the positions
    // margin (FORMAT.md §14.5) — reach only ~0.90 of the bound.
    let data = bitsparse::cpu::synthetic_relu2(8192, 0.176, DType::Bf16, 5);
    let (inp, bsp) = (d.join("a.raw"), d.join("a.bsp"));
    std::fs::write(&inp, &data).unwrap();
    let o = run(&["compress", "--json", "--dtype", "bf16", "--sign-pack", s(&inp), s(&bsp)]);
    assert_ok(&o, "compress --json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["elements"], 8192);
    let nonzeros = data.chunks_exact(2).filter(|c| c != &[0, 0]).count();
    assert_eq!(v["nonzeros"], nonzeros);
    let stored = v["stored_bytes"].as_f64().unwrap();
    assert!((v["ratio"].as_f64().unwrap() - 16384.0 / stored).abs() < 1e-9);
    // Format version 2 (the default) codes values below the bound's b − s bits: the fraction may pass 1.
    let f = v["bound_fraction"].as_f64().unwrap();
    assert!(f > 0.95 && f < 1.5, "bound_fraction {f}");
    assert_eq!(v["format_version"], 2);
    assert_eq!(v["container_bytes"].as_u64().unwrap(), std::fs::metadata(&bsp).unwrap().len());
    // `--format-version 1` writes the mask + plain values stream: larger, under the bound, and both
    // files decode to the input.
    let bsp1 = d.join("a1.bsp");
    let o = run(&["compress", "--json", "--format-version", "1", "--dtype", "bf16", "--sign-pack", s(&inp), s(&bsp1)]);
    assert_ok(&o, "compress --format-version 1");
    let v1: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v1["format_version"], 1);
    assert!(v1["stored_bytes"].as_f64().unwrap() > stored, "{v1}");
    let f1 = v1["bound_fraction"].as_f64().unwrap();
    assert!(f1 > 0.5 && f1 <= 1.0 && f1 < f, "v1 bound_fraction {f1}");
    for (file, out) in [(&bsp, d.join("back2.raw")), (&bsp1, d.join("back1.raw"))] {
        assert_ok(&run(&["decompress", s(file), s(&out)]), "decompress");
        assert_eq!(std::fs::read(&out).unwrap(), data, "{}", file.display());
    }
    let o = run(&["compress", "--format-version", "3", "--dtype", "bf16", s(&inp), s(&d.join("x.bsp"))]);
    assert_eq!(o.status.code(), Some(2), "an unknown format version is a usage error");
    // An empty file has no density.
    let e = d.join("empty.raw");
    std::fs::write(&e, b"").unwrap();
    let o = run(&["compress", "--json", "--dtype", "e4m3", s(&e), s(&d.join("e.bsp"))]);
    assert_ok(&o, "empty");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["density"].is_null() && v["bound_fraction"].is_null(), "{v}");
    let _ = std::fs::remove_dir_all(&d);
}
