//! Golden files of format version 1 (issue 13 part 9): tensor streams (`docs/FORMAT.md` §2–§8) and CLI
//! containers (§13) written once by the CPU reference, committed under `tests/golden/v1/` with the
//! SHA-256 of each file and of the bytes it decodes to (`MANIFEST.txt`). Every later change of the
//! format or of the decoders must keep decoding them to the same bytes.
//!
//! * `golden_v1_manifest_matches_folder`: the manifest lists exactly the files of the folder, which stay
//!   small.
//! * `golden_v1_files_unchanged`: each file's own SHA-256 (nobody rewrote a file to make a test pass).
//! * `golden_v1_cpu_decode`: the CPU reference decodes each file (`cpu::decompress`, or
//!   `Container::parse` + `Container::decode`) to the recorded dtype, sign packing, element count and
//!   SHA-256.
//! * `golden_v1_gpu_decode`: the same on the GPU (`host::decompress_to_vec`, and the chunked streams also
//!   as `Placement::Chunked` straight through `Codec::decompress`). No adapter: ignored, or a failure
//!   under `CI=true` (`tests/common/harness.rs`).
//! * `golden_v1_bit_flips_detected`: single-bit flips in every file are refused with a typed error or
//!   decode to something else; the only flips allowed to decode to the same thing are those in bits
//!   the format leaves unchecked (§8), and the test names them.
//! * `golden_v1_regenerate` (ignored): the generator. See `tests/golden/v1/README.md`: never run it to
//!   make a failing decode pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bitsparse::format::{self, HEADER_WORDS, TILE, TILE_MASK_WORDS};
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, host, BufferRange, Codec, DType, Error, Options, Placement};
use bitsparse_files::container::{Container, RecordKind};
use sha2::{Digest, Sha256};

use crate::common::harness::{cpu_test, vulkan_test, Test};

/// Why `golden_v1_regenerate` is ignored.
const REGENERATE: &str = "writes tests/golden/v1: run by hand only, never to make a failing decode pass (README.md)";

pub fn tests() -> Vec<Test> {
    vec![
        cpu_test!(golden_v1_manifest_matches_folder),
        cpu_test!(golden_v1_files_unchanged),
        cpu_test!(golden_v1_cpu_decode),
        vulkan_test!(golden_v1_gpu_decode),
        cpu_test!(golden_v1_bit_flips_detected),
        cpu_test!(golden_v1_regenerate).ignore(REGENERATE),
    ]
}

const MANIFEST: &str = "MANIFEST.txt";
const MAX_FILE_BYTES: u64 = 64 * 1024;
const MAX_TOTAL_BYTES: u64 = 400 * 1024;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1")
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Stream,
    Container,
}

/// What a file decodes to: per tensor (one for a stream, one per tensor record of a container) its
/// dtype, sign packing and element count, and the SHA-256 of all the decoded bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Decoded {
    tensors: Vec<(DType, bool, u64)>,
    sha256: String,
}

/// One line of the manifest.
#[derive(Clone, Debug)]
struct Entry {
    file: String,
    kind: Kind,
    expect: Decoded,
    file_sha256: String,
}

// ----------------------------------------------------------------------------------------------------
// Manifest: `file kind dtype sign_pack elements decoded_sha256 file_sha256`, whitespace-separated, `#`
// comments. For a container the dtype, sign_pack and elements columns are comma-separated lists with one
// item per tensor record in file order (`-` when it has none).

fn list(items: impl IntoIterator<Item = String>) -> String {
    let v: Vec<String> = items.into_iter().collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(",")
    }
}

fn manifest_line(file: &str, kind: Kind, d: &Decoded, file_sha256: &str) -> String {
    let kind = match kind {
        Kind::Stream => "stream",
        Kind::Container => "container",
    };
    format!(
        "{file} {kind} {} {} {} {} {file_sha256}",
        list(d.tensors.iter().map(|t| t.0.name().to_string())),
        list(d.tensors.iter().map(|t| (t.1 as u8).to_string())),
        list(d.tensors.iter().map(|t| t.2.to_string())),
        d.sha256,
    )
}

fn parse_list<T>(s: &str, f: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    if s == "-" {
        return Some(Vec::new());
    }
    s.split(',').map(f).collect()
}

fn manifest() -> Vec<Entry> {
    let path = dir().join(MANIFEST);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| -> ! { panic!("{MANIFEST} line {}: {what}: `{line}`", i + 1) };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 7 {
            bad("expected 7 columns");
        }
        let kind = match f[1] {
            "stream" => Kind::Stream,
            "container" => Kind::Container,
            _ => bad("kind must be stream or container"),
        };
        let dtypes = parse_list(f[2], DType::from_name).unwrap_or_else(|| bad("dtype"));
        let packs = parse_list(f[3], |s| match s {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        })
        .unwrap_or_else(|| bad("sign_pack"));
        let elems = parse_list(f[4], |s| s.parse::<u64>().ok()).unwrap_or_else(|| bad("elements"));
        if dtypes.len() != packs.len() || dtypes.len() != elems.len() || (kind == Kind::Stream && dtypes.len() != 1) {
            bad("dtype, sign_pack and elements lists differ in length");
        }
        let hex = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        if !hex(f[5]) || !hex(f[6]) {
            bad("a SHA-256 is not 64 lower-case hex digits");
        }
        let tensors = dtypes.into_iter().zip(packs).zip(elems).map(|((d, p), n)| (d, p, n)).collect();
        out.push(Entry {
            file: f[0].to_string(),
            kind,
            expect: Decoded { tensors, sha256: f[5].to_string() },
            file_sha256: f[6].to_string(),
        });
    }
    assert!(!out.is_empty(), "{MANIFEST} lists no files");
    out
}

fn read(e: &Entry) -> Vec<u8> {
    let path = dir().join(&e.file);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

// ----------------------------------------------------------------------------------------------------
// Decoding.

/// Decodes a stream with `decompress`, reading dtype, sign packing and count from its validated header.
fn decode_stream(
    bytes: &[u8],
    decompress: impl FnOnce(&[u8]) -> bitsparse::Result<Vec<u8>>,
) -> bitsparse::Result<Decoded> {
    let (layout, _) = cpu::validate(bytes)?;
    let out = decompress(bytes)?;
    Ok(Decoded { tensors: vec![(layout.dtype, layout.options.sign_pack, layout.n)], sha256: sha256_hex(&out) })
}

/// Parses a container and decodes every record, tensor records with `decompress`.
fn decode_container(
    bytes: &[u8],
    decompress: impl FnMut(&[u8]) -> bitsparse::Result<Vec<u8>>,
) -> bitsparse::Result<Decoded> {
    let c = Container::parse(bytes)?;
    let tensors = c
        .records
        .iter()
        .filter_map(|r| match r.kind {
            RecordKind::Tensor { dtype, elements, sign_pack } => Some((dtype, sign_pack, elements)),
            RecordKind::Verbatim => None,
        })
        .collect();
    let out = c.decode(decompress)?;
    Ok(Decoded { tensors, sha256: sha256_hex(&out) })
}

fn decode_cpu(kind: Kind, bytes: &[u8]) -> bitsparse::Result<Decoded> {
    match kind {
        Kind::Stream => decode_stream(bytes, cpu::decompress),
        Kind::Container => decode_container(bytes, cpu::decompress),
    }
}

// ----------------------------------------------------------------------------------------------------
// Tests.

fn golden_v1_manifest_matches_folder() {
    let entries = manifest();
    let listed: BTreeMap<&str, &Entry> = entries.iter().map(|e| (e.file.as_str(), e)).collect();
    assert_eq!(listed.len(), entries.len(), "a file is listed twice in {MANIFEST}");
    let mut on_disk = Vec::new();
    let mut total = 0u64;
    for ent in std::fs::read_dir(dir()).expect("tests/golden/v1") {
        let ent = ent.unwrap();
        let name = ent.file_name().into_string().expect("UTF-8 file name");
        if name == MANIFEST || name == "README.md" {
            continue;
        }
        let len = ent.metadata().unwrap().len();
        assert!(len < MAX_FILE_BYTES, "{name}: {len} bytes, golden files stay under {MAX_FILE_BYTES}");
        total += len;
        on_disk.push(name);
    }
    on_disk.sort();
    assert_eq!(
        on_disk,
        listed.keys().map(|s| s.to_string()).collect::<Vec<_>>(),
        "files in tests/golden/v1 vs {MANIFEST}"
    );
    assert!(total < MAX_TOTAL_BYTES, "golden files total {total} bytes, the budget is {MAX_TOTAL_BYTES}");
    // The coverage the README promises.
    for dtype in DType::ALL {
        for sign_pack in [false, true] {
            assert!(
                entries.iter().any(|e| e.kind == Kind::Stream
                    && e.expect.tensors[0].0 == dtype
                    && e.expect.tensors[0].1 == sign_pack),
                "no {dtype} stream with sign_pack={sign_pack}"
            );
        }
    }
    assert!(entries.iter().any(|e| e.kind == Kind::Container), "no container");
}

fn golden_v1_files_unchanged() {
    let entries = manifest();
    let mut changed = Vec::new();
    for e in &entries {
        let got = sha256_hex(&read(e));
        if got != e.file_sha256 {
            changed.push(format!("{}: SHA-256 {got}, manifest {}", e.file, e.file_sha256));
        }
    }
    assert!(
        changed.is_empty(),
        "golden files were modified (never rewrite them, see README.md):\n{}",
        changed.join("\n")
    );
    println!("golden_v1: {} files unchanged", entries.len());
}

fn golden_v1_cpu_decode() {
    let entries = manifest();
    let mut bad = Vec::new();
    for e in &entries {
        match decode_cpu(e.kind, &read(e)) {
            Ok(d) if d == e.expect => {}
            Ok(d) => bad.push(format!("{}: decoded to {d:?}, manifest {:?}", e.file, e.expect)),
            Err(err) => bad.push(format!("{}: refused: {err}", e.file)),
        }
    }
    assert!(bad.is_empty(), "CPU decode of golden v1 files:\n{}", bad.join("\n"));
    println!("golden_v1: {} files decode on the CPU to their recorded SHA-256", entries.len());
}

/// The chunk size of a stream placed as a chunked GPU compress places it (`cpu::place_chunked`), or
/// None for a compact stream.
fn chunk_tiles_of(stream: &[u8]) -> Option<u64> {
    let compact = cpu::compact(stream).expect("valid stream");
    if compact == stream {
        return None;
    }
    let (layout, _) = cpu::validate(stream).unwrap();
    (1..=layout.tiles).find(|&c| cpu::place_chunked(&compact, c).ok().as_deref() == Some(stream))
}

/// Decodes a chunked stream as it lies, gaps included: `Codec::decompress` with `Placement::Chunked`.
fn gpu_decode_chunked(
    ctx: &bitsparse::host::context::GpuContext,
    codec: &Codec,
    stream: &[u8],
    chunk_tiles: u64,
) -> bitsparse::Result<Vec<u8>> {
    use wgpu::util::DeviceExt;
    let (layout, _) = cpu::validate(stream)?;
    let mut contents = stream.to_vec();
    contents.resize(contents.len().next_multiple_of(4) + 64, 0);
    let buffer = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("golden.chunked"),
        contents: &contents,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let dense = layout.dense_bytes();
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("golden.out"),
        size: dense.next_multiple_of(4).max(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let c = bitsparse::Compressed {
        layout,
        buffer,
        offset: 0,
        size: stream.len() as u64,
        placement: Placement::Chunked { chunk_tiles },
    };
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    codec.decompress(&mut enc, &c, BufferRange::new(&out, 0, dense))?;
    sync::submit(&ctx.queue, [enc.finish()]);
    sync::read_buffer(&ctx.device, &ctx.queue, &out, 0, dense)
}

fn golden_v1_gpu_decode(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).expect("codec");
    let gpu = |s: &[u8]| host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, s);
    let entries = manifest();
    let mut bad = Vec::new();
    let mut chunked = 0;
    for e in &entries {
        let bytes = read(e);
        let got = match e.kind {
            Kind::Stream => decode_stream(&bytes, gpu),
            Kind::Container => decode_container(&bytes, gpu),
        };
        match got {
            Ok(d) if d == e.expect => {}
            Ok(d) => bad.push(format!("{}: GPU decoded to {d:?}, manifest {:?}", e.file, e.expect)),
            Err(err) => bad.push(format!("{}: GPU refused: {err}", e.file)),
        }
        // `host::decompress_to_vec` compacts a gapped stream on the host first; decode the chunked
        // placement itself too.
        if e.kind == Kind::Stream {
            if let Some(c) = chunk_tiles_of(&bytes) {
                chunked += 1;
                match decode_stream(&bytes, |s| gpu_decode_chunked(&ctx, &codec, s, c)) {
                    Ok(d) if d == e.expect => {}
                    Ok(d) => bad.push(format!("{}: GPU (Placement::Chunked {c}) decoded to {d:?}", e.file)),
                    Err(err) => bad.push(format!("{}: GPU (Placement::Chunked {c}) refused: {err}", e.file)),
                }
            }
        }
    }
    assert!(bad.is_empty(), "GPU decode of golden v1 files:\n{}", bad.join("\n"));
    assert!(chunked > 0, "no chunked stream among the golden files");
    println!("golden_v1: {} files decode on the GPU to their recorded SHA-256 ({chunked} chunked streams also as Placement::Chunked)", entries.len());
}

/// Bit positions of a stream that §8 leaves unchecked, so that flipping one may decode to the same
/// tensor:
/// * `AMAX` and `SCALE`;
/// * the table entries of empty tiles (only bounded by `VALUE_WORDS`, §8 rules 9–10);
/// * values-section bits outside every tile's values (a stream's padding, gaps between chunks);
/// * a clear mask bit after the last nonzero element of its tile: set, it adds one value at the end of
///   the tile's stream, read from the padding or gap bits that follow (zero, as writers write them),
///   and version 1 does not require a stored value to be nonzero, so the element decodes to zero as
///   before.
fn unchecked_stream_bits(stream: &[u8]) -> impl Fn(usize) -> bool {
    let (layout, _) = cpu::validate(stream).expect("valid stream");
    let word = |i: u64| u32::from_le_bytes(stream[i as usize * 4..i as usize * 4 + 4].try_into().unwrap());
    let width = layout.value_width() as u64;
    let values_bit = layout.values_offset * 32;
    let mask_bit = layout.mask_offset * 32;
    let mask_is_set = |e: u64| word(layout.mask_offset + e / 32) >> (e % 32) & 1 == 1;
    let mut used = Vec::new();
    let mut empty_tiles = Vec::new();
    // Per tile: the first element after its last nonzero one (the tile's first element when empty).
    let mut after_last = Vec::new();
    for t in 0..layout.tiles {
        let m0 = layout.mask_offset + t * TILE_MASK_WORDS as u64;
        let m1 = (m0 + TILE_MASK_WORDS as u64).min(layout.values_offset);
        let count: u64 = (m0..m1).map(|i| word(i).count_ones() as u64).sum();
        let first = t * TILE as u64;
        let end = (first + TILE as u64).min(layout.n);
        after_last.push((first..end).rev().find(|&e| mask_is_set(e)).map_or(first, |e| e + 1));
        if count == 0 {
            empty_tiles.push(t);
        } else {
            let start = values_bit + word(HEADER_WORDS as u64 + t) as u64 * 32;
            used.push(start..start + count * width);
        }
    }
    let amax = format::hdr::AMAX * 32..(format::hdr::SCALE + 1) * 32;
    let n = layout.n;
    move |bit: usize| {
        let b = bit as u64;
        let mask_tail = b >= mask_bit && b < values_bit && {
            let e = b - mask_bit;
            e < n && e >= after_last[(e / TILE as u64) as usize]
        };
        amax.contains(&bit)
            || empty_tiles.iter().any(|&t| (b / 32) == HEADER_WORDS as u64 + t)
            || (b >= values_bit && !used.iter().any(|r| r.contains(&b)))
            || mask_tail
    }
}

/// The bits to flip in a file of `len` bytes: every bit of the first 256 bytes (headers, tables, the
/// start of a container's first record) and about 2048 more spread over the rest.
fn flip_positions(len: usize) -> Vec<usize> {
    let bits = len * 8;
    let mut v: Vec<usize> = (0..bits.min(256 * 8)).collect();
    if bits > 256 * 8 {
        let rest = bits - 256 * 8;
        let step = (rest / 2048).max(1);
        // An odd offset inside each step, so that the bit within the byte varies.
        v.extend((0..rest).step_by(step).enumerate().map(|(i, b)| 256 * 8 + (b + (i * 7919) % step).min(rest - 1)));
    }
    v.dedup();
    v
}

fn golden_v1_bit_flips_detected() {
    let entries = manifest();
    let mut bad = Vec::new();
    let mut summary = Vec::new();
    for e in &entries {
        let bytes = read(e);
        // The unflipped file must decode as recorded, or every flip would trivially "differ".
        match decode_cpu(e.kind, &bytes) {
            Ok(d) if d == e.expect => {}
            other => {
                bad.push(format!("{}: the unflipped file does not decode as recorded: {other:?}", e.file));
                continue;
            }
        }
        let unchecked: Box<dyn Fn(usize) -> bool> = match e.kind {
            Kind::Stream => Box::new(unchecked_stream_bits(&bytes)),
            // Every container byte is under a CRC (header, record header and name, stored bytes, decoded
            // bytes): no flip may get through.
            Kind::Container => Box::new(|_| false),
        };
        let (mut refused, mut different, mut harmless) = (0u32, 0u32, 0u32);
        for bit in flip_positions(bytes.len()) {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode_cpu(e.kind, &b)));
            match got {
                Err(_) => bad.push(format!("{}: bit {bit} (byte {}): decoding panicked", e.file, bit / 8)),
                Ok(Err(Error::Corrupt(_) | Error::SignBitSet { .. })) => refused += 1,
                Ok(Err(err)) => bad.push(format!("{}: bit {bit}: unexpected error kind {err:?}", e.file)),
                Ok(Ok(d)) if d != e.expect => different += 1,
                Ok(Ok(_)) if unchecked(bit) => harmless += 1,
                Ok(Ok(_)) => {
                    bad.push(format!("{}: bit {bit} (byte {}) flipped, yet the same tensor decodes", e.file, bit / 8))
                }
            }
        }
        if e.kind == Kind::Container && different > 0 {
            bad.push(format!("{}: {different} flips decoded to other bytes past the container's CRCs", e.file));
        }
        summary.push(format!(
            "{}: {refused} refused, {different} decode differently, {harmless} in unchecked bits",
            e.file
        ));
    }
    println!("{}", summary.join("\n"));
    assert!(bad.is_empty(), "bit flips in golden v1 files:\n{}", bad.join("\n"));
}

// ----------------------------------------------------------------------------------------------------
// The generator. Run once, by hand, when the folder was created:
//   cargo test --release --test gpu -- --ignored golden_v1_regenerate
// Never to make a failing decode pass (README.md).

/// `data` (elements of `dtype`) with `specials` written over its first elements.
fn with_specials(mut data: Vec<u8>, dtype: DType, specials: &[u16]) -> Vec<u8> {
    let eb = dtype.bytes() as usize;
    for (i, &s) in specials.iter().enumerate() {
        data[i * eb..(i + 1) * eb].copy_from_slice(&s.to_le_bytes()[..eb]);
    }
    data
}

/// `data` (F32) with its first elements replaced by `specials`.
fn with_specials32(mut data: Vec<u8>, specials: &[u32]) -> Vec<u8> {
    for (i, &s) in specials.iter().enumerate() {
        data[i * 4..(i + 1) * 4].copy_from_slice(&s.to_le_bytes());
    }
    data
}

/// `data` with elements `[from, to)` set to zero.
fn zeroed(mut data: Vec<u8>, dtype: DType, from: usize, to: usize) -> Vec<u8> {
    let eb = dtype.bytes() as usize;
    data[from * eb..to * eb].fill(0);
    data
}

/// The stream files: name, dtype, options, the dense data, and how the stream is derived from the
/// compact one (chunk size; header AMAX/SCALE).
struct StreamSpec {
    name: &'static str,
    dtype: DType,
    options: Options,
    data: Vec<u8>,
    chunk_tiles: Option<u64>,
    amax_scale: Option<(u32, u32)>,
}

fn stream_specs() -> Vec<StreamSpec> {
    use DType::*;
    let plain = Options::default();
    let pack = Options::SIGN_PACK;
    let s = |name, dtype, options, data| StreamSpec { name, dtype, options, data, chunk_tiles: None, amax_scale: None };
    // Special bit patterns first in each file. Unpacked: −0.0, NaNs with payloads of both signs, ±inf,
    // subnormals of both signs, all ones. Sign-packed (no sign bit allowed): +NaN payloads, +inf,
    // positive subnormals, the largest finite value.
    let bf16_sp = [0x8000, 0x7FC1, 0xFFC1, 0x7F81, 0x7F80, 0xFF80, 0x0001, 0x8001, 0x007F, 0xFFFF, 0x7FFF];
    let bf16_pk = [0x7FC1, 0x7F81, 0x7FFF, 0x7F80, 0x0001, 0x007F, 0x7F7F];
    let f16_sp = [0x8000, 0x7E01, 0xFE01, 0x7C01, 0x7C00, 0xFC00, 0x0001, 0x8001, 0x03FF, 0xFFFF];
    let f16_pk = [0x7E01, 0x7C01, 0x7FFF, 0x7C00, 0x0001, 0x03FF, 0x7BFF];
    let e4_sp = [0x80, 0xFF, 0x7F, 0x01, 0x81, 0x07, 0x87, 0xFE, 0x7E];
    let e4_pk = [0x7F, 0x01, 0x07, 0x7E, 0x08];
    let e5_sp = [0x80, 0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFF, 0xFD, 0x01, 0x81, 0x03];
    let e5_pk = [0x7C, 0x7D, 0x7E, 0x7F, 0x01, 0x03, 0x7B];
    let mut v = vec![
        // Every dtype, unpacked (random bits of either sign) and sign-packed (ReLU² data); lengths that
        // end inside a tile and inside a mask word.
        s(
            "bf16-bits-n5330.bspt",
            Bf16,
            plain,
            with_specials(cpu::synthetic_bits(5330, 0.3, Bf16, 101), Bf16, &bf16_sp),
        ),
        s(
            "bf16-relu2-packed-n4097.bspt",
            Bf16,
            pack,
            with_specials(cpu::synthetic_relu2(4097, 0.176, Bf16, 102), Bf16, &bf16_pk),
        ),
        s("f16-bits-n4133.bspt", F16, plain, with_specials(cpu::synthetic_bits(4133, 0.5, F16, 103), F16, &f16_sp)),
        s(
            "f16-relu2-packed-n8191.bspt",
            F16,
            pack,
            with_specials(cpu::synthetic_relu2(8191, 0.05, F16, 104), F16, &f16_pk),
        ),
        s("e4m3-bits-n4099.bspt", E4m3, plain, with_specials(cpu::synthetic_bits(4099, 0.3, E4m3, 105), E4m3, &e4_sp)),
        s(
            "e4m3-relu2-packed-n9000.bspt",
            E4m3,
            pack,
            with_specials(cpu::synthetic_relu2(9000, 0.176, E4m3, 106), E4m3, &e4_pk),
        ),
        s(
            "e5m2-bits-n4200.bspt",
            E5m2,
            plain,
            with_specials(cpu::synthetic_bits(4200, 0.176, E5m2, 107), E5m2, &e5_sp),
        ),
        s(
            "e5m2-relu2-packed-n5000.bspt",
            E5m2,
            pack,
            with_specials(cpu::synthetic_relu2(5000, 0.5, E5m2, 108), E5m2, &e5_pk),
        ),
        // Edge cases: no elements; one element (−0.0); nothing but zeros; every element nonzero in one
        // full tile; empty tiles between full ones.
        s("bf16-empty-n0.bspt", Bf16, plain, Vec::new()),
        s("e5m2-empty-packed-n0.bspt", E5m2, pack, Vec::new()),
        s("bf16-negzero-n1.bspt", Bf16, plain, 0x8000u16.to_le_bytes().to_vec()),
        s("f16-zeros-n4097.bspt", F16, plain, vec![0; 4097 * 2]),
        s("e4m3-dense-packed-n4096.bspt", E4m3, pack, cpu::synthetic_relu2(4096, 1.0, E4m3, 109)),
        s(
            "bf16-emptytiles-n16385.bspt",
            Bf16,
            plain,
            zeroed(cpu::synthetic_relu2(16385, 0.01, Bf16, 110), Bf16, 4096, 3 * 4096),
        ),
    ];
    // Chunked placements (`docs/FORMAT.md` §7): gaps between chunks, absolute table offsets; the first
    // with an empty tile whose table entry is its chunk's base.
    v.push(StreamSpec {
        chunk_tiles: Some(1),
        ..s(
            "bf16-chunked1-n12293.bspt",
            Bf16,
            plain,
            zeroed(cpu::synthetic_relu2(3 * 4096 + 5, 0.05, Bf16, 111), Bf16, 4096, 2 * 4096),
        )
    });
    v.push(StreamSpec {
        chunk_tiles: Some(2),
        ..s("e4m3-chunked2-packed-n20580.bspt", E4m3, pack, cpu::synthetic_relu2(5 * 4096 + 100, 0.176, E4m3, 112))
    });
    // FP8 storage (header AMAX / SCALE set, §3): ReLU² BF16 activations quantized to e4m3 with the
    // delayed scale from their amax, as the FP8-storage GPU path records them.
    let r = cpu::synthetic_relu2(6000, 0.3, Bf16, 113);
    let amax = cpu::fp8::amax_bits(&r);
    let scale = cpu::fp8::delayed_scale(amax, E4m3);
    v.push(StreamSpec {
        amax_scale: Some((amax, scale.to_bits())),
        ..s("e4m3-fp8storage-packed-n6000.bspt", E4m3, pack, cpu::fp8::quantize(&r, scale, E4m3))
    });
    // F32 (dtype code 4, added after the files above, which it leaves unchanged): unpacked with −0.0, NaN
    // payloads of both signs, ±inf, subnormals of both signs, all ones, words with a zero 16-bit half;
    // sign-packed (31-bit values) with positive specials; and a chunked sign-packed placement.
    let f32_pk =
        [0x7FC0_0001, 0x7F80_0001, 0x7FFF_FFFF, 0x7F80_0000, 0x0000_0001, 0x007F_FFFF, 0x7F7F_FFFF, 0x0000_FFFF];
    v.push(s(
        "f32-bits-n4500.bspt",
        F32,
        plain,
        with_specials32(cpu::synthetic_bits(4500, 0.3, F32, 114), &cpu::SPECIAL32),
    ));
    v.push(s(
        "f32-relu2-packed-n5000.bspt",
        F32,
        pack,
        with_specials32(cpu::synthetic_relu2(5000, 0.176, F32, 115), &f32_pk),
    ));
    v.push(StreamSpec {
        chunk_tiles: Some(1),
        ..s(
            "f32-chunked1-packed-n8200.bspt",
            F32,
            pack,
            zeroed(cpu::synthetic_relu2(2 * 4096 + 8, 0.05, F32, 116), F32, 0, 4096),
        )
    });
    v
}

fn make_stream(spec: &StreamSpec) -> Vec<u8> {
    let mut stream =
        cpu::compress(&spec.data, spec.dtype, spec.options).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    if let Some(c) = spec.chunk_tiles {
        stream = cpu::place_chunked(&stream, c).unwrap();
        assert!(stream != cpu::compact(&stream).unwrap(), "{}: the chunked placement has no gap", spec.name);
    }
    if let Some((amax, scale)) = spec.amax_scale {
        stream[format::hdr::AMAX * 4..format::hdr::AMAX * 4 + 4].copy_from_slice(&amax.to_le_bytes());
        stream[format::hdr::SCALE * 4..format::hdr::SCALE * 4 + 4].copy_from_slice(&scale.to_le_bytes());
    }
    stream
}

/// The container files: name, bytes.
fn containers() -> Vec<(&'static str, Vec<u8>)> {
    use bitsparse_files::{pack, safetensors, Kind as FileKind, ParsedFile};
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("files/tests/corpus");
    let dump = |bytes: &[u8], kind: FileKind, name: &str| {
        let mut parsed = ParsedFile::parse(bytes, kind, None, name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        // These containers were written when F32 was not an activation dtype yet and was stored
        // verbatim; they are regenerated as they were (F32 records verbatim), byte-identical.
        for t in &mut parsed.tensors {
            if t.elem == bitsparse_files::Elem::Act(DType::F32) {
                t.elem = bitsparse_files::Elem::Other("F32, verbatim in the containers of this folder".into());
            }
        }
        let (c, _) = pack::to_container(&parsed, bytes, Options::SIGN_PACK, cpu::compress)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        c.to_bytes()
    };
    let raw = |data: &[u8], dtype, options| Container::raw(data, dtype, options, cpu::compress).unwrap().to_bytes();
    // A dump as a training run writes one: activations of each dtype (sign-packable or not), F32 and
    // integer tensors (kept verbatim), an empty tensor, metadata.
    let act = cpu::synthetic_relu2(9000, 0.176, DType::Bf16, 121);
    let pre = cpu::synthetic_bits(3000, 0.4, DType::F16, 122);
    let act8 = cpu::synthetic_relu2(5000, 0.3, DType::E4m3, 123);
    let grad8 = cpu::synthetic_bits(700, 0.2, DType::E5m2, 124);
    let f32s: Vec<u8> = (0..16u32).flat_map(|i| (i as f32 * 0.25 - 1.0).to_le_bytes()).collect();
    let ids: Vec<u8> = (0..4u64).flat_map(|i| (i * 1000 + 7).to_le_bytes()).collect();
    let st = safetensors::write(
        &[
            ("ffn.0.act", "BF16", &[2, 4500], &act),
            ("ffn.0.pre", "F16", &[3000], &pre),
            ("ffn.1.act", "F8_E4M3", &[50, 100], &act8),
            ("ffn.1.grad", "F8_E5M2", &[700], &grad8),
            ("norm.scale", "F32", &[16], &f32s),
            ("token_ids", "I64", &[4], &ids),
            ("empty", "BF16", &[0, 8], &[]),
        ],
        Some(&[("format", "pt"), ("source", "tests/golden_v1.rs")]),
    );
    vec![
        (
            "raw-bf16-packed-n10000.bsp",
            raw(&cpu::synthetic_relu2(10_000, 0.176, DType::Bf16, 125), DType::Bf16, Options::SIGN_PACK),
        ),
        (
            "raw-e5m2-bits-n3000.bsp",
            raw(&cpu::synthetic_bits(3000, 0.3, DType::E5m2, 126), DType::E5m2, Options::default()),
        ),
        ("dump-synthetic.safetensors.bsp", dump(&st, FileKind::Safetensors, "synthetic")),
        (
            "dump-ok-sample.safetensors.bsp",
            dump(&std::fs::read(corpus.join("ok-sample.safetensors")).unwrap(), FileKind::Safetensors, "ok-sample"),
        ),
        (
            "dump-ok-sample.npy.bsp",
            dump(&std::fs::read(corpus.join("ok-sample.npy")).unwrap(), FileKind::Npy, "ok-sample"),
        ),
    ]
}

fn golden_v1_regenerate() {
    let d = dir();
    std::fs::create_dir_all(&d).unwrap();
    #[allow(clippy::type_complexity)]
    let mut files: Vec<(String, Kind, Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    for spec in stream_specs() {
        files.push((spec.name.to_string(), Kind::Stream, make_stream(&spec), Some(spec.data.clone())));
    }
    for (name, bytes) in containers() {
        files.push((name.to_string(), Kind::Container, bytes, None));
    }
    let mut text = String::from(
        "# Golden format-v1 files: see README.md. Written by golden_v1_regenerate (tests/golden_v1.rs); checked by tests/golden_v1.rs.\n\
         # Containers: dtype, sign_pack and elements list the tensor records in file order (- for none).\n\
         # file kind dtype sign_pack elements decoded_sha256 file_sha256\n",
    );
    for (name, kind, bytes, dense) in &files {
        let d =
            decode_cpu(*kind, bytes).unwrap_or_else(|e| panic!("{name}: the CPU does not decode what it wrote: {e}"));
        if let Some(dense) = dense {
            assert_eq!(d.sha256, sha256_hex(dense), "{name}: round trip");
        }
        std::fs::write(dir().join(name), bytes).unwrap();
        text += &manifest_line(name, *kind, &d, &sha256_hex(bytes));
        text.push('\n');
        println!("{name}: {} bytes", bytes.len());
    }
    std::fs::write(d.join(MANIFEST), text).unwrap();
}
