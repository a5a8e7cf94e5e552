//! `bitsparse analyze`, and `compress` / `decompress` of whole `.safetensors` / `.npy` dumps, from the
//! outside: the shipped dump's numbers, empty and NaN-filled tensors, `.npy` dtypes, byte-exact round
//! trips, the sign-packing fallback note, and one `error: ` line naming the file and tensor for every kind
//! of bad file (truncated header, header length past the end, unknown dtype, shape disagreeing with the
//! data, overlapping and out-of-range offsets), exit 1, no panic, no output file.

use std::path::PathBuf;
use std::process::Output;

use bitsparse_files::{npy, safetensors};
use serde_json::Value;

use crate::common;
use crate::common::cli::{assert_error_quiet as assert_error, assert_ok, command, json, s, stderr};
use crate::common::harness::{cpu_test, needs_test, Test, VULKAN};

pub fn tests() -> Vec<Test> {
    vec![
        needs_test!(analyze_the_shipped_dump, VULKAN),
        needs_test!(empty_and_nan_filled_tensors_are_valid, VULKAN),
        needs_test!(safetensors_round_trip_is_byte_exact_and_records_the_tensors, VULKAN),
        needs_test!(npy_files, VULKAN),
        cpu_test!(bad_files_are_one_error_line_naming_file_and_tensor),
        needs_test!(raw_files_still_refuse_sign_bits_under_sign_pack, VULKAN),
    ]
}

const DUMP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../demos/data/activations_small.safetensors");

fn scratch(name: &str) -> PathBuf {
    common::cli::scratch("analyze", name)
}

// lavapipe: the adapter every test machine has (CI installs it).
fn run(args: &[&str]) -> Output {
    command().args(["--backend", "vulkan"]).args(args).output().expect("spawn bitsparse")
}

fn tensor<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tensor {name} in {v}"))
}

fn analyze_the_shipped_dump() {
    let v = json(&run(&["analyze", "--json", DUMP]), "analyze --json");
    assert_eq!(v["format"], "safetensors");
    assert!(v["file"].as_str().unwrap().ends_with("activations_small.safetensors"));
    assert_eq!(v["tensors"].as_array().unwrap().len(), 4, "{v}");
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["name"], "input_ids");
    assert_eq!(skipped[0]["dtype"], "I64");
    for (name, density) in [("layers.0.mlp.act", 0.5), ("layers.1.mlp.act", 0.176), ("layers.2.mlp.act", 0.05)] {
        let t = tensor(&v, name);
        assert_eq!(t["shape"], serde_json::json!([32, 1024]));
        assert_eq!(t["elements"], 32768);
        let d = t["density"].as_f64().unwrap();
        assert!((d - density).abs() < 0.02, "{name}: density {d}");
        assert_eq!(t["nonzeros"].as_f64().unwrap(), (d * 32768.0).round());
        assert_eq!(t["negatives"], 0);
        // Ratio = dense bytes ÷ the stream the GPU really produced.
        let (plain, packed) =
            (t["compressed_bytes"].as_f64().unwrap(), t["compressed_bytes_sign_pack"].as_f64().unwrap());
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        assert!(close(t["ratio"].as_f64().unwrap(), 65536.0 / plain), "{t}");
        assert!(close(t["ratio_sign_pack"].as_f64().unwrap(), 65536.0 / packed), "{t}");
        assert!(packed < plain, "{name}: sign packing saves bytes");
        // The bound fraction is that of the sign-packed form, ≤ 1, and it is what the definition says.
        let bf = t["bound_fraction"].as_f64().unwrap();
        let h = |p: f64| -(p * p.log2() + (1.0 - p) * (1.0 - p).log2());
        let want = (h(d) + 15.0 * d) * 32768.0 / (packed * 8.0);
        assert!((bf - want).abs() < 1e-9 * want && bf > 0.3, "{name}: bound_fraction {bf} vs {want}");
        // Format version 2 (what `compress` writes) and where its bits go; version 1 for comparison.
        assert_eq!(t["format_version"], 2);
        let v1 = t["compressed_bytes_v1_sign_pack"].as_f64().unwrap();
        assert!(packed < v1, "{name}: v2 {packed} B vs v1 {v1} B");
        assert!(t["bound_fraction_v1"].as_f64().unwrap() <= 1.0);
        let enc: u64 =
            ["mask", "positions", "empty", "raw"].iter().map(|k| t["tile_encodings"][k].as_u64().unwrap()).sum();
        assert_eq!(enc, 8, "{name}: {}", t["tile_encodings"]);
        let bits: u64 = ["position_bits", "value_bits", "directory_bits", "padding_bits"]
            .iter()
            .map(|k| t[k].as_u64().unwrap())
            .sum();
        assert_eq!(bits as f64, packed * 8.0, "{name}: every bit of the stream accounted for");
        let vef = t["value_entropy_fraction"].as_f64().unwrap();
        assert!(vef > 0.3 && vef <= 1.0, "{name}: value_entropy_fraction {vef}");
        let hist: u64 =
            t["tile_density_histogram"]["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(hist, 8, "{name}: every tile in the histogram");
    }
    // Denser tensors compress less.
    let r: Vec<f64> = (0..3).map(|i| tensor(&v, &format!("layers.{i}.mlp.act"))["ratio"].as_f64().unwrap()).collect();
    assert!(r[0] < r[1] && r[1] < r[2], "{r:?}");
    // The F32 pre-activation: analysed as F32 (an activation dtype of its own), negative values, so no
    // sign packing.
    let z = tensor(&v, "layers.2.mlp.pre_act");
    assert_eq!(z["dtype"], "F32");
    assert_eq!(z["analysed_as"], "f32");
    assert!(z["negatives"].as_u64().unwrap() > 0);
    assert!(z["ratio_sign_pack"].is_null() && z["compressed_bytes_sign_pack"].is_null());
    assert_eq!(z["dense_bytes"], 8192 * 4);
    assert_eq!(z["bound_fraction"], z["bound_fraction_plain"]);

    // The human table names every tensor and the skipped one.
    let o = run(&["analyze", DUMP]);
    assert_ok(&o, "analyze");
    let text = String::from_utf8(o.stdout).unwrap();
    for n in [
        "layers.0.mlp.act",
        "layers.2.mlp.pre_act",
        "skipped",
        "input_ids",
        "tiles per density bin",
        "format version 2",
    ] {
        assert!(text.contains(n), "table lacks `{n}`:\n{text}");
    }
}

fn empty_and_nan_filled_tensors_are_valid() {
    let d = scratch("nan");
    let nan16: Vec<u8> = (0..5000).flat_map(|_| 0x7e00u16.to_le_bytes()).collect(); // F16 quiet NaN, sign clear
    let neg_nan: Vec<u8> = (0..300).flat_map(|_| 0xffc1u16.to_le_bytes()).collect(); // BF16 NaN, sign set
    let f = safetensors::write(
        &[
            ("empty", "BF16", &[0, 16], &[]),
            ("nan", "F16", &[5000], &nan16),
            ("negnan", "BF16", &[300], &neg_nan),
            ("e8", "F8_E5M2", &[0], &[]),
        ],
        None,
    );
    let p = d.join("nan.safetensors");
    std::fs::write(&p, &f).unwrap();
    let v = json(&run(&["analyze", "--json", s(&p)]), "analyze");
    let e = tensor(&v, "empty");
    assert_eq!(e["elements"], 0);
    assert!(e["density"].is_null() && e["ratio"].is_null() && e["bound_fraction"].is_null(), "{e}");
    assert_eq!(e["shape"], serde_json::json!([0, 16]));
    let n = tensor(&v, "nan");
    assert_eq!(n["density"], 1.0);
    assert_eq!(n["negatives"], 0);
    assert!(n["ratio_sign_pack"].is_number());
    let nn = tensor(&v, "negnan");
    assert_eq!(nn["negatives"], 300);
    assert!(nn["ratio_sign_pack"].is_null());
    // And they round-trip through compress / decompress, byte-exactly, with and without --sign-pack.
    for sp in [false, true] {
        let (bsp, back) = (d.join(format!("nan{sp}.bsp")), d.join(format!("nan{sp}.back")));
        let mut args = vec!["compress", s(&p), s(&bsp)];
        if sp {
            args.insert(1, "--sign-pack");
        }
        let o = run(&args);
        assert_ok(&o, "compress");
        // Under --sign-pack the tensor with a sign bit set is stored unpacked, and the command says so.
        assert_eq!(
            stderr(&o).contains("`negnan`") && stderr(&o).contains("without sign packing"),
            sp,
            "{}",
            stderr(&o)
        );
        assert_ok(&run(&["decompress", s(&bsp), s(&back)]), "decompress");
        assert!(std::fs::read(&back).unwrap() == f, "sign_pack={sp}: round trip differs");
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn safetensors_round_trip_is_byte_exact_and_records_the_tensors() {
    let d = scratch("st");
    let (bsp, back) = (d.join("dump.bsp"), d.join("dump.back"));
    let o = run(&["compress", "--json", "--verify", "--sign-pack", DUMP, s(&bsp)]);
    let v = json(&o, "compress");
    assert_eq!(v["source"], "safetensors");
    let names: Vec<&str> = v["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["layers.0.mlp.act", "layers.1.mlp.act", "layers.2.mlp.act", "layers.2.mlp.pre_act"]);
    // The F32 pre-activation is compressed (losslessly) too, unpacked: it has negative values.
    for t in v["tensors"].as_array().unwrap() {
        assert_eq!(t["sign_pack"], t["name"] != "layers.2.mlp.pre_act", "{t}");
    }
    // I64 is stored verbatim.
    assert_eq!(v["verbatim"], serde_json::json!(["input_ids"]));
    assert!(v["container_bytes"].as_u64().unwrap() < v["original_bytes"].as_u64().unwrap());
    let o = run(&["decompress", "--json", s(&bsp), s(&back)]);
    let v = json(&o, "decompress");
    assert_eq!(v["source"], "safetensors");
    assert_eq!(v["tensors"], 4);
    assert!(std::fs::read(&back).unwrap() == std::fs::read(DUMP).unwrap(), "round trip differs");
    // Recognised by content too: the same file under another name, without --dtype.
    let renamed = d.join("dump.bin");
    std::fs::copy(DUMP, &renamed).unwrap();
    let v = json(&run(&["compress", "--json", s(&renamed), s(&bsp)]), "compress by content");
    assert_eq!(v["source"], "safetensors");
    let _ = std::fs::remove_dir_all(&d);
}

fn npy_files() {
    let d = scratch("npy");
    let relu = bitsparse::cpu::synthetic_relu2(6000, 0.2, bitsparse::DType::Bf16, 3);
    let f16 = bitsparse::cpu::synthetic_relu2(6000, 0.3, bitsparse::DType::F16, 4);
    let fp8 = bitsparse::cpu::synthetic_relu2(7001, 0.1, bitsparse::DType::E4m3, 5);
    let f32s: Vec<u8> = (0..1000).flat_map(|i| if i % 3 == 0 { (i as f32).to_le_bytes() } else { [0; 4] }).collect();
    let files = [
        ("bf16.npy", npy::write("<V2", &[60, 100], &relu), vec!["--dtype", "bf16"], "bf16", 6000u64),
        ("half.npy", npy::write("<f2", &[6000], &f16), vec![], "f16", 6000),
        ("fp8.npy", npy::write("|V1", &[7001], &fp8), vec!["--dtype", "e4m3"], "e4m3", 7001),
        ("single.npy", npy::write("<f4", &[10, 100], &f32s), vec![], "f32", 1000),
        ("single_dtype.npy", npy::write("<f4", &[1000], &f32s), vec!["--dtype", "f32"], "f32", 1000),
    ];
    for (name, bytes, extra, analysed, n) in &files {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let mut args = vec!["analyze", "--json"];
        args.extend(extra.iter().copied());
        args.push(s(&p));
        let v = json(&run(&args), name);
        assert_eq!(v["format"], "npy");
        let t = &v["tensors"][0];
        assert_eq!(t["name"], name.trim_end_matches(".npy"), "{name}");
        assert_eq!(t["analysed_as"], *analysed, "{name}");
        assert_eq!(t["elements"], *n, "{name}");
        // Round trip of the whole file.
        let (bsp, back) = (d.join(format!("{name}.bsp")), d.join(format!("{name}.back")));
        let mut args = vec!["compress"];
        args.extend(extra.iter().copied());
        args.extend([s(&p), s(&bsp)]);
        assert_ok(&run(&args), name);
        assert_ok(&run(&["decompress", s(&bsp), s(&back)]), name);
        assert!(std::fs::read(&back).unwrap() == *bytes, "{name}: round trip differs");
    }
    // ml_dtypes' void bfloat16 needs --dtype.
    let p = d.join("bf16.npy");
    assert_error(&run(&["analyze", s(&p)]), &["bf16.npy", "--dtype"], "V2 without --dtype");
    assert_error(&run(&["compress", s(&p), s(&d.join("x.bsp"))]), &["bf16.npy", "--dtype"], "V2 without --dtype");
    assert_error(&run(&["analyze", "--dtype", "e5m2", s(&p)]), &["bf16.npy", "2-byte"], "V2 with a 1-byte dtype");
    assert!(!d.join("x.bsp").exists());
    // A raw file needs --dtype for analyze, and works with it.
    let raw = d.join("act.raw");
    std::fs::write(&raw, &relu).unwrap();
    assert_error(&run(&["analyze", s(&raw)]), &["act.raw", "--dtype"], "raw without --dtype");
    let v = json(&run(&["analyze", "--json", "--dtype", "bf16", s(&raw)]), "raw");
    assert_eq!(v["format"], "raw");
    assert_eq!(v["tensors"][0]["elements"], 6000);
    // A raw F32 file: `--dtype f32` analyses it with b = 32 and round-trips it losslessly, sign-packed.
    let raw32 = d.join("act32.raw");
    let f32_act = bitsparse::cpu::synthetic_relu2(5000, 0.25, bitsparse::DType::F32, 6);
    std::fs::write(&raw32, &f32_act).unwrap();
    let v = json(&run(&["analyze", "--json", "--dtype", "f32", s(&raw32)]), "raw f32");
    assert_eq!(v["tensors"][0]["analysed_as"], "f32");
    assert_eq!(v["tensors"][0]["elements"], 5000);
    assert_eq!(v["tensors"][0]["dense_bytes"], 20000);
    let (bsp, back) = (d.join("act32.bsp"), d.join("act32.back"));
    assert_ok(&run(&["compress", "--dtype", "f32", "--sign-pack", "--verify", s(&raw32), s(&bsp)]), "raw f32");
    assert_ok(&run(&["decompress", s(&bsp), s(&back)]), "raw f32");
    assert!(std::fs::read(&back).unwrap() == f32_act, "raw f32: round trip differs");
    assert!(std::fs::metadata(&bsp).unwrap().len() < 20000 / 2, "raw f32: not compressed");
    let _ = std::fs::remove_dir_all(&d);
}

/// A `.safetensors` file with a hand-written header.
fn with_header(h: &str, data: &[u8]) -> Vec<u8> {
    let mut v = (h.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(h.as_bytes());
    v.extend_from_slice(data);
    v
}

fn bad_files_are_one_error_line_naming_file_and_tensor() {
    // No adapter needed: every one of these is refused before the device is opened.
    let d = scratch("bad");
    let mut lying = with_header(r#"{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}"#, &[0; 4]);
    lying[..8].copy_from_slice(&10_000u64.to_le_bytes());
    let ok_npy = npy::write("<f2", &[4], &[0; 8]);
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        ("truncated.safetensors", vec![1, 2, 3], vec!["truncated"]),
        ("past-end.safetensors", lying, vec!["runs past the end"]),
        ("not-json.safetensors", with_header("{\"x\": nope}", &[]), vec!["JSON"]),
        (
            "unknown-dtype.safetensors",
            with_header(r#"{"act":{"dtype":"BF17","shape":[2],"data_offsets":[0,4]}}"#, &[0; 4]),
            vec!["tensor `act`", "unknown dtype `BF17`"],
        ),
        (
            "shape.safetensors",
            with_header(r#"{"act":{"dtype":"BF16","shape":[3,2],"data_offsets":[0,8]}}"#, &[0; 8]),
            vec!["tensor `act`", "needs 12 bytes"],
        ),
        (
            "overlap.safetensors",
            with_header(
                r#"{"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}}"#,
                &[0; 8],
            ),
            vec!["tensor `b`", "overlap tensor `a`"],
        ),
        (
            "range.safetensors",
            with_header(r#"{"act":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}}"#, &[0; 8]),
            vec!["tensor `act`", "out of range"],
        ),
        (
            "gap.safetensors",
            with_header(r#"{"act":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}"#, &[0; 8]),
            vec!["tensor `act`", "belong to no tensor"],
        ),
        ("truncated.npy", ok_npy[..ok_npy.len() - 3].to_vec(), vec!["tensor `truncated`", "needs 8 bytes"]),
        ("header.npy", ok_npy[..20].to_vec(), vec!["runs past the end"]),
        ("descr.npy", npy::write("<x9", &[1], &[0]), vec!["tensor `descr`", "not a NumPy dtype"]),
    ];
    for (name, bytes, mentions) in &cases {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let mut m = mentions.clone();
        m.push(name);
        assert_error(&run(&["analyze", s(&p)]), &m, &format!("analyze {name}"));
        assert_error(&run(&["analyze", "--json", s(&p)]), &m, &format!("analyze --json {name}"));
        let out = d.join("out.bsp");
        assert_error(&run(&["compress", s(&p), s(&out)]), &m, &format!("compress {name}"));
        assert!(!out.exists(), "{name}: OUT created by a failed compress");
    }
    // Nothing but the inputs is left behind.
    let left = std::fs::read_dir(&d).unwrap().count();
    assert_eq!(left, cases.len());
    // A missing file and --dtype given to a safetensors file.
    assert_error(&run(&["analyze", s(&d.join("missing.safetensors"))]), &["missing.safetensors"], "missing");
    let p = d.join("range.safetensors");
    std::fs::write(&p, with_header(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, &[7])).unwrap();
    assert_error(
        &run(&["analyze", "--dtype", "bf16", s(&p)]),
        &["range.safetensors", "--dtype"],
        "--dtype with safetensors",
    );
    let _ = std::fs::remove_dir_all(&d);
}

fn raw_files_still_refuse_sign_bits_under_sign_pack() {
    let d = scratch("rawsign");
    let p = d.join("neg.raw");
    std::fs::write(&p, [0u8, 0, 1, 0x80]).unwrap();
    assert_error(
        &run(&["compress", "--dtype", "bf16", "--sign-pack", s(&p), s(&d.join("o.bsp"))]),
        &["neg.raw", "sign"],
        "raw",
    );
    // Without --dtype a raw file is a usage error (clap's exit 2).
    assert_eq!(run(&["compress", s(&p), s(&d.join("o.bsp"))]).status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}
