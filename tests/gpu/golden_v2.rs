//! Golden files of format version 2 (`docs/FORMAT.md` §14), frozen under `tests/golden/v2/` with the
//! SHA-256 of each file and of the bytes it decodes to (`MANIFEST.txt`: `file dtype sign_pack elements
//! decoded_sha256 file_sha256`). Every later change of the format or of the decoders must keep decoding
//! them to the same bytes; see `tests/golden/v1/README.md` for the rule (never regenerate to make a
//! failing decode pass).
//!
//! * `golden_v2_files_unchanged_and_cpu_decode`: the folder holds exactly the listed files, each with
//!   its SHA-256, each decoded by `cpu::decompress` (the `.bsp` container by `Container::decode`) to the
//!   recorded dtype, sign packing, element count and SHA-256; an ordered stream is also what
//!   `cpu::compress_v2` writes for the decoded data today (the canonical bytes did not move).
//! * `golden_v2_gpu_decode`: the same decoded bytes from `host::decompress_to_vec` on the GPU.
//! * `golden_v2_regenerate` (ignored): the generator, run once by hand.

use std::path::{Path, PathBuf};

use bitsparse::format::v2::enc;
use bitsparse::host::context::GpuContext;
use bitsparse::{cpu, host, Codec, DType, FormatVersion, Options, StreamInfo};
use bitsparse_files::container::Container;
use sha2::{Digest, Sha256};

use crate::common::harness::{cpu_test, vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        cpu_test!(golden_v2_files_unchanged_and_cpu_decode),
        vulkan_test!(golden_v2_gpu_decode),
        cpu_test!(golden_v2_regenerate)
            .ignore("writes tests/golden/v2: run by hand only, never to make a failing decode pass"),
    ]
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v2")
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

struct Entry {
    file: String,
    dtype: DType,
    sign_pack: bool,
    elements: u64,
    decoded: String,
    file_sha: String,
}

fn manifest() -> Vec<Entry> {
    let text = std::fs::read_to_string(dir().join("MANIFEST.txt")).expect("tests/golden/v2/MANIFEST.txt");
    let out: Vec<Entry> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 6, "MANIFEST line `{l}`");
            Entry {
                file: f[0].into(),
                dtype: DType::from_name(f[1]).expect("dtype"),
                sign_pack: f[2] == "1",
                elements: f[3].parse().expect("elements"),
                decoded: f[4].into(),
                file_sha: f[5].into(),
            }
        })
        .collect();
    assert!(out.len() >= 8, "MANIFEST lists {} files", out.len());
    out
}

fn is_container(file: &str) -> bool {
    file.ends_with(".bsp")
}

/// (dtype, sign_pack, elements) from the stream's header, or the container's one tensor record.
fn describe(file: &str, bytes: &[u8]) -> (DType, bool, u64) {
    if is_container(file) {
        let c = Container::parse(bytes).unwrap();
        let t = c.records.iter().find_map(|r| match r.kind {
            bitsparse_files::container::RecordKind::Tensor { dtype, elements, sign_pack } => {
                Some((dtype, sign_pack, elements))
            }
            _ => None,
        });
        t.expect("a tensor record")
    } else {
        let i = StreamInfo::from_bytes(bytes).unwrap();
        assert_eq!(i.version, FormatVersion::V2, "{file}");
        (i.dtype, i.options.sign_pack, i.n)
    }
}

fn decode(file: &str, bytes: &[u8], f: &mut dyn FnMut(&[u8]) -> bitsparse::Result<Vec<u8>>) -> Vec<u8> {
    if is_container(file) {
        Container::parse(bytes).unwrap().decode(f).unwrap_or_else(|e| panic!("{file}: {e}"))
    } else {
        f(bytes).unwrap_or_else(|e| panic!("{file}: {e}"))
    }
}

fn golden_v2_files_unchanged_and_cpu_decode() {
    let entries = manifest();
    let mut listed: Vec<String> = entries.iter().map(|e| e.file.clone()).collect();
    listed.sort();
    let mut present: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "MANIFEST.txt" && n != "README.md")
        .collect();
    present.sort();
    assert_eq!(listed, present, "MANIFEST.txt and the folder differ");
    let mut encodings = [0u64; 4];
    let mut coded = 0;
    for e in &entries {
        let bytes = std::fs::read(dir().join(&e.file)).unwrap();
        if !is_container(&e.file) {
            let st = cpu::v2::stream_stats(&bytes).unwrap();
            encodings.iter_mut().zip(st.tile_encodings).for_each(|(a, b)| *a += b);
            coded += st.exponent_coded_tiles;
        }
        assert!(bytes.len() <= 64 * 1024, "{}: keep golden files small", e.file);
        assert_eq!(sha(&bytes), e.file_sha, "{}: the file changed", e.file);
        assert_eq!(describe(&e.file, &bytes), (e.dtype, e.sign_pack, e.elements), "{}", e.file);
        let out = decode(&e.file, &bytes, &mut |s| cpu::decompress(s));
        assert_eq!(sha(&out), e.decoded, "{}: decoded bytes", e.file);
        if !is_container(&e.file) && !e.file.contains("starts") {
            let again = cpu::compress_v2(&out, e.dtype, Options { sign_pack: e.sign_pack }).unwrap();
            if again != bytes {
                // The one change of the canonical writer since the files were frozen: positions tiles
                // only where they beat the mask by `format::v2::POSITIONS_GAIN` (thirtieth session).
                // A file written before keeps decoding (above); today's bytes may differ from it only
                // by positions tiles written as mask tiles, each a little larger.
                let (was, now) = (cpu::v2::stream_stats(&bytes).unwrap(), cpu::v2::stream_stats(&again).unwrap());
                let (m, p) = (enc::MASK as usize, enc::POSITIONS as usize);
                let (tw, tn) = (was.tile_encodings, now.tile_encodings);
                assert!(
                    tn[p] < tw[p] && tn[m] + tn[p] == tw[m] + tw[p] && tn[2..] == tw[2..] && again.len() > bytes.len(),
                    "{}: today's writer changed more than the positions margin: {tw:?} -> {tn:?}",
                    e.file
                );
            }
        }
    }
    assert!(
        encodings.iter().all(|&c| c > 0) && coded > 0,
        "the set must hold every encoding: {encodings:?}, {coded} coded"
    );
}

fn golden_v2_gpu_decode(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    for e in manifest() {
        let bytes = std::fs::read(dir().join(&e.file)).unwrap();
        let out = decode(&e.file, &bytes, &mut |s| host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, s));
        assert_eq!(sha(&out), e.decoded, "{}: GPU-decoded bytes", e.file);
    }
}

/// Writes the golden files and the manifest (by hand, once: see the module comment).
fn golden_v2_regenerate() {
    let d = dir();
    std::fs::create_dir_all(&d).unwrap();
    let relu = |n: usize, rho: f64, dt: DType, seed: u64| cpu::synthetic_relu2(n, rho, dt, seed);
    let bits = |n: usize, rho: f64, dt: DType, seed: u64, clear: bool| {
        let mut v = cpu::synthetic_bits(n, rho, dt, seed);
        if clear {
            let eb = dt.bytes() as usize;
            v.iter_mut().skip(eb - 1).step_by(eb).for_each(|b| *b &= 0x7f);
        }
        v
    };
    let cases: Vec<(&str, DType, bool, Vec<u8>)> = vec![
        ("bf16-relu2-packed-rho0.02-n70000.bspt", DType::Bf16, true, relu(70_000, 0.02, DType::Bf16, 1)),
        ("bf16-relu2-rho0.3-n20000.bspt", DType::Bf16, false, relu(20_000, 0.3, DType::Bf16, 2)),
        ("bf16-bits-n5330.bspt", DType::Bf16, false, bits(5330, 0.4, DType::Bf16, 3, false)),
        ("f16-relu2-packed-rho0.005-n40000.bspt", DType::F16, true, relu(40_000, 0.005, DType::F16, 4)),
        ("f16-zeros-n4097.bspt", DType::F16, false, vec![0u8; 4097 * 2]),
        ("e4m3-relu2-packed-rho0.176-n9000.bspt", DType::E4m3, true, relu(9000, 0.176, DType::E4m3, 5)),
        ("e5m2-dense-n4096.bspt", DType::E5m2, false, bits(4096, 1.0, DType::E5m2, 6, false)),
        ("e5m2-empty-packed-n0.bspt", DType::E5m2, true, Vec::new()),
        ("f32-bits-packed-n4500.bspt", DType::F32, true, bits(4500, 0.5, DType::F32, 7, true)),
        ("f32-relu2-rho1-n4096.bspt", DType::F32, false, relu(4096, 1.0, DType::F32, 8)),
    ];
    let mut lines = vec![
        "# file dtype sign_pack elements decoded_sha256 file_sha256 (written by golden_v2_regenerate)".to_string(),
    ];
    let mut add = |name: &str, dt: DType, sp: bool, data: &[u8], file: &[u8]| {
        std::fs::write(d.join(name), file).unwrap();
        lines.push(format!(
            "{name} {} {} {} {} {}",
            dt.name(),
            sp as u8,
            data.len() as u64 / dt.bytes(),
            sha(data),
            sha(file)
        ));
    };
    for (name, dt, sp, data) in &cases {
        let s = cpu::compress_v2(data, *dt, Options { sign_pack: *sp }).unwrap();
        add(name, *dt, *sp, data, &s);
    }
    // A tile-start directory (shuffled tiles, gaps), as an atomic-per-tile writer may leave it.
    let data = relu(50_000, 0.05, DType::Bf16, 9);
    let s = cpu::compress_v2(&data, DType::Bf16, Options::SIGN_PACK).unwrap();
    add(
        "bf16-starts-shuffled-packed-n50000.bspt",
        DType::Bf16,
        true,
        &data,
        &cpu::v2::place_starts_shuffled(&s, 3).unwrap(),
    );
    // A CLI container of a raw file.
    let data = relu(10_000, 0.1, DType::Bf16, 10);
    let c = Container::raw(&data, DType::Bf16, Options::SIGN_PACK, cpu::compress_v2).unwrap();
    add("raw-bf16-packed-n10000.bsp", DType::Bf16, true, &data, &c.to_bytes());
    std::fs::write(d.join("MANIFEST.txt"), lines.join("\n") + "\n").unwrap();
}
