//! Fuzzing the parsers that see user files, with proptest: `.safetensors` and `.npy` headers
//! (`bitsparse_files`), the file container (`bitsparse_files::container`) and the tensor stream decoder
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

mod mutants;

use mutants::*;

use bitsparse::{cpu, DType, Options};
use bitsparse_files::container::Container;
use bitsparse_files::{npy, pack, safetensors, Elem, FileError, Kind, ParsedFile};
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
            0 => { let mut v = bitsparse_files::NPY_MAGIC.to_vec(); v.extend_from_slice(&[version, 0]); v }
            1 => (len % 400).to_le_bytes().to_vec(),
            _ => bitsparse_files::container::MAGIC.to_vec(),
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

    /// The same for format-version-2 streams (every tile encoding occurs at these densities): refused
    /// with a typed error or decoded to the length the header announces; no panic, no read outside.
    #[test]
    fn mutated_v2_streams(dtype in 0usize..5, sign_pack in any::<bool>(), rho in prop::sample::select(vec![0.003, 0.05, 0.3, 1.0]), e in edits(), ins in insertion(), c in cut()) {
        let dtype = DType::ALL[dtype];
        let data = cpu::synthetic_relu2(9000, rho, dtype, 11);
        let stream = cpu::compress_v2(&data, dtype, Options { sign_pack }).unwrap();
        let b = mutate(stream, &e, &ins, c);
        if let Ok(out) = cpu::decompress(&b) {
            let info = cpu::validate_any(&b).map_err(|e| TestCaseError::fail(format!("decoded but invalid: {e}")))?;
            prop_assert_eq!(out.len() as u64, info.n * info.dtype.bytes());
            prop_assert_eq!(cpu::decompress(&cpu::compact(&b).unwrap()).unwrap(), out);
        }
        let _ = cpu::compact(&b);
        let _ = cpu::decompress_range(&b, 100, 5000);
    }
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
            "bsp" => {
                Container::parse(&bytes).and_then(|c| c.decode(cpu::decompress)).map(|_| ()).map_err(|e| e.to_string())
            }
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
            hdr(
                r#"{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#,
                &[0; 4],
            ),
        ),
        ("bad-out-of-range.safetensors", hdr(r#"{"x":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}"#, &[0; 4])),
        ("bad-gap.safetensors", hdr(r#"{"x":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#, &[0; 4])),
        (
            "bad-shape-overflow.safetensors",
            hdr(r#"{"x":{"dtype":"U8","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}}"#, &[]),
        ),
        (
            "bad-duplicate-name.safetensors",
            hdr(
                r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
                &[0; 2],
            ),
        ),
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
