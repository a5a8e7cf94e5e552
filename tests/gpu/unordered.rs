//! Unordered placement (`TileOrder::Unordered`, FORMAT.md §7): each tile claims its value words with
//! one atomic add, so tiles land in the order workgroups reach the counter. Every decoder must follow
//! the table: the GPU decompress (subgroup and portable paths) decodes the GPU's unordered streams in
//! place and CPU-made shuffled placements (`cpu::place_shuffled`), the CPU reference decodes the GPU's
//! streams; each stream is valid, the size of the ordered one (no gaps within a window), and
//! `cpu::compact` of it is byte-identical to `cpu::compress`. The arena's default is unordered: its
//! tests (`arena::`, `fp8_storage::`, `fused_dtypes::`) run that path; the ordered arena is covered
//! here.

use bitsparse::arena::{Arena, ArenaConfig};
use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::host::context::GpuContext;
use bitsparse::host::{self, sync};
use bitsparse::{cpu, BufferRange, Codec, CodecConfig, Compressed, DType, Options, Placement, Staging, TileOrder};

use crate::common::harness::{gl_test, vulkan_test, Test};
use crate::common::{buf, canary, data, read_at};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(unordered_matrix_bf16),
        vulkan_test!(unordered_matrix_f16),
        vulkan_test!(unordered_matrix_f32),
        vulkan_test!(unordered_matrix_e4m3),
        vulkan_test!(unordered_matrix_e5m2),
        vulkan_test!(unordered_many_tiles_out_of_order),
        vulkan_test!(unordered_chunked_lowered_binding_limit),
        vulkan_test!(unordered_dispatch_2d_lowered_limit),
        vulkan_test!(unordered_shuffled_streams_gpu_decode),
        vulkan_test!(unordered_sign_bit_is_an_error),
        vulkan_test!(unordered_arena_and_ordered_arena),
        vulkan_test!(direct_stores_every_width),
        gl_test!(gl_unordered_round_trip),
    ]
}

fn codecs(ctx: &GpuContext, config: CodecConfig) -> Vec<Codec> {
    let portable = CodecConfig { force_portable: true, ..config.clone() };
    let mut v = vec![Codec::with_config(&ctx.device, portable).expect("portable codec")];
    if ctx.device.features().contains(wgpu::Features::SUBGROUP) {
        v.push(Codec::with_config(&ctx.device, config).expect("subgroup codec"));
    }
    v
}

/// A dense buffer of `bytes` (whole words), for a decompress to write.
fn dense_buffer(ctx: &GpuContext, bytes: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.dense"),
        size: bytes.div_ceil(4) * 4 + 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// Decodes `c` on the GPU (as it lies: tiles out of order, gaps) and reads the dense bytes back.
fn gpu_decode(ctx: &GpuContext, codec: &Codec, c: &Compressed) -> Vec<u8> {
    let dense = c.layout.dense_bytes();
    if dense == 0 {
        return Vec::new();
    }
    let out = dense_buffer(ctx, dense);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    codec.decompress(&mut enc, c, BufferRange::new(&out, 0, dense)).expect("gpu decompress");
    sync::submit(&ctx.queue, [enc.finish()]);
    read_at(ctx, &out, 0, dense)
}

/// Whether some tile's stream starts before an earlier tile's (the table is not non-decreasing).
fn out_of_order(stream: &[u8]) -> bool {
    let (layout, _) = cpu::validate(stream).expect("valid");
    let word = |i: u64| {
        let b = &stream[i as usize * 4..i as usize * 4 + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    };
    (1..layout.tiles).any(|t| word(layout.table_offset + t) < word(layout.table_offset + t - 1))
}

/// Compresses `bytes` on the GPU with unordered tiles into a canary-filled buffer of worst-case size
/// (submitted); returns the stream's handle and that buffer.
fn compress_unordered(
    ctx: &GpuContext,
    codec: &Codec,
    bytes: &[u8],
    dtype: DType,
    options: Options,
    what: &str,
) -> (Compressed, wgpu::Buffer) {
    compress_in(ctx, codec, bytes, dtype, options, TileOrder::Unordered, what)
}

/// [`compress_unordered`] with the tiles placed in `order`.
fn compress_in(
    ctx: &GpuContext,
    codec: &Codec,
    bytes: &[u8],
    dtype: DType,
    options: Options,
    order: TileOrder,
    what: &str,
) -> (Compressed, wgpu::Buffer) {
    let n = (bytes.len() as u64) / dtype.bytes();
    let input = buf(ctx, bytes);
    let cap = codec.output_capacity(dtype, n, options).expect("capacity");
    let out = canary(ctx, cap);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let (input_range, out_range) = (BufferRange::new(&input, 0, bytes.len() as u64), BufferRange::new(&out, 0, cap));
    let c = codec
        .compress_with_order(&mut enc, input_range, dtype, n, options, order, out_range)
        .unwrap_or_else(|e| panic!("{what}: gpu compress: {e}"));
    sync::submit(&ctx.queue, [enc.finish()]);
    (c, out)
}

/// Compresses `bytes` unordered on the GPU and checks the stream against the CPU reference and every
/// decoder; returns whether its tiles came out of order.
fn check(ctx: &GpuContext, codec: &Codec, bytes: &[u8], dtype: DType, options: Options, what: &str) -> bool {
    let want = cpu::compress(bytes, dtype, options).unwrap_or_else(|e| panic!("{what}: cpu compress: {e}"));
    let (c, out) = compress_unordered(ctx, codec, bytes, dtype, options, what);
    let h = host::read_header(&ctx.device, &ctx.queue, &c).expect("header");
    host::check_status(&h, &c.layout).unwrap_or_else(|e| panic!("{what}: status: {e}"));
    let l = c.layout;
    let raw_len = (l.values_offset * 4 + h.value_words as u64 * 4).min(c.size);
    let raw = read_at(ctx, &out, 0, raw_len);
    cpu::validate(&raw).unwrap_or_else(|e| panic!("{what}: the unordered stream is not valid: {e}"));
    if c.placement == Placement::Compact {
        assert_eq!(raw.len(), want.len(), "{what}: an unordered window has gaps (size differs from the ordered one)");
    }
    let compact = cpu::compact(&raw).expect("compact");
    assert!(compact == want, "{what}: cpu::compact of the unordered stream differs from cpu::compress");
    let back = cpu::decompress(&raw).unwrap_or_else(|e| panic!("{what}: cpu decompress: {e}"));
    assert!(back == bytes, "{what}: CPU decode of the unordered stream differs");
    assert!(gpu_decode(ctx, codec, &c) == bytes, "{what}: GPU decode of the unordered stream differs");
    out_of_order(&raw)
}

fn matrix(ctx: &GpuContext, dtype: DType) {
    for codec in codecs(ctx, CodecConfig::default()) {
        for sign_pack in [false, true] {
            for (di, &density) in DENSITIES.iter().enumerate() {
                for (li, &n) in LENGTHS.iter().chain(&[9 * 4096]).enumerate() {
                    let bytes = data(n, density, dtype, sign_pack, (di * 100 + li) as u64 + 7);
                    let what =
                        format!("unordered {dtype} sign_pack={sign_pack} density={density} n={n} {:?}", codec.path());
                    check(ctx, &codec, &bytes, dtype, Options { sign_pack }, &what);
                }
            }
        }
    }
}

fn unordered_matrix_bf16(ctx: GpuContext) {
    matrix(&ctx, DType::Bf16);
}
fn unordered_matrix_f16(ctx: GpuContext) {
    matrix(&ctx, DType::F16);
}
fn unordered_matrix_f32(ctx: GpuContext) {
    matrix(&ctx, DType::F32);
}
fn unordered_matrix_e4m3(ctx: GpuContext) {
    matrix(&ctx, DType::E4m3);
}
fn unordered_matrix_e5m2(ctx: GpuContext) {
    matrix(&ctx, DType::E5m2);
}

/// Thousands of tiles in one dispatch, on both stagings: lavapipe runs workgroups on several threads,
/// so tiles reach the counter out of order (checked: a test that only ever saw ordered tiles would not
/// test the decoders' table-following).
fn unordered_many_tiles_out_of_order(ctx: GpuContext) {
    let n = 2000 * 4096 + 17;
    let mut seen_out_of_order = 0;
    for staging in [bitsparse::Staging::Words, bitsparse::Staging::Auto] {
        for codec in codecs(&ctx, CodecConfig { staging: Some(staging), ..Default::default() }) {
            for (dtype, rho) in [(DType::Bf16, 0.176), (DType::E4m3, 0.02)] {
                let d = cpu::synthetic_relu2(n, rho, dtype, 9);
                let what = format!("{dtype} {rho} {staging:?} {:?}", codec.path());
                seen_out_of_order += check(&ctx, &codec, &d, dtype, Options::default(), &what) as u32;
            }
        }
    }
    eprintln!("streams with tiles out of order: {seen_out_of_order}");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads > 1 {
        assert!(
            seen_out_of_order > 0,
            "no stream had its tiles out of order: the decoders' table lookup went untested"
        );
    }
}

/// Past the storage-binding size: each chunk's tiles claim places from the chunk's own counter, from
/// the chunk's window base (gaps between chunks, tiles out of order inside one).
fn unordered_chunked_lowered_binding_limit(ctx: GpuContext) {
    let config = CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() };
    for codec in codecs(&ctx, config) {
        for dtype in [DType::Bf16, DType::E4m3, DType::F32] {
            for sign_pack in [false, true] {
                let n = 17 * 4096 + 1001;
                let bytes = data(n, 0.3, dtype, sign_pack, 11);
                let what = format!("chunked unordered {dtype} sign_pack={sign_pack} {:?}", codec.path());
                check(&ctx, &codec, &bytes, dtype, Options { sign_pack }, &what);
            }
        }
    }
}

/// Past 65535 workgroups per dimension (a lowered limit): the tile is the 2-D workgroup id.
fn unordered_dispatch_2d_lowered_limit(ctx: GpuContext) {
    let ctx = &ctx;
    let config = CodecConfig { max_workgroups_per_dim: Some(5), ..Default::default() };
    for codec in codecs(ctx, config) {
        for dtype in [DType::Bf16, DType::E5m2, DType::F32] {
            let bytes = data(23 * 4096 + 3, 0.176, dtype, false, 5);
            check(ctx, &codec, &bytes, dtype, Options::default(), &format!("2d unordered {dtype} {:?}", codec.path()));
        }
    }
}

/// The GPU decoders on placements the CPU makes: tiles in a shuffled order with gaps of unspecified
/// bytes between them (what any unordered writer may leave), uploaded as they are.
fn unordered_shuffled_streams_gpu_decode(ctx: GpuContext) {
    for codec in codecs(&ctx, CodecConfig::default()) {
        for (i, dtype) in DType::ALL.into_iter().enumerate() {
            for density in [0.0, 0.01, 0.5, 1.0] {
                let bytes = data(7 * 4096 + 333, density, dtype, false, 40 + i as u64);
                let stream = cpu::compress(&bytes, dtype, Options::default()).unwrap();
                let shuffled = cpu::place_shuffled(&stream, 1234 + i as u64).unwrap();
                assert!(cpu::compact(&shuffled).unwrap() == stream, "{dtype}: compact(shuffled) != compress");
                assert!(cpu::decompress(&shuffled).unwrap() == bytes, "{dtype}: CPU decode of a shuffled stream");
                let c = host::upload(&ctx.device, &shuffled).unwrap();
                let what = format!("shuffled {dtype} {density} {:?}", codec.path());
                assert!(gpu_decode(&ctx, &codec, &c) == bytes, "{what}: GPU decode differs");
            }
        }
    }
}

/// A set sign bit under sign packing is still found (the status word), whatever the order.
fn unordered_sign_bit_is_an_error(ctx: GpuContext) {
    for codec in codecs(&ctx, CodecConfig::default()) {
        let mut bytes = data(5 * 4096, 0.3, DType::Bf16, true, 3);
        bytes[2 * (3 * 4096 + 5) + 1] |= 0x80;
        let (c, _) = compress_unordered(&ctx, &codec, &bytes, DType::Bf16, Options::SIGN_PACK, "sign bit");
        let h = host::read_header(&ctx.device, &ctx.queue, &c).unwrap();
        let e = host::check_status(&h, &c.layout).expect_err("a set sign bit must be reported");
        assert!(matches!(e, bitsparse::Error::SignBitSet { .. }), "{e}");
    }
}

/// The arena with each order: slots decode to the input, the ordered arena's streams equal the CPU
/// reference byte for byte, the unordered ones after `cpu::compact`.
fn unordered_arena_and_ordered_arena(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    for order in [TileOrder::Ordered, TileOrder::Unordered] {
        let arena = Arena::new(&codec, ArenaConfig { tile_order: order, ..ArenaConfig::new(4 << 20) }).unwrap();
        for (i, dtype) in [DType::Bf16, DType::F32, DType::E5m2].into_iter().enumerate() {
            let n = 11 * 4096 + 5;
            let bytes = data(n, 0.176, dtype, false, 70 + i as u64);
            let input = buf(&ctx, &bytes);
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            arena.reset(&mut enc);
            let slot = arena
                .push(&mut enc, BufferRange::new(&input, 0, bytes.len() as u64), dtype, n as u64, Options::default())
                .unwrap();
            sync::submit(&ctx.queue, [enc.finish()]);
            let stream = arena.read_slot_stream(&ctx.queue, &slot).unwrap();
            let want = cpu::compress(&bytes, dtype, Options::default()).unwrap();
            match order {
                TileOrder::Ordered => assert!(stream == want, "{dtype}: ordered arena stream != cpu::compress"),
                TileOrder::Unordered => {
                    assert!(cpu::compact(&stream).unwrap() == want, "{dtype}: compact(unordered arena stream)")
                }
            }
            assert!(cpu::decompress(&stream).unwrap() == bytes, "{dtype} {order:?}: arena slot decodes wrong");
        }
    }
}

/// Values stored straight into the stream (`Staging::Direct`: 16-bit values through a `u16` view,
/// 32-bit ones as words; `Staging::Auto` does it for 32-bit values only) and, for F32, the packed
/// words it replaced (`Staging::Words`), against the CPU reference in both tile orders: the
/// unordered stream after `cpu::compact`, the ordered one byte for byte (a 16-bit stream with an odd
/// count zeroes its last half-word). Sign-packed streams are staged whatever the staging says.
fn direct_stores_every_width(ctx: GpuContext) {
    let lengths = [0, 1, 31, 33, 4095, 4097, 9 * 4096 + 7];
    for (staging, dtypes) in
        [(Staging::Direct, &[DType::Bf16, DType::F16, DType::F32][..]), (Staging::Words, &[DType::F32][..])]
    {
        for codec in codecs(&ctx, CodecConfig { staging: Some(staging), ..Default::default() }) {
            for &dtype in dtypes {
                for sign_pack in [false, true] {
                    for (di, &density) in [0.0, 1e-4, 0.176, 0.5, 1.0].iter().enumerate() {
                        for (li, &n) in lengths.iter().enumerate() {
                            let bytes = data(n, density, dtype, sign_pack, (di * 10 + li) as u64 + 300);
                            let options = Options { sign_pack };
                            let what = format!(
                                "{staging:?} {dtype} sign_pack={sign_pack} density={density} n={n} {:?}",
                                codec.path()
                            );
                            check(&ctx, &codec, &bytes, dtype, options, &what);
                            let want = cpu::compress(&bytes, dtype, options).unwrap();
                            let (c, out) = compress_in(&ctx, &codec, &bytes, dtype, options, TileOrder::Ordered, &what);
                            let h = host::read_header(&ctx.device, &ctx.queue, &c).expect("header");
                            let len = c.layout.values_offset * 4 + h.value_words as u64 * 4;
                            let got = read_at(&ctx, &out, 0, len);
                            assert!(got == want, "{what}: the ordered stream differs from cpu::compress");
                        }
                    }
                }
            }
        }
    }
}

/// wgpu's GL backend (llvmpipe, no subgroups): the portable path's unordered compress, with the default
/// staging and with `Staging::Direct` (no 16-bit types there: F32 stored directly, BF16 in packed words).
fn gl_unordered_round_trip(ctx: GpuContext) {
    for staging in [Staging::Auto, Staging::Direct] {
        let codec = Codec::with_config(&ctx.device, CodecConfig { staging: Some(staging), ..Default::default() })
            .unwrap_or_else(|e| panic!("{staging:?} on GL: {e}"));
        for (dtype, density) in [(DType::Bf16, 0.176), (DType::F32, 0.5), (DType::E4m3, 0.01)] {
            for n in [0, 33, 4097, 5 * 4096 + 1] {
                let bytes = data(n, density, dtype, false, 3);
                let what = format!("gl unordered {staging:?} {dtype} n={n}");
                check(&ctx, &codec, &bytes, dtype, Options::default(), &what);
            }
        }
    }
}
