//! The GPU writer of format version 2 (`shaders/compress_v2.wgsl`, `Codec::compress_v2`) against the
//! CPU reference: every stream it writes is valid (`cpu::validate_any`), `cpu::compact` of it is byte
//! for byte `cpu::compress_v2` of the data (so every tile took the encoding and value code the CPU
//! encoder takes), and both decoders give the data back. Every dtype and sign mode over the conformance
//! densities and lengths (random bit patterns: NaNs, infinities, subnormals, -0.0), ReLU² data at
//! trained densities (every encoding and exponent-coded values, asserted), 2-D grids (lowered workgroup
//! limit), the sign-bit status, the typed errors of the API, both codec paths and wgpu's GL backend.

use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::format::v2::{LayoutV2, TileDesc};
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, DType, Error, Options, Staging};
use wgpu::util::DeviceExt;

use crate::common::data;
use crate::common::harness::{gl_test, vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(v2_gpu_compress_matrix),
        vulkan_test!(v2_gpu_compress_relu2_every_encoding),
        vulkan_test!(v2_gpu_compress_extreme_exponent_tiles),
        vulkan_test!(v2_gpu_compress_2d_grid),
        vulkan_test!(v2_gpu_compress_sign_bit_and_errors),
        vulkan_test!(v2_gpu_compress_host_pieces),
        vulkan_test!(v2_gpu_compress_positions_gain),
        gl_test!(v2_gl_compress_matrix),
    ]
}

const LONG: usize = 17 * 4096 + 77;

fn input_buffer(ctx: &GpuContext, bytes: &[u8]) -> wgpu::Buffer {
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().div_ceil(4).max(1) * 4, 0);
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.v2c.input"),
        contents: &padded,
        usage: wgpu::BufferUsages::STORAGE,
    })
}

/// The GPU's version-2 stream of `bytes` (the output range filled with garbage first, so that a word
/// the kernel fails to write shows).
fn gpu_compress_v2(ctx: &GpuContext, codec: &Codec, bytes: &[u8], dtype: DType, options: Options) -> Vec<u8> {
    let n = (bytes.len() as u64) / dtype.bytes();
    let layout = LayoutV2::new(dtype, n, options, true).unwrap();
    let input = input_buffer(ctx, bytes);
    let cap = layout.capacity_bytes();
    let output = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.v2c.stream"),
        contents: &vec![0xA5u8; cap as usize],
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let got = codec
        .compress_v2(
            &mut enc,
            BufferRange::new(&input, 0, bytes.len() as u64),
            dtype,
            n,
            options,
            BufferRange::new(&output, 0, cap),
        )
        .unwrap();
    assert_eq!(got, layout);
    sync::submit(&ctx.queue, [enc.finish()]);
    let head = sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, 32).unwrap();
    let data_words = u32::from_le_bytes([head[16], head[17], head[18], head[19]]) as u64;
    assert!(data_words <= layout.data_capacity, "DATA_WORDS {data_words} past the capacity");
    sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, layout.stream_bytes(data_words)).unwrap()
}

/// Writes, validates, compacts and decodes; returns the stream.
fn check(ctx: &GpuContext, codec: &Codec, bytes: &[u8], dtype: DType, options: Options, what: &str) -> Vec<u8> {
    let stream = gpu_compress_v2(ctx, codec, bytes, dtype, options);
    cpu::validate_any(&stream).unwrap_or_else(|e| panic!("{what}: GPU stream invalid: {e}"));
    let want = cpu::compress_v2(bytes, dtype, options).unwrap();
    let compact = cpu::compact(&stream).unwrap();
    if compact != want {
        let i = compact.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(compact.len().min(want.len()));
        panic!(
            "{what}: compact(GPU stream) differs from cpu::compress_v2 at byte {i} (lengths {} / {})",
            compact.len(),
            want.len()
        );
    }
    assert!(cpu::decompress(&stream).unwrap() == bytes, "{what}: CPU decode of the GPU stream");
    let gpu = host::decompress_to_vec(codec, &ctx.device, &ctx.queue, &stream).unwrap();
    assert!(gpu == bytes, "{what}: GPU decode of the GPU stream");
    stream
}

fn matrix(ctx: &GpuContext, codec: &Codec) {
    for dtype in DType::ALL {
        for sign_pack in [false, true] {
            for (di, &density) in DENSITIES.iter().enumerate() {
                for (li, &n) in LENGTHS.iter().chain(&[LONG]).enumerate() {
                    let bytes = data(n, density, dtype, sign_pack, (9000 + di * 100 + li) as u64);
                    let what = format!("{dtype} sign_pack={sign_pack} ρ={density} n={n}");
                    check(ctx, codec, &bytes, dtype, Options { sign_pack }, &what);
                }
            }
        }
    }
}

/// Both codec paths of a Vulkan adapter: subgroup scans where it has them (lavapipe does), and the
/// portable workgroup-memory scan; both stagings of the writer: `u16` slots (`Staging::Auto` on a device
/// with `SHADER_I16`, as lavapipe) and bits OR-ed into workgroup words (`Staging::Words`).
fn v2_gpu_compress_matrix(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    matrix(&ctx, &codec);
    let words =
        Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Words), ..Default::default() }).unwrap();
    matrix(&ctx, &words);
    let portable = Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap();
    assert_eq!(portable.path(), bitsparse::CodecPath::Portable);
    matrix(&ctx, &portable);
}

fn v2_gl_compress_matrix(ctx: GpuContext) {
    assert_eq!(ctx.info.backend, wgpu::Backend::Gl, "not a GL adapter: {}", ctx.describe());
    let codec = Codec::new(&ctx.device).unwrap();
    matrix(&ctx, &codec);
}

/// ReLU² data at the densities trained models reach and beyond: the GPU streams hold positions, mask,
/// raw and empty tiles and exponent-coded values (asserted), and compact to the CPU encoder's bytes.
/// Both stagings of the writer (`u16` slots, and `Staging::Words`).
fn v2_gpu_compress_relu2_every_encoding(ctx: GpuContext) {
    let words =
        Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Words), ..Default::default() }).unwrap();
    for codec in [Codec::new(&ctx.device).unwrap(), words] {
        relu2_every_encoding(&ctx, &codec);
    }
}

fn relu2_every_encoding(ctx: &GpuContext, codec: &Codec) {
    let mut seen = [0u64; 4];
    let mut coded = 0u64;
    for dtype in DType::ALL {
        for sign_pack in [false, true] {
            for (i, &density) in [0.0, 0.002, 0.02, 0.176, 0.6, 0.97, 1.0].iter().enumerate() {
                let mut bytes = cpu::synthetic_relu2(LONG, density, dtype, 50 + i as u64);
                if density > 0.0 && density < 0.5 {
                    // One empty tile in the middle.
                    let eb = dtype.bytes() as usize;
                    bytes[5 * 4096 * eb..6 * 4096 * eb].fill(0);
                }
                let what = format!("relu² {dtype} sign_pack={sign_pack} ρ={density}");
                let stream = check(ctx, codec, &bytes, dtype, Options { sign_pack }, &what);
                let words: Vec<u32> =
                    stream.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                let (layout, _) = LayoutV2::from_header(&words).unwrap();
                assert!(layout.tile_starts, "{what}: the GPU writes tile starts");
                for t in 0..layout.tiles as usize {
                    let (d, _) = TileDesc::from_word(words[layout.desc_offset as usize + t]);
                    seen[d.enc as usize] += 1;
                    coded += (d.eb != bitsparse::format::v2::PLAIN) as u64;
                }
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 0), "every encoding must occur: {seen:?}");
    assert!(coded > 0, "no exponent-coded tile");
}

/// The tiles of each encoding in a version-2 stream (by `enc` code).
fn encodings(stream: &[u8]) -> [u64; 4] {
    cpu::v2::stream_stats(stream).unwrap().tile_encodings
}

/// `compress_v2.POSITIONS_GAIN` (an A/B of the writer's tile choices) at 0: a positions tile wherever it
/// is smaller, where the canonical writer (`format::v2::POSITIONS_GAIN`, 8) wants it smaller by more than
/// 1/9. Its streams stay valid and decode bit-exactly on the CPU and the GPU; at ρ = 0.176, where
/// positions save a few per cent, it writes positions tiles that the canonical writer writes as mask
/// tiles, while at ρ = 0.002, where they save far more, both write the same tiles. Every dtype and sign
/// mode, both codec paths.
fn v2_gpu_compress_positions_gain(ctx: GpuContext) {
    const POSITIONS: usize = bitsparse::format::v2::enc::POSITIONS as usize;
    const MASK: usize = bitsparse::format::v2::enc::MASK as usize;
    let gain = |force_portable| CodecConfig {
        kernel_constants: Some("compress_v2.POSITIONS_GAIN=0".into()),
        force_portable,
        ..Default::default()
    };
    let plain = Codec::new(&ctx.device).unwrap();
    for codec in
        [Codec::with_config(&ctx.device, gain(false)).unwrap(), Codec::with_config(&ctx.device, gain(true)).unwrap()]
    {
        for dtype in DType::ALL {
            for sign_pack in [false, true] {
                let options = Options { sign_pack };
                for (i, density) in [0.176, 0.002].into_iter().enumerate() {
                    let bytes = cpu::synthetic_relu2(LONG, density, dtype, 70 + i as u64);
                    let what = format!("POSITIONS_GAIN=0 {dtype} sign_pack={sign_pack} ρ={density} {:?}", codec.path());
                    let stream = gpu_compress_v2(&ctx, &codec, &bytes, dtype, options);
                    cpu::validate_any(&stream).unwrap_or_else(|e| panic!("{what}: GPU stream invalid: {e}"));
                    assert!(cpu::decompress(&stream).unwrap() == bytes, "{what}: CPU decode");
                    let gpu = host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &stream).unwrap();
                    assert!(gpu == bytes, "{what}: GPU decode");
                    let (with, without) =
                        (encodings(&stream), encodings(&check(&ctx, &plain, &bytes, dtype, options, &what)));
                    if density > 0.1 {
                        // (A few e4m3 tiles save more than 1/9 with positions and stay positions tiles.)
                        assert!(with[POSITIONS] > without[POSITIONS], "{what}: {with:?} / {without:?}");
                        assert_eq!(
                            with[MASK] + with[POSITIONS],
                            without[MASK] + without[POSITIONS],
                            "{what}: {with:?} / {without:?}"
                        );
                    } else {
                        assert_eq!(with, without, "{what}");
                        assert!(with[POSITIONS] > 0, "{what}: {with:?}");
                    }
                }
            }
        }
    }
}

/// Tiles whose nonzeros sit at the ends of the exponent field: only the all-ones magnitude (NaN
/// payloads: the smallest magnitude is then 0x7fff, which the writer's range must not take for "no
/// nonzero"), only −0.0 (exponent 0, magnitude 0), only the smallest subnormal, both ends at once
/// (plain values), and two neighbours of one exponent (eb = 0); each at one nonzero (positions), about
/// a third (mask) and every element (raw), for every dtype and sign mode, both stagings of the writer.
fn v2_gpu_compress_extreme_exponent_tiles(ctx: GpuContext) {
    let words =
        Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Words), ..Default::default() }).unwrap();
    for codec in [Codec::new(&ctx.device).unwrap(), words] {
        for dtype in DType::ALL {
            let bits = dtype.bits();
            let sign = 1u32 << (bits - 1);
            let mag = sign - 1;
            let one = 1u32 << dtype.mantissa_bits(); // exponent 1, mantissa 0
            let sets: [&[u32]; 6] =
                [&[mag], &[mag | sign], &[sign], &[1], &[1, mag, sign | 1], &[one, one | 1, sign | one]];
            for sign_pack in [false, true] {
                let sets: Vec<Vec<u32>> = sets
                    .iter()
                    .map(|set| set.iter().copied().filter(|v| !sign_pack || v & sign == 0).collect::<Vec<u32>>())
                    .filter(|set| !set.is_empty())
                    .collect();
                let tiles = sets.len() * 3;
                let n = tiles * 4096 - 37; // the last tile partial
                let eb = dtype.bytes() as usize;
                let mut bytes = vec![0u8; n * eb];
                let mut x = 12345u64;
                for i in 0..n {
                    let t = i / 4096;
                    let set = &sets[t / 3];
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let r = (x >> 33) as u32;
                    let keep = match t % 3 {
                        0 => i % 4096 == 1234,
                        1 => r % 3 == 0,
                        _ => true,
                    };
                    if keep {
                        let v = set[(r as usize / 3) % set.len()];
                        bytes[i * eb..(i + 1) * eb].copy_from_slice(&v.to_le_bytes()[..eb]);
                    }
                }
                let what = format!("extreme exponents {dtype} sign_pack={sign_pack}");
                check(&ctx, &codec, &bytes, dtype, Options { sign_pack }, &what);
            }
        }
    }
}

/// More tiles than the (lowered) workgroup limit per dimension: a 2-D grid.
fn v2_gpu_compress_2d_grid(ctx: GpuContext) {
    let codec =
        Codec::with_config(&ctx.device, CodecConfig { max_workgroups_per_dim: Some(7), ..Default::default() }).unwrap();
    for dtype in [DType::Bf16, DType::E4m3, DType::F32] {
        for density in [0.01, 0.3] {
            let bytes = cpu::synthetic_relu2(70 * 4096 + 5, density, dtype, 9);
            check(&ctx, &codec, &bytes, dtype, Options::default(), &format!("2-D grid {dtype} ρ={density}"));
        }
    }
}

fn v2_gpu_compress_sign_bit_and_errors(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    // A sign bit under sign packing: the header's status, and every decoder refuses the stream.
    for dtype in DType::ALL {
        let mut bytes = data(3 * 4096 + 9, 0.3, dtype, true, 3);
        let eb = dtype.bytes() as usize;
        let i = 4096 + 17;
        bytes[i * eb + eb - 1] |= 0x80;
        let stream = gpu_compress_v2(&ctx, &codec, &bytes, dtype, Options::SIGN_PACK);
        assert_eq!(u32::from_le_bytes([stream[20], stream[21], stream[22], stream[23]]), 1, "{dtype}: status");
        assert!(matches!(cpu::decompress(&stream), Err(Error::SignBitSet { .. })), "{dtype}: CPU decode");
        assert!(
            matches!(host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &stream), Err(Error::SignBitSet { .. })),
            "{dtype}: GPU decode"
        );
    }
    // Typed errors, nothing recorded.
    let bytes = data(5000, 0.2, DType::Bf16, false, 4);
    let input = input_buffer(&ctx, &bytes);
    let layout = LayoutV2::new(DType::Bf16, 5000, Options::default(), true).unwrap();
    let cap = layout.capacity_bytes();
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.v2c.out"),
        size: cap + 64,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let input_range = BufferRange::new(&input, 0, 10_000);
    let small = codec.compress_v2(
        &mut enc,
        input_range,
        DType::Bf16,
        5000,
        Options::default(),
        BufferRange::new(&out, 0, cap - 4),
    );
    assert!(matches!(small, Err(Error::RangeTooSmall { .. })), "{small:?}");
    let short = codec.compress_v2(
        &mut enc,
        BufferRange::new(&input, 0, 9_998),
        DType::Bf16,
        5000,
        Options::default(),
        BufferRange::new(&out, 0, cap),
    );
    assert!(matches!(short, Err(Error::InvalidArgument(_))), "{short:?}");
    let shared = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.v2c.shared"),
        size: 10_240 + cap,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let same = codec.compress_v2(
        &mut enc,
        BufferRange::new(&shared, 0, 10_000),
        DType::Bf16,
        5000,
        Options::default(),
        BufferRange::new(&shared, 10_240, cap),
    );
    assert!(matches!(same, Err(Error::Unsupported(_))), "{same:?}");
    let overlap = codec.compress_v2(
        &mut enc,
        BufferRange::new(&shared, 0, 10_000),
        DType::Bf16,
        5000,
        Options::default(),
        BufferRange::new(&shared, 9_984, cap),
    );
    assert!(matches!(overlap, Err(Error::OverlappingRanges { .. })), "{overlap:?}");
}

/// `host::compress_v2_to_vec`: the canonical stream, byte for byte `cpu::compress_v2`, in one piece and
/// in pieces of whole tiles that are not whole groups (a lowered binding limit); the sign-bit error names
/// the first offending element; the empty tensor.
fn v2_gpu_compress_host_pieces(ctx: GpuContext) {
    let one = Codec::new(&ctx.device).unwrap();
    // 5 BF16 tiles' worst case (and 3 FP8 / F32 ones) fit: pieces of 5 (3) tiles, groups of 16.
    let pieces =
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(5 * 8768 + 200), ..Default::default() })
            .unwrap();
    for dtype in DType::ALL {
        for (i, &density) in [0.0, 0.01, 0.2, 0.9].iter().enumerate() {
            for n in [0, 1, 4097, 37 * 4096 + 11] {
                let bytes = cpu::synthetic_relu2(n, density, dtype, 70 + i as u64);
                let want = cpu::compress_v2(&bytes, dtype, Options::default()).unwrap();
                for (name, codec) in [("one piece", &one), ("pieces", &pieces)] {
                    let got =
                        host::compress_v2_to_vec(codec, &ctx.device, &ctx.queue, &bytes, dtype, Options::default())
                            .unwrap_or_else(|e| panic!("{name} {dtype} ρ={density} n={n}: {e}"));
                    assert!(got == want, "{name} {dtype} ρ={density} n={n}: differs from cpu::compress_v2");
                }
            }
        }
        let mut bytes = data(9 * 4096 + 3, 0.3, dtype, true, 8);
        let eb = dtype.bytes() as usize;
        let i = 7 * 4096 + 5;
        bytes[i * eb..(i + 1) * eb].fill(0);
        bytes[i * eb + eb - 1] = 0x80 | 0x11;
        for codec in [&one, &pieces] {
            match host::compress_v2_to_vec(codec, &ctx.device, &ctx.queue, &bytes, dtype, Options::SIGN_PACK) {
                Err(Error::SignBitSet { index }) => assert_eq!(index, Some(i as u64), "{dtype}"),
                other => panic!("{dtype}: expected SignBitSet, got {:?}", other.map(|v| v.len())),
            }
        }
    }
}
