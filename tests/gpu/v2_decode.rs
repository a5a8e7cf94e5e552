//! The GPU decoder of format version 2 (`shaders/decompress_v2.wgsl`, `Codec::decompress_v2`,
//! `host::decompress_to_vec`) against the CPU reference: every dtype and sign mode over the conformance
//! densities and lengths, i.i.d. ReLU² data (which exercises every tile encoding and the exponent code),
//! tile-start directories with shuffled tiles and gaps, 2-D grids (lowered workgroup limit), pieces
//! (lowered binding limit), the typed errors of the API, and wgpu's GL backend — each through every
//! decoder (`V2Decoder::OnePass`, `V2Decoder::Indexed` with mask tiles' masks copied or left in the
//! stream); and the two-pass decoder's first pass alone against its CPU port (`cpu::v2::index`).

use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::format::v2::{enc, LayoutV2, TileDesc};
use bitsparse::host::context::GpuContext;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, DType, Error, Options, V2Decoder};

use crate::common::data;
use crate::common::harness::{gl_test, vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(v2_gpu_decode_matrix),
        vulkan_test!(v2_gpu_decode_relu2_every_encoding),
        vulkan_test!(v2_gpu_decode_tile_starts_shuffled),
        vulkan_test!(v2_gpu_decode_positions_every_low_width),
        vulkan_test!(v2_gpu_decode_2d_grid_and_pieces),
        vulkan_test!(v2_gpu_decode_api_errors),
        vulkan_test!(v2_gpu_index_pass_matches_cpu_port),
        gl_test!(v2_gl_decode_matrix),
    ]
}

const LONG: usize = 17 * 4096 + 77;

/// `config` with each version-2 decoder, named: one pass, and two passes with mask tiles' masks copied
/// by the index pass or read from the stream by the second (`decompress_v2.MASK_FROM_STREAM`), or with
/// each mask word's rank from the first pass (`decompress_v2.RANKS`).
fn decoders(ctx: &GpuContext, config: CodecConfig) -> Vec<(Codec, &'static str)> {
    [
        (V2Decoder::OnePass, None, "one-pass"),
        (V2Decoder::Indexed, None, "indexed"),
        (V2Decoder::Indexed, Some("decompress_v2.MASK_FROM_STREAM=1"), "indexed, masks from the stream"),
        (V2Decoder::Indexed, Some("decompress_v2.RANKS=1"), "indexed, ranks from the first pass"),
    ]
    .into_iter()
    .map(|(d, k, name)| {
        let c = CodecConfig { v2_decoder: Some(d), kernel_constants: k.map(Into::into), ..config.clone() };
        (Codec::with_config(&ctx.device, c).unwrap(), name)
    })
    .collect()
}

fn check(codec: &Codec, ctx: &GpuContext, stream: &[u8], want: &[u8], what: &str) {
    let got = host::decompress_to_vec(codec, &ctx.device, &ctx.queue, stream).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!("{what}: first differing byte {i} (got {:#04x}, want {:#04x})", got[i], want[i]);
    }
}

fn matrix(ctx: &GpuContext, codec: &Codec, name: &str) {
    for dtype in DType::ALL {
        for sign_pack in [false, true] {
            for (di, &density) in DENSITIES.iter().enumerate() {
                for (li, &n) in LENGTHS.iter().chain(&[LONG]).enumerate() {
                    let bytes = data(n, density, dtype, sign_pack, (7000 + di * 100 + li) as u64);
                    let s = cpu::compress_v2(&bytes, dtype, Options { sign_pack }).unwrap();
                    check(codec, ctx, &s, &bytes, &format!("{name}: {dtype} sign_pack={sign_pack} ρ={density} n={n}"));
                }
            }
        }
    }
}

/// Both codec paths of a Vulkan adapter: subgroup scans where it has them (lavapipe does), and the
/// portable workgroup-memory scan.
fn v2_gpu_decode_matrix(ctx: GpuContext) {
    for (codec, name) in decoders(&ctx, CodecConfig::default()) {
        matrix(&ctx, &codec, name);
    }
    for (portable, name) in decoders(&ctx, CodecConfig { force_portable: true, ..Default::default() }) {
        assert_eq!(portable.path(), bitsparse::CodecPath::Portable);
        matrix(&ctx, &portable, name);
    }
}

fn v2_gl_decode_matrix(ctx: GpuContext) {
    assert_eq!(ctx.info.backend, wgpu::Backend::Gl, "not a GL adapter: {}", ctx.describe());
    for (codec, name) in decoders(&ctx, CodecConfig::default()) {
        matrix(&ctx, &codec, name);
    }
}

/// ReLU² data at the densities trained models reach and beyond: the streams hold positions, mask, raw
/// and empty tiles and exponent-coded values (asserted), all decoded bit-exactly.
fn v2_gpu_decode_relu2_every_encoding(ctx: GpuContext) {
    let codecs = decoders(&ctx, CodecConfig::default());
    let mut seen = [0u64; 4];
    let mut coded = 0;
    for dtype in DType::ALL {
        for sign_pack in [false, true] {
            for (i, &density) in [0.0, 0.002, 0.02, 0.176, 0.5, 1.0].iter().enumerate() {
                // A partial last tile, and streams of exactly one and two whole 16-tile groups.
                for n in [9 * 4096 + 1000, 16 * 4096, 32 * 4096] {
                    let bytes = cpu::synthetic_relu2(n, density, dtype, 40 + i as u64);
                    let s = cpu::compress_v2(&bytes, dtype, Options { sign_pack }).unwrap();
                    let st = cpu::v2::stream_stats(&s).unwrap();
                    for (a, b) in seen.iter_mut().zip(st.tile_encodings) {
                        *a += b;
                    }
                    coded += st.exponent_coded_tiles;
                    for (codec, name) in &codecs {
                        let what = format!("{name}: relu² {dtype} sign_pack={sign_pack} ρ={density} n={n}");
                        check(codec, &ctx, &s, &bytes, &what);
                        // Straight through the API with a binding of exactly the stream's words (no slack).
                        let (layout, _) = LayoutV2::from_header(&words(&s)).unwrap();
                        assert_eq!(decode_direct(&ctx, codec, &layout, &s), bytes, "direct {what}");
                    }
                }
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 0), "every encoding must occur: {seen:?}");
    assert!(coded > 0, "no exponent-coded tile");
}

fn v2_gpu_decode_tile_starts_shuffled(ctx: GpuContext) {
    for (codec, name) in decoders(&ctx, CodecConfig::default()) {
        for dtype in DType::ALL {
            for (seed, &density) in [0.005, 0.1, 0.6].iter().enumerate() {
                let bytes = cpu::synthetic_relu2(LONG, density, dtype, seed as u64);
                let s = cpu::compress_v2(&bytes, dtype, Options::default()).unwrap();
                let shuffled = cpu::v2::place_starts_shuffled(&s, seed as u64 + 1).unwrap();
                assert_ne!(shuffled, s);
                check(&codec, &ctx, &shuffled, &bytes, &format!("{name}: tile starts {dtype} ρ={density}"));
                // Straight through the API too, without the host's compaction: the tile-start directory.
                let (layout, _) = LayoutV2::from_header(&words(&shuffled)).unwrap();
                assert!(layout.tile_starts);
                let got = decode_direct(&ctx, &codec, &layout, &shuffled);
                assert_eq!(got, bytes, "{name}: tile starts through Codec::decompress_v2, {dtype} ρ={density}");
            }
        }
    }
}

/// Positions tiles at every density (`cpu::v2::compress_v2_positions`): Elias–Fano low widths from 11
/// down to 0 and upper bit vectors from a few bits (1-bit chunks) to `2 · 4096` (two rounds of words),
/// on both codec paths; the size-picking writer never emits L <= 1 or vectors past 2,048 bits.
fn v2_gpu_decode_positions_every_low_width(ctx: GpuContext) {
    let mut codecs = decoders(&ctx, CodecConfig::default());
    codecs.extend(decoders(&ctx, CodecConfig { force_portable: true, ..Default::default() }));
    let mut widths = std::collections::BTreeSet::new();
    for dtype in [DType::Bf16, DType::F32, DType::E4m3] {
        for (i, &density) in [0.0005, 0.003, 0.02, 0.05, 0.1, 0.2, 0.3, 0.6, 0.9, 1.0].iter().enumerate() {
            let n = 3 * 4096 + 100;
            let bytes = cpu::synthetic_relu2(n, density, dtype, 900 + i as u64);
            let s = cpu::v2::compress_v2_positions(&bytes, dtype, Options::default()).unwrap();
            let (layout, _) = LayoutV2::from_header(&words(&s)).unwrap();
            let w = words(&s);
            for t in 0..layout.tiles {
                let (d, _) = TileDesc::from_word(w[(layout.desc_offset + t) as usize]);
                if d.enc == enc::POSITIONS {
                    widths.insert(d.low_bits(layout.tile_len(t)));
                }
            }
            for (codec, name) in &codecs {
                check(codec, &ctx, &s, &bytes, &format!("positions {dtype} ρ={density} {:?} {name}", codec.path()));
            }
        }
    }
    for l in [0, 1, 2, 3, 4, 5, 8] {
        assert!(widths.contains(&l), "no positions tile with L = {l}: {widths:?}");
    }
    // Runs of nonzeros that fill whole Elias–Fano buckets: a mask word's window of upper bits is then
    // at its longest (L = 6: a bucket of 64 ones before its zero; L = 0: 32 ones and 32 zeros).
    // (run start, run length) per tile; the last tile is partial.
    let runs = [(320, 64), (4032, 64), (384, 32), (1024, 2048), (0, 4096), (5, 1), (0, 2100), (4000, 20)];
    let n = 7 * 4096 + 2100;
    for dtype in [DType::Bf16, DType::E4m3] {
        let eb = dtype.bytes() as usize;
        let mut bytes = vec![0u8; n * eb];
        for (t, &(at, len)) in runs.iter().enumerate() {
            for i in t * 4096 + at..(t * 4096 + at + len).min(n) {
                bytes[i * eb] = 0x38 + (i % 7) as u8; // nonzero, positive in every dtype
            }
        }
        let s = cpu::v2::compress_v2_positions(&bytes, dtype, Options::default()).unwrap();
        let (layout, _) = LayoutV2::from_header(&words(&s)).unwrap();
        let w = words(&s);
        let full_bucket = (0..layout.tiles).any(|t| {
            let (d, _) = TileDesc::from_word(w[(layout.desc_offset + t) as usize]);
            d.enc == enc::POSITIONS && d.low_bits(layout.tile_len(t)) == 6
        });
        assert!(full_bucket, "{dtype}: no positions tile with L = 6");
        for (codec, name) in &codecs {
            check(codec, &ctx, &s, &bytes, &format!("positions runs {dtype} {:?} {name}", codec.path()));
        }
    }
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// `stream` in a storage buffer, padded to whole words, and its padded length.
fn upload_stream(ctx: &GpuContext, stream: &[u8]) -> (wgpu::Buffer, u64) {
    use wgpu::util::DeviceExt;
    let mut padded = stream.to_vec();
    padded.resize(stream.len().div_ceil(4) * 4, 0);
    let input = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.v2.stream"),
        contents: &padded,
        usage: wgpu::BufferUsages::STORAGE,
    });
    (input, padded.len() as u64)
}

/// Records `record` on (the first `input_len` bytes of `input`, the first `dense` bytes of a fresh
/// output of `out_bytes` bytes of 0xEE), runs it and returns the whole output.
fn run_v2(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    input_len: u64,
    out_bytes: u64,
    dense: u64,
    record: impl FnOnce(&mut wgpu::CommandEncoder, BufferRange<'_>, BufferRange<'_>) -> bitsparse::Result<()>,
) -> Vec<u8> {
    use wgpu::util::DeviceExt;
    let output = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.v2.dense"),
        contents: &vec![0xEEu8; out_bytes as usize],
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    record(&mut enc, BufferRange::new(input, 0, input_len), BufferRange::new(&output, 0, dense)).unwrap();
    bitsparse::host::sync::submit(&ctx.queue, [enc.finish()]);
    bitsparse::host::sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, out_bytes).unwrap()
}

fn decode_direct(ctx: &GpuContext, codec: &Codec, layout: &LayoutV2, stream: &[u8]) -> Vec<u8> {
    let (input, len) = upload_stream(ctx, stream);
    let dense = layout.n * layout.dtype.bytes();
    // Bytes past the output range must survive: the range ends mid-word for odd 16-bit lengths.
    let all =
        run_v2(ctx, &input, len, dense.div_ceil(4) * 4 + 4, dense, |enc, s, o| codec.decompress_v2(enc, layout, s, o));
    assert!(all[dense as usize..].iter().all(|&b| b == 0xEE), "bytes past the output range were written");
    all[..dense as usize].to_vec()
}

/// More tiles than the (lowered) workgroup limit per dimension: a 2-D grid; a (lowered) binding limit
/// makes the host decode in pieces of whole tile groups.
fn v2_gpu_decode_2d_grid_and_pieces(ctx: GpuContext) {
    let grids = decoders(&ctx, CodecConfig { max_workgroups_per_dim: Some(7), ..Default::default() });
    let pieces = decoders(&ctx, CodecConfig { max_binding_bytes: Some(40 * 8192 + 4096), ..Default::default() });
    for ((grid, d), (pieces, _)) in grids.iter().zip(&pieces) {
        for dtype in [DType::Bf16, DType::E4m3, DType::F32] {
            let n = 70 * 4096 + 5;
            for density in [0.01, 0.3] {
                let bytes = cpu::synthetic_relu2(n, density, dtype, 9);
                let s = cpu::compress_v2(&bytes, dtype, Options::default()).unwrap();
                check(grid, &ctx, &s, &bytes, &format!("{d}: 2-D grid {dtype} ρ={density}"));
                check(pieces, &ctx, &s, &bytes, &format!("{d}: pieces {dtype} ρ={density}"));
            }
        }
    }
}

/// The two-pass decoder's first pass alone (`Codec::decompress_v2_index_pass`) against its CPU port
/// (`cpu::v2::index`), word for word: every tile's mask, ranks (`RANKS`), data start, values bit and
/// descriptor, on both codec paths, with mask tiles' masks copied or left in the stream, for ordered
/// and tile-start directories; every other output word untouched.
fn v2_gpu_index_pass_matches_cpu_port(ctx: GpuContext) {
    // (codec, mask tiles' masks left in the stream, ranks written)
    let mut codecs = Vec::new();
    for portable in [false, true] {
        for (k, from_stream, ranks) in [
            (None, false, false),
            (Some("decompress_v2.MASK_FROM_STREAM=1"), true, false),
            (Some("decompress_v2.RANKS=1"), false, true),
            // RANKS copies every mask whatever MASK_FROM_STREAM says.
            (Some("decompress_v2.RANKS=1,decompress_v2.MASK_FROM_STREAM=1"), false, true),
        ] {
            let c = CodecConfig { force_portable: portable, kernel_constants: k.map(Into::into), ..Default::default() };
            codecs.push((Codec::with_config(&ctx.device, c).unwrap(), from_stream, ranks));
        }
    }
    let mut seen = [0usize; 4];
    for dtype in DType::ALL {
        for (i, &density) in [0.0, 0.003, 0.05, 0.3, 1.0].iter().enumerate() {
            // Two 16-tile groups, the second one partial; full tiles only (a partial last tile's words go
            // to the codec's own buffer).
            let n = 18 * 4096;
            let bytes = cpu::synthetic_relu2(n, density, dtype, 300 + i as u64);
            let ordered = cpu::compress_v2(&bytes, dtype, Options::default()).unwrap();
            let shuffled = cpu::v2::place_starts_shuffled(&ordered, 5).unwrap();
            for s in [ordered, shuffled] {
                let want = cpu::v2::index(&s).unwrap();
                let (layout, _) = LayoutV2::from_header(&words(&s)).unwrap();
                let (input, len) = upload_stream(&ctx, &s);
                let dense = layout.n * layout.dtype.bytes();
                for (codec, from_stream, ranks) in &codecs {
                    let got = words(&run_v2(&ctx, &input, len, dense, dense, |enc, s, o| {
                        codec.decompress_v2_index_pass(enc, &layout, s, o)
                    }));
                    let tile_words = 4096 * dtype.bytes() as usize / 4;
                    for (t, w) in want.iter().enumerate() {
                        let (d, _) = TileDesc::from_word(w.desc);
                        seen[d.enc as usize] += 1;
                        let mut expect = w.words();
                        if *from_stream && d.enc == enc::MASK {
                            expect[..128].fill(0);
                        }
                        if !*ranks {
                            expect[128..256].fill(0xEEEE_EEEE);
                        }
                        // The tile's last 512 words (its last round's).
                        let at = (t + 1) * tile_words - 512;
                        let what = format!(
                            "{dtype} ρ={density} tile_starts={} from_stream={from_stream} ranks={ranks} {:?} tile {t}",
                            layout.tile_starts,
                            codec.path()
                        );
                        assert_eq!(got[at..at + 260], expect[..], "{what}");
                        let rest = got[t * tile_words..at].iter().chain(&got[at + 260..(t + 1) * tile_words]);
                        assert!(rest.into_iter().all(|&x| x == 0xEEEE_EEEE), "{what}: other words written");
                    }
                }
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 0), "every encoding must occur: {seen:?}");
}

fn v2_gpu_decode_api_errors(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let bytes = cpu::synthetic_relu2(5000, 0.1, DType::Bf16, 1);
    let s = cpu::compress_v2(&bytes, DType::Bf16, Options::default()).unwrap();
    let (layout, _) = LayoutV2::from_header(&words(&s)).unwrap();
    let buf = |size: u64, usage| {
        ctx.device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: false })
    };
    let input = buf(s.len() as u64 + 4, wgpu::BufferUsages::STORAGE);
    let output = buf(20000, wgpu::BufferUsages::STORAGE);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let r = codec.decompress_v2(
        &mut enc,
        &layout,
        BufferRange::new(&input, 0, s.len() as u64),
        BufferRange::new(&output, 0, 9000),
    );
    assert!(matches!(r, Err(Error::RangeTooSmall { what: "output", .. })), "{r:?}");
    let r =
        codec.decompress_v2(&mut enc, &layout, BufferRange::new(&input, 0, 16), BufferRange::new(&output, 0, 10000));
    assert!(matches!(r, Err(Error::RangeTooSmall { what: "compressed stream", .. })), "{r:?}");
    let r =
        codec.decompress_v2(&mut enc, &layout, BufferRange::new(&output, 0, 4096), BufferRange::new(&output, 0, 10000));
    assert!(matches!(r, Err(Error::OverlappingRanges { .. })), "{r:?}");
    let r = codec.decompress_v2(
        &mut enc,
        &layout,
        BufferRange::new(&input, 0, 1 << 40),
        BufferRange::new(&output, 0, 10000),
    );
    assert!(matches!(r, Err(Error::OutOfBounds { .. })), "{r:?}");
    // A corrupt stream through the host helper: refused by the host's validation before any GPU work.
    let mut bad = s.clone();
    let (d, _) = TileDesc::from_word(words(&s)[8]);
    assert_ne!(d.enc, enc::RAW);
    bad[32] = (bad[32] & !3) | enc::RAW;
    assert!(matches!(host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &bad), Err(Error::Corrupt(_))));
}
