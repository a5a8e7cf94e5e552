//! The GPU decoder of format version 2 (`shaders/decompress_v2.wgsl`, `Codec::decompress_v2`,
//! `host::decompress_to_vec`) against the CPU reference: every dtype and sign mode over the conformance
//! densities and lengths, i.i.d. ReLU² data (which exercises every tile encoding and the exponent code),
//! tile-start directories with shuffled tiles and gaps, 2-D grids (lowered workgroup limit), pieces
//! (lowered binding limit), the typed errors of the API, and wgpu's GL backend.

use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::format::v2::{enc, LayoutV2, TileDesc};
use bitsparse::host::context::GpuContext;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, DType, Error, Options};

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
        gl_test!(v2_gl_decode_matrix),
    ]
}

const LONG: usize = 17 * 4096 + 77;

fn check(codec: &Codec, ctx: &GpuContext, stream: &[u8], want: &[u8], what: &str) {
    let got = host::decompress_to_vec(codec, &ctx.device, &ctx.queue, stream).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!("{what}: first differing byte {i} (got {:#04x}, want {:#04x})", got[i], want[i]);
    }
}

fn matrix(ctx: &GpuContext, codec: &Codec) {
    for dtype in DType::ALL {
        for sign_pack in [false, true] {
            for (di, &density) in DENSITIES.iter().enumerate() {
                for (li, &n) in LENGTHS.iter().chain(&[LONG]).enumerate() {
                    let bytes = data(n, density, dtype, sign_pack, (7000 + di * 100 + li) as u64);
                    let s = cpu::compress_v2(&bytes, dtype, Options { sign_pack }).unwrap();
                    check(codec, ctx, &s, &bytes, &format!("{dtype} sign_pack={sign_pack} ρ={density} n={n}"));
                }
            }
        }
    }
}

/// Both codec paths of a Vulkan adapter: subgroup scans where it has them (lavapipe does), and the
/// portable workgroup-memory scan.
fn v2_gpu_decode_matrix(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    matrix(&ctx, &codec);
    let portable = Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap();
    assert_eq!(portable.path(), bitsparse::CodecPath::Portable);
    matrix(&ctx, &portable);
}

fn v2_gl_decode_matrix(ctx: GpuContext) {
    assert_eq!(ctx.info.backend, wgpu::Backend::Gl, "not a GL adapter: {}", ctx.describe());
    let codec = Codec::new(&ctx.device).unwrap();
    matrix(&ctx, &codec);
}

/// ReLU² data at the densities trained models reach and beyond: the streams hold positions, mask, raw
/// and empty tiles and exponent-coded values (asserted), all decoded bit-exactly.
fn v2_gpu_decode_relu2_every_encoding(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
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
                    check(&codec, &ctx, &s, &bytes, &format!("relu² {dtype} sign_pack={sign_pack} ρ={density} n={n}"));
                    // Straight through the API with a binding of exactly the stream's words (no slack).
                    let (layout, _) = LayoutV2::from_header(&words(&s)).unwrap();
                    assert_eq!(
                        decode_direct(&ctx, &codec, &layout, &s),
                        bytes,
                        "direct {dtype} sign_pack={sign_pack} ρ={density} n={n}"
                    );
                }
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 0), "every encoding must occur: {seen:?}");
    assert!(coded > 0, "no exponent-coded tile");
}

fn v2_gpu_decode_tile_starts_shuffled(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    for dtype in DType::ALL {
        for (seed, &density) in [0.005, 0.1, 0.6].iter().enumerate() {
            let bytes = cpu::synthetic_relu2(LONG, density, dtype, seed as u64);
            let s = cpu::compress_v2(&bytes, dtype, Options::default()).unwrap();
            let shuffled = cpu::v2::place_starts_shuffled(&s, seed as u64 + 1).unwrap();
            assert_ne!(shuffled, s);
            check(&codec, &ctx, &shuffled, &bytes, &format!("tile starts {dtype} ρ={density}"));
            // Straight through the API too, without the host's compaction: the tile-start directory.
            let (layout, _) = LayoutV2::from_header(&words(&shuffled)).unwrap();
            assert!(layout.tile_starts);
            let got = decode_direct(&ctx, &codec, &layout, &shuffled);
            assert_eq!(got, bytes, "tile starts through Codec::decompress_v2, {dtype} ρ={density}");
        }
    }
}

/// Positions tiles at every density (`cpu::v2::compress_v2_positions`): Elias–Fano low widths from 11
/// down to 0 and upper bit vectors from a few bits (1-bit chunks) to `2 · 4096` (two rounds of words),
/// on both codec paths; the size-picking writer never emits L <= 1 or vectors past 2,048 bits.
fn v2_gpu_decode_positions_every_low_width(ctx: GpuContext) {
    let subgroup = Codec::new(&ctx.device).unwrap();
    let portable = Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap();
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
            for (codec, path) in [(&subgroup, "subgroup"), (&portable, "portable")] {
                check(codec, &ctx, &s, &bytes, &format!("positions {dtype} ρ={density} {path}"));
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
        for (codec, path) in [(&subgroup, "subgroup"), (&portable, "portable")] {
            check(codec, &ctx, &s, &bytes, &format!("positions runs {dtype} {path}"));
        }
    }
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn decode_direct(ctx: &GpuContext, codec: &Codec, layout: &LayoutV2, stream: &[u8]) -> Vec<u8> {
    use wgpu::util::DeviceExt;
    let mut padded = stream.to_vec();
    padded.resize(stream.len().div_ceil(4) * 4, 0);
    let input = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.v2.stream"),
        contents: &padded,
        usage: wgpu::BufferUsages::STORAGE,
    });
    let dense = layout.n * layout.dtype.bytes();
    // Bytes past the output range must survive: the range ends mid-word for odd 16-bit lengths.
    let output = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.v2.dense"),
        contents: &vec![0xEEu8; (dense.div_ceil(4) * 4 + 4) as usize],
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    codec
        .decompress_v2(
            &mut enc,
            layout,
            BufferRange::new(&input, 0, padded.len() as u64),
            BufferRange::new(&output, 0, dense),
        )
        .unwrap();
    bitsparse::host::sync::submit(&ctx.queue, [enc.finish()]);
    let all = bitsparse::host::sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, output.size()).unwrap();
    assert!(all[dense as usize..].iter().all(|&b| b == 0xEE), "bytes past the output range were written");
    all[..dense as usize].to_vec()
}

/// More tiles than the (lowered) workgroup limit per dimension: a 2-D grid; a (lowered) binding limit
/// makes the host decode in pieces of whole tile groups.
fn v2_gpu_decode_2d_grid_and_pieces(ctx: GpuContext) {
    let grid =
        Codec::with_config(&ctx.device, CodecConfig { max_workgroups_per_dim: Some(7), ..Default::default() }).unwrap();
    let pieces = Codec::with_config(
        &ctx.device,
        CodecConfig { max_binding_bytes: Some(40 * 8192 + 4096), ..Default::default() },
    )
    .unwrap();
    for dtype in [DType::Bf16, DType::E4m3, DType::F32] {
        let n = 70 * 4096 + 5;
        for density in [0.01, 0.3] {
            let bytes = cpu::synthetic_relu2(n, density, dtype, 9);
            let s = cpu::compress_v2(&bytes, dtype, Options::default()).unwrap();
            check(&grid, &ctx, &s, &bytes, &format!("2-D grid {dtype} ρ={density}"));
            check(&pieces, &ctx, &s, &bytes, &format!("pieces {dtype} ρ={density}"));
        }
    }
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
