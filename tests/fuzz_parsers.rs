//! Fuzzing the parsers that see user files, with proptest: `.safetensors` and `.npy` headers
//! (`bitsparse::files`), the file container (`bitsparse::container`) and the tensor stream decoder
//! (`bitsparse::cpu`). Inputs: random bytes, random mutations of valid files (overwrites, cuts,
//! insertions), lying lengths, and generated headers with random dtypes, shapes and offsets.
//!
//! Properties: never a panic; and never a silent wrong answer: whatever a parser accepts satisfies the
//! invariants the rest of the code relies on (tensors tile the file, shapes match byte lengths), packs into
//! a container that decodes back to the same bytes, agrees with the `safetensors` crate wherever that
//! crate accepts the file, and a damaged container either is refused or decodes to the original bytes.
//!
//! `tests/corpus/` keeps inputs worth replaying (inputs that once crashed or were misjudged, and one of each
//! kind of bad file): `bad-*` files must be refused by the parser their extension names, `ok-*` files
//! must parse and round-trip. [`corpus_replays`] runs them all through every parser.

mod common;

use bitsparse::container::Container;
use bitsparse::files::{npy, pack, safetensors, Elem, FileError, Kind, ParsedFile};
use bitsparse::{cpu, DType, Options};
use proptest::prelude::*;

/// The checks every accepted file must pass (see the module comment).
fn check_accepted(p: &ParsedFile, bytes: &[u8]) -> Result<(), String> {
    p.check_coverage(bytes.len()).map_err(|e| format!("coverage: {e}"))?;
    for t in &p.tensors {
        if t.range.end > bytes.len() || t.range.start > t.range.end {
            return Err(format!("tensor {} range {:?} outside {} bytes", t.name, t.range, bytes.len()));
        }
        let prod = t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        if prod != Some(t.elements) {
            return Err(format!("tensor {}: elements {} != product of {:?}", t.name, t.elements, t.shape));
        }
        let want = match &t.elem {
            Elem::Act(d) => Some(t.elements * d.bytes()),
            Elem::F32 => Some(t.elements * 4),
            Elem::Other(_) => None,
        };
        if let Some(w) = want {
            if w != t.range.len() as u64 {
                return Err(format!("tensor {}: {} elements in {} bytes", t.name, t.elements, t.range.len()));
            }
        }
    }
    for w in p.tensors.windows(2) {
        if w[0].range.start > w[1].range.start {
            return Err("tensors not in file order".into());
        }
    }
    // Pack with the CPU reference (with sign packing, to exercise the fallback too) and decode back.
    for options in [Options::default(), Options::SIGN_PACK] {
        let (c, _) = pack::to_container(p, bytes, options, cpu::compress).map_err(|(e, _)| format!("pack: {e}"))?;
        let enc = c.to_bytes();
        let back = Container::parse(&enc)
            .and_then(|c| c.decode(cpu::decompress))
            .map_err(|e| format!("container of an accepted file does not decode: {e}"))?;
        if back != bytes {
            return Err("container of an accepted file decodes to different bytes".into());
        }
    }
    Ok(())
}

/// Every parser on `bytes`; `Err` only for a broken invariant (a refusal is fine).
fn all_parsers(bytes: &[u8]) -> Result<(), String> {
    for kind in [Kind::Safetensors, Kind::Npy, Kind::Raw] {
        for dtype in [None, Some(DType::Bf16), Some(DType::E4m3)] {
            if let Ok(p) = ParsedFile::parse(bytes, kind, dtype, "t") {
                check_accepted(&p, bytes).map_err(|e| format!("{kind:?} {dtype:?}: {e}"))?;
            }
        }
    }
    if let Ok(c) = Container::parse(bytes) {
        // Whatever decodes has passed both CRCs of every record; that is all a random input can promise.
        let _ = c.decode(cpu::decompress);
    }
    let _ = cpu::validate(bytes);
    let _ = cpu::decompress(bytes);
    let _ = cpu::compact(bytes);
    Ok(())
}

/// Where the `safetensors` crate accepts a file, we accept it with the same byte ranges. One deliberate
/// difference: a header that names a tensor twice, which the crate reads as its last entry (serde's map
/// semantics), is refused here: a tensor silently disappearing is a wrong answer.
fn agrees_with_the_safetensors_crate(bytes: &[u8]) -> Result<(), String> {
    let Ok((n, meta)) = ::safetensors::SafeTensors::read_metadata(bytes) else { return Ok(()) };
    let p = match safetensors::parse(bytes) {
        Err(e) if e.message.contains("duplicate key") => return Ok(()),
        other => other.map_err(|e| format!("the safetensors crate accepts, we refuse: {e}"))?,
    };
    let infos = meta.tensors();
    if infos.len() != p.tensors.len() {
        return Err(format!("{} tensors vs the crate's {}", p.tensors.len(), infos.len()));
    }
    for t in &p.tensors {
        let info = infos.get(&t.name).ok_or_else(|| format!("tensor {} unknown to the crate", t.name))?;
        let (b, e) = info.data_offsets;
        if (8 + n + b, 8 + n + e) != (t.range.start, t.range.end) {
            return Err(format!("tensor {}: range {:?}, the crate says {b}..{e} after {n}", t.name, t.range));
        }
    }
    Ok(())
}

fn st_sample() -> Vec<u8> {
    let relu = cpu::synthetic_relu2(150, 0.3, DType::Bf16, 1);
    let mut fp8 = cpu::synthetic_relu2(40, 0.5, DType::E5m2, 2);
    fp8[3] = 0x80;
    let f32s: Vec<u8> = [1.0f32, -2.0, 0.0, f32::NAN].iter().flat_map(|f| f.to_le_bytes()).collect();
    safetensors::write(
        &[
            ("a", "BF16", &[3, 50], &relu),
            ("b", "F8_E5M2", &[40], &fp8),
            ("c", "F32", &[4], &f32s),
            ("ids", "I64", &[2], &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]),
            ("empty", "BF16", &[0], &[]),
        ],
        Some(&[("k", "v")]),
    )
}

fn npy_sample(which: u8) -> Vec<u8> {
    match which % 4 {
        0 => npy::write("<f2", &[5, 20], &cpu::synthetic_relu2(100, 0.3, DType::F16, 3)),
        1 => npy::write("|V2", &[70], &cpu::synthetic_relu2(70, 0.3, DType::Bf16, 4)),
        2 => npy::write("<f4", &[3, 3], &[0x3f; 36]),
        _ => npy::write("<i8", &[2], &[9; 16]),
    }
}

fn container_sample() -> (Vec<u8>, Vec<u8>) {
    let st = st_sample();
    let p = safetensors::parse(&st).unwrap();
    let (c, _) = pack::to_container(&p, &st, Options::SIGN_PACK, cpu::compress).unwrap();
    (st, c.to_bytes())
}

/// Applies overwrites, an insertion and a cut (all positions taken modulo the length).
fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], insert: &Option<(usize, Vec<u8>)>, cut: Option<usize>) -> Vec<u8> {
    for &(at, v) in edits {
        if !b.is_empty() {
            let i = at % b.len();
            b[i] = v;
        }
    }
    if let Some((at, bytes)) = insert {
        let i = at % (b.len() + 1);
        b.splice(i..i, bytes.iter().copied());
    }
    if let Some(c) = cut {
        b.truncate(c % (b.len() + 1));
    }
    b
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>()), 0..5)
}

fn insertion() -> impl Strategy<Value = Option<(usize, Vec<u8>)>> {
    prop::option::weighted(0.3, (any::<usize>(), prop::collection::vec(any::<u8>(), 1..24)))
}

fn cut() -> impl Strategy<Value = Option<usize>> {
    prop::option::weighted(0.3, any::<usize>())
}

/// Dtype strings: every activation dtype, some others, and some the format does not define.
const DTYPES: [&str; 11] = ["BF16", "F16", "F32", "F8_E4M3", "F8_E5M2", "I64", "U8", "F4", "BOOL", "BF17", "f16"];

/// A generated header entry: name, dtype, shape, offsets.
type Entry = (u8, usize, Vec<u64>, (u64, u64));

fn entry() -> impl Strategy<Value = Entry> {
    (0u8..5, 0usize..DTYPES.len(), prop::collection::vec(0u64..6, 0..3), (0u64..48, 0u64..48))
}

fn generated_safetensors(entries: &[Entry], data_len: usize, honest: bool) -> Vec<u8> {
    // Honest: offsets laid end to end from the shapes (a valid file, unless a dtype is bad or a name
    // repeats); otherwise the random offsets as they are.
    let mut header = String::from("{");
    let mut off = 0u64;
    for (i, (name, d, shape, (b, e))) in entries.iter().enumerate() {
        let dtype = DTYPES[*d];
        let (b, e) = if honest {
            let bits = match dtype {
                "BF16" | "F16" => 16,
                "F32" => 32,
                "I64" => 64,
                "F4" => 4,
                _ => 8,
            };
            let n: u64 = shape.iter().product::<u64>() * bits / 8;
            let r = (off, off + n);
            off += n;
            r
        } else {
            (*b, *e)
        };
        if i > 0 {
            header.push(',');
        }
        header += &format!(r#""t{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{b},{e}]}}"#);
    }
    header.push('}');
    let data_len = if honest { off as usize } else { data_len };
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.extend((0..data_len).map(|i| (i * 7 % 251) as u8));
    v
}

proptest! {
    // 1024 cases per property by default (about a second in all); `PROPTEST_CASES=100000` for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1024),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        all_parsers(&bytes).map_err(TestCaseError::fail)?;
        agrees_with_the_safetensors_crate(&bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn random_bytes_behind_each_magic(which in 0u8..3, version in 0u8..5, len in any::<u64>(), tail in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut b = match which {
            0 => { let mut v = bitsparse::files::NPY_MAGIC.to_vec(); v.extend_from_slice(&[version, 0]); v }
            1 => (len % 400).to_le_bytes().to_vec(),
            _ => bitsparse::container::MAGIC.to_vec(),
        };
        if which == 1 { b.push(b'{'); }
        b.extend_from_slice(&tail);
        all_parsers(&b).map_err(TestCaseError::fail)?;
        agrees_with_the_safetensors_crate(&b).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn generated_headers(entries in prop::collection::vec(entry(), 0..5), data_len in 0usize..100, honest in any::<bool>()) {
        let b = generated_safetensors(&entries, data_len, honest);
        match safetensors::parse(&b) {
            Ok(p) => check_accepted(&p, &b).map_err(TestCaseError::fail)?,
            Err(FileError { tensor, message }) => {
                // A refusal of one entry names it; a file-level refusal is about the header or the data length.
                if let Some(t) = tensor {
                    prop_assert!(t.starts_with('t'), "names an unknown tensor {t}");
                }
                prop_assert!(!message.is_empty());
            }
        }
        // Unknown dtypes are refused, never skipped.
        if entries.iter().any(|e| matches!(DTYPES[e.1], "BF17" | "f16")) {
            prop_assert!(safetensors::parse(&b).is_err());
        }
        agrees_with_the_safetensors_crate(&b).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_safetensors(e in edits(), ins in insertion(), c in cut(), lie in prop::option::weighted(0.3, any::<i16>())) {
        let mut b = mutate(st_sample(), &e, &ins, c);
        if let (Some(delta), true) = (lie, b.len() >= 8) {
            let n = u64::from_le_bytes(b[..8].try_into().unwrap()).wrapping_add(delta as i64 as u64);
            b[..8].copy_from_slice(&n.to_le_bytes());
        }
        all_parsers(&b).map_err(TestCaseError::fail)?;
        agrees_with_the_safetensors_crate(&b).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_npy(which in any::<u8>(), e in edits(), ins in insertion(), c in cut(), lie in prop::option::weighted(0.3, any::<u16>())) {
        let mut b = mutate(npy_sample(which), &e, &ins, c);
        if let (Some(n), true) = (lie, b.len() >= 10) {
            b[8..10].copy_from_slice(&n.to_le_bytes());
        }
        all_parsers(&b).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_containers(e in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4), ins in insertion(), c in cut()) {
        let (original, bsp) = container_sample();
        let b = mutate(bsp.clone(), &e, &ins, c);
        if let Ok(c) = Container::parse(&b) {
            if let Ok(back) = c.decode(cpu::decompress) {
                // Every CRC passed: the only acceptable answer is the original file.
                prop_assert!(back == original || b == bsp, "a damaged container decoded to different bytes");
            }
        }
        all_parsers(&b).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_streams(dtype in 0usize..4, sign_pack in any::<bool>(), e in edits(), ins in insertion(), c in cut()) {
        let dtype = DType::ALL[dtype];
        let data = cpu::synthetic_relu2(5000, 0.2, dtype, 9);
        let stream = cpu::compress(&data, dtype, Options { sign_pack }).unwrap();
        let b = mutate(stream, &e, &ins, c);
        // A bare tensor stream has no checksum: the decoder must refuse or decode, never panic or
        // read out of bounds; what it decodes has the length its header announces.
        if let Ok(out) = cpu::decompress(&b) {
            let (layout, _) = cpu::validate(&b).map_err(|e| TestCaseError::fail(format!("decoded but invalid: {e}")))?;
            prop_assert_eq!(out.len() as u64, layout.dense_bytes());
        }
        let _ = cpu::compact(&b);
    }
}

/// Makes every CRC of a (mutated) container agree with its bytes again, as far as its lengths allow:
/// the header CRC, each record's stored-bytes CRC and header CRC, and — where the stored bytes decode
/// (verbatim records always; tensor records through the CPU decoder) — the decoded bytes' CRC. What is
/// left is a container that only the format's other rules can refuse: a mutant that passes them is
/// spec-valid, and must round-trip.
fn recompute_crcs(mut b: Vec<u8>) -> Vec<u8> {
    let crc = |x: &[u8]| crc32fast_hash(x);
    if b.len() < 40 {
        return b;
    }
    let h = crc(&b[..36]);
    b[36..40].copy_from_slice(&h.to_le_bytes());
    let mut pos = 40usize;
    while pos + 48 <= b.len() {
        let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let name_len = u32::from_le_bytes(b[pos + 4..pos + 8].try_into().unwrap()) as usize;
        let stored_len = u64_at(&b, pos + 24);
        let name_end = pos + 48 + name_len;
        let Some(end) = usize::try_from(stored_len).ok().and_then(|l| name_end.checked_add(l)).filter(|&e| e <= b.len()) else {
            break;
        };
        let stored = b[name_end..end].to_vec();
        b[pos + 36..pos + 40].copy_from_slice(&crc(&stored).to_le_bytes());
        let decoded = if b[pos] == 0 { Some(stored.clone()) } else { cpu::decompress(&stored).ok() };
        if let Some(d) = decoded {
            b[pos + 32..pos + 36].copy_from_slice(&crc(&d).to_le_bytes());
        }
        let mut rec = b[pos..pos + 44].to_vec();
        rec.extend_from_slice(&b[pos + 48..name_end]);
        b[pos + 44..pos + 48].copy_from_slice(&crc(&rec).to_le_bytes());
        pos = end;
    }
    b
}

/// CRC-32 (IEEE), the container's checksum; written out here so the test does not trust the
/// library's own use of it.
fn crc32fast_hash(x: &[u8]) -> u32 {
    let mut c = !0u32;
    for &byte in x {
        c ^= byte as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// A raw-file container (one tensor record) and a dump container (header, tensors, verbatim records),
/// to mutate.
fn container_seeds() -> Vec<Vec<u8>> {
    let data = cpu::synthetic_relu2(3000, 0.2, DType::Bf16, 21);
    let raw = Container::raw(&data, DType::Bf16, Options::SIGN_PACK, cpu::compress).unwrap().to_bytes();
    vec![raw, container_sample().1]
}

/// What a mutant with recomputed CRCs is, by the CPU reference: `Ok(decoded)` when it is spec-valid.
fn judge(m: &[u8]) -> Result<Vec<u8>, String> {
    let c = Container::parse(m).map_err(|e| e.to_string())?;
    c.decode(cpu::decompress).map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1024),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Mutants with every CRC recomputed: a spec-valid one parses, re-serialises to the same bytes and
    /// decodes to exactly the length it announces; any other is refused with a typed error (no panic).
    #[test]
    fn mutated_containers_with_recomputed_crcs(seed in 0usize..2, e in edits(), ins in insertion(), c in cut()) {
        let m = recompute_crcs(mutate(container_seeds()[seed].clone(), &e, &ins, c));
        if let Ok(decoded) = judge(&m) {
            let parsed = Container::parse(&m).unwrap();
            prop_assert!(parsed.to_bytes() == m, "a spec-valid container does not re-serialise to its own bytes");
            prop_assert_eq!(decoded.len() as u64, parsed.original_len());
        }
    }
}

/// Mutated containers with recomputed CRCs through the binary (GPU decoder): a spec-valid mutant
/// decompresses to exactly what the CPU reference decodes, a spec-invalid one is exit 1 with one
/// `error:` line naming the file and leaves no output. Deterministic mutants, enough of them that both
/// kinds occur (the test counts them).
#[test]
fn mutated_containers_through_the_cli() {
    if common::vulkan().is_none() {
        eprintln!("skipped: no Vulkan adapter");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_bitsparse");
    let tmp = std::env::temp_dir().join(format!("bitsparse-fuzz-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let seeds = container_seeds();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as usize
    };
    let (mut valid, mut invalid) = (0, 0);
    for case in 0..48 {
        let seed = &seeds[case % seeds.len()];
        // Mostly one or two byte edits (many land in values and stay spec-valid), sometimes a cut.
        let edits: Vec<(usize, u8)> = (0..1 + next() % 2).map(|_| (next(), next() as u8)).collect();
        let cut = (case % 7 == 3).then(|| next());
        let m = recompute_crcs(mutate(seed.clone(), &edits, &None, cut));
        let (inp, out) = (tmp.join(format!("m{case}.bsp")), tmp.join(format!("m{case}.out")));
        std::fs::write(&inp, &m).unwrap();
        let mut c = std::process::Command::new(bin);
        c.env_remove("WGPU_ADAPTER_NAME").env_remove("WGPU_BACKEND");
        let o = c.args(["--backend", "vulkan", "decompress"]).arg(&inp).arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains("panicked") && !err.contains("internal"), "case {case}: {err}");
        match judge(&m) {
            Ok(decoded) => {
                valid += 1;
                assert_eq!(o.status.code(), Some(0), "case {case}: spec-valid mutant refused: {err}");
                assert!(std::fs::read(&out).unwrap() == decoded, "case {case}: GPU and CPU decode differ");
            }
            Err(why) => {
                invalid += 1;
                assert_eq!(o.status.code(), Some(1), "case {case} ({why}): {err}");
                assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "case {case}: {err}");
                assert!(err.contains(&format!("m{case}.bsp")), "case {case}: error does not name the file: {err}");
                assert!(!out.exists(), "case {case}: output left behind");
            }
        }
    }
    assert!(valid >= 5 && invalid >= 5, "too one-sided to test both rules: {valid} valid, {invalid} invalid");
    eprintln!("{valid} spec-valid and {invalid} spec-invalid mutants");
    let _ = std::fs::remove_dir_all(&tmp);
}

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Every corpus file through every parser; `bad-*` refused and `ok-*` accepted by the parser of their
/// extension.
#[test]
fn corpus_replays() {
    let mut n = 0;
    for entry in std::fs::read_dir(corpus_dir()).expect("tests/corpus exists") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        all_parsers(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        agrees_with_the_safetensors_crate(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let parsed: Result<(), String> = match ext {
            "safetensors" => safetensors::parse(&bytes).map(|_| ()).map_err(|e| e.to_string()),
            "npy" => npy::parse(&bytes, None, "t").map(|_| ()).map_err(|e| e.to_string()),
            "bsp" => Container::parse(&bytes).and_then(|c| c.decode(cpu::decompress)).map(|_| ()).map_err(|e| e.to_string()),
            other => panic!("{name}: unknown corpus extension `{other}`"),
        };
        if name.starts_with("bad-") {
            assert!(parsed.is_err(), "{name}: accepted, but it is a bad file");
        } else if name.starts_with("ok-") {
            parsed.unwrap_or_else(|e| panic!("{name}: refused: {e}"));
        } else {
            panic!("{name}: corpus files are named bad-* or ok-*");
        }
        n += 1;
    }
    assert!(n >= 10, "corpus has only {n} files");
}

/// The corpus through the binary: bad files are one `error: ` line and exit 1 (never a panic, never an
/// output file), good dump files analyse and round-trip byte-exactly through compress / decompress.
#[test]
fn corpus_through_the_cli() {
    let gpu = common::vulkan().is_some();
    let bin = env!("CARGO_BIN_EXE_bitsparse");
    let tmp = std::env::temp_dir().join(format!("bitsparse-corpus-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let mut c = std::process::Command::new(bin);
        c.env_remove("WGPU_ADAPTER_NAME").env_remove("WGPU_BACKEND");
        if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
            c.env("XDG_RUNTIME_DIR", "/tmp");
        }
        c.arg("--backend").arg("vulkan").args(args).output().unwrap()
    };
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_string();
        if ext == "md" || (name.starts_with("ok-") && !gpu) {
            continue;
        }
        let out = tmp.join("out");
        let back = tmp.join("back");
        let _ = std::fs::remove_file(&out);
        let o = if ext == "bsp" {
            run(&["decompress".as_ref(), path.as_os_str(), out.as_os_str()])
        } else {
            run(&["analyze".as_ref(), path.as_os_str()])
        };
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains("panicked") && !err.contains("internal"), "{name}: {err}");
        if name.starts_with("bad-") {
            assert_eq!(o.status.code(), Some(1), "{name}: {err}");
            assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{name}: {err}");
            assert!(err.contains(&name), "{name}: error does not name the file: {err}");
            assert!(!out.exists(), "{name}: output written");
            if ext != "bsp" {
                let o = run(&["compress".as_ref(), path.as_os_str(), out.as_os_str()]);
                assert_eq!(o.status.code(), Some(1), "{name}: compress accepted a bad file");
                assert!(!out.exists(), "{name}: output written");
            }
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        if ext != "bsp" {
            assert_eq!(run(&["compress".as_ref(), path.as_os_str(), out.as_os_str()]).status.code(), Some(0), "{name}");
            assert_eq!(run(&["decompress".as_ref(), out.as_os_str(), back.as_os_str()]).status.code(), Some(0), "{name}");
            assert!(std::fs::read(&back).unwrap() == std::fs::read(&path).unwrap(), "{name}: round trip differs");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Regenerates the seed files of the corpus (`cargo test --test fuzz_parsers -- --ignored write_corpus`).
/// Crashing inputs found by fuzzing are added by hand, under a name saying what they broke.
#[test]
#[ignore]
fn write_corpus() {
    let d = corpus_dir();
    std::fs::create_dir_all(&d).unwrap();
    let hdr = |h: &str, data: &[u8]| {
        let mut v = (h.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(h.as_bytes());
        v.extend_from_slice(data);
        v
    };
    let mut lying = st_sample();
    let len = lying.len() as u64;
    lying[..8].copy_from_slice(&len.to_le_bytes());
    let mut huge = st_sample();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    let npy_ok = npy_sample(0);
    let mut npy_lying = npy_ok.clone();
    npy_lying[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    let (_, bsp) = container_sample();
    let mut bsp_flip = bsp.clone();
    let mid = bsp.len() / 2;
    bsp_flip[mid] ^= 1;
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("ok-sample.safetensors", st_sample()),
        ("ok-sample.npy", npy_ok.clone()),
        ("ok-int64.npy", npy_sample(3)),
        ("ok-sample.bsp", bsp.clone()),
        ("ok-empty-header.safetensors", hdr("{}", &[])),
        ("bad-truncated-length.safetensors", vec![1, 2, 3]),
        ("bad-header-past-end.safetensors", lying),
        ("bad-header-length-max.safetensors", huge),
        ("bad-unknown-dtype.safetensors", hdr(r#"{"x":{"dtype":"BF17","shape":[2],"data_offsets":[0,4]}}"#, &[0; 4])),
        ("bad-shape-vs-bytes.safetensors", hdr(r#"{"x":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}"#, &[0; 4])),
        (
            "bad-overlap.safetensors",
            hdr(r#"{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#, &[0; 4]),
        ),
        ("bad-out-of-range.safetensors", hdr(r#"{"x":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}"#, &[0; 4])),
        ("bad-gap.safetensors", hdr(r#"{"x":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#, &[0; 4])),
        ("bad-shape-overflow.safetensors", hdr(r#"{"x":{"dtype":"U8","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}}"#, &[])),
        ("bad-duplicate-name.safetensors", hdr(r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#, &[0; 2])),
        ("bad-subbyte.safetensors", hdr(r#"{"x":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#, &[0; 2])),
        ("bad-header-past-end.npy", npy_lying),
        ("bad-data-short.npy", npy_ok[..npy_ok.len() - 1].to_vec()),
        ("bad-void-without-dtype.npy", npy_sample(1)),
        ("bad-crc.bsp", bsp_flip),
        ("bad-truncated.bsp", bsp[..bsp.len() - 7].to_vec()),
    ];
    for (name, bytes) in files {
        std::fs::write(d.join(name), bytes).unwrap();
    }
}
