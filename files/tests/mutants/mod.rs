//! Inputs for the fuzzing of the container and dump parsers, shared by `files/tests/fuzz_parsers.rs`
//! (in-process properties) and `cli/tests/cli/cli_fuzz.rs` (the same mutants through the binary).
#![allow(dead_code)]

use bitsparse::{cpu, DType, Options};
use bitsparse_files::container::Container;
use bitsparse_files::{npy, pack, safetensors};

pub fn st_sample() -> Vec<u8> {
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

pub fn npy_sample(which: u8) -> Vec<u8> {
    match which % 4 {
        0 => npy::write("<f2", &[5, 20], &cpu::synthetic_relu2(100, 0.3, DType::F16, 3)),
        1 => npy::write("|V2", &[70], &cpu::synthetic_relu2(70, 0.3, DType::Bf16, 4)),
        2 => npy::write("<f4", &[3, 3], &[0x3f; 36]),
        _ => npy::write("<i8", &[2], &[9; 16]),
    }
}

pub fn container_sample() -> (Vec<u8>, Vec<u8>) {
    let st = st_sample();
    let p = safetensors::parse(&st).unwrap();
    let (c, _) = pack::to_container(&p, &st, Options::SIGN_PACK, cpu::compress).unwrap();
    (st, c.to_bytes())
}

/// Applies overwrites, an insertion and a cut (all positions taken modulo the length).
pub fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], insert: &Option<(usize, Vec<u8>)>, cut: Option<usize>) -> Vec<u8> {
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

/// Makes every CRC of a (mutated) container agree with its bytes again, as far as its lengths allow:
/// the header CRC, each record's stored-bytes CRC and header CRC, and — where the stored bytes decode
/// (verbatim records always; tensor records through the CPU decoder) — the decoded bytes' CRC. What is
/// left is a container that only the format's other rules can refuse: a mutant that passes them is
/// spec-valid, and must round-trip.
pub fn recompute_crcs(mut b: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash;
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
        let Some(end) =
            usize::try_from(stored_len).ok().and_then(|l| name_end.checked_add(l)).filter(|&e| e <= b.len())
        else {
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

/// A raw-file container (one tensor record) and a dump container (header, tensors, verbatim records),
/// to mutate.
pub fn container_seeds() -> Vec<Vec<u8>> {
    let data = cpu::synthetic_relu2(3000, 0.2, DType::Bf16, 21);
    let raw = Container::raw(&data, DType::Bf16, Options::SIGN_PACK, cpu::compress).unwrap().to_bytes();
    vec![raw, container_sample().1]
}

/// What a mutant with recomputed CRCs is, by the CPU reference: `Ok(decoded)` when it is spec-valid.
pub fn judge(m: &[u8]) -> Result<Vec<u8>, String> {
    let c = Container::parse(m).map_err(|e| e.to_string())?;
    c.decode(cpu::decompress).map_err(|e| e.to_string())
}

pub fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../files/tests/corpus")
}
