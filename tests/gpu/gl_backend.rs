//! The codec on wgpu's GL backend (llvmpipe through EGL here): it has no subgroups and no 16-bit
//! types, so the codec must choose the portable path on its own, and that path must be bit-exact against
//! the CPU reference both ways on the conformance suite's densities and lengths.
//!
//! Without a GL adapter these tests are ignored, and fail under `CI=true` (`common::harness`).

use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::host::context::GpuContext;
use bitsparse::{cpu, host, Codec, CodecConfig, CodecPath, DType, Error, Options, Staging, TileOrder};

use crate::common::harness::{gl_test, Test};
use crate::common::{data, round_trip};

pub fn tests() -> Vec<Test> {
    vec![
        gl_test!(gl_codec_picks_portable_path),
        gl_test!(gl_matrix_bf16),
        gl_test!(gl_matrix_f16),
        gl_test!(gl_matrix_e4m3),
        gl_test!(gl_matrix_e5m2),
        gl_test!(gl_matrix_f32),
        gl_test!(gl_chunked_and_dispatch_2d_f32),
        gl_test!(gl_multi_tile_relu2),
        gl_test!(gl_chunked_and_dispatch_2d_lowered_limits),
        gl_test!(gl_sign_bit_under_sign_pack_is_an_error),
        gl_test!(gl_arena_fused_matches_cpu),
    ]
}

/// Five tiles and a partial one, past the longest of the conformance lengths.
const LONG: usize = 5 * 4096 + 77;

/// Checks the device really is GL (a missing Mesa package can make wgpu hand out something else
/// silently).
fn gl(ctx: GpuContext) -> GpuContext {
    assert_eq!(ctx.info.backend, wgpu::Backend::Gl, "common::gl() returned a non-GL adapter: {}", ctx.describe());
    ctx
}

/// GL has neither `Features::SUBGROUP` nor `SHADER_I16`: the default codec must pick the portable path.
fn gl_codec_picks_portable_path(ctx: GpuContext) {
    let ctx = gl(ctx);
    assert!(!ctx.device.features().contains(wgpu::Features::SUBGROUP), "GL device unexpectedly has subgroups");
    assert!(!ctx.device.features().contains(wgpu::Features::SHADER_I16), "GL device unexpectedly has 16-bit types");
    let codec = Codec::new(&ctx.device).expect("the codec must build on GL");
    assert_eq!(codec.path(), CodecPath::Portable, "no subgroups on GL: the codec must use the portable path");
    // u16 staging cannot be built without SHADER_I16: asking for it is an error, not a fallback.
    let halves = Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Halves), ..Default::default() });
    assert!(matches!(halves, Err(Error::Unsupported(_))), "Staging::Halves on GL: {:?}", halves.err());
}

fn matrix(ctx: GpuContext, dtype: DType) {
    let ctx = gl(ctx);
    let codec = Codec::new(&ctx.device).expect("codec");
    assert_eq!(codec.path(), CodecPath::Portable);
    for sign_pack in [false, true] {
        for (di, &density) in DENSITIES.iter().enumerate() {
            for (li, &n) in LENGTHS.iter().chain(&[LONG]).enumerate() {
                let bytes = data(n, density, dtype, sign_pack, (1000 + di * 100 + li) as u64);
                let what = format!("GL {dtype} sign_pack={sign_pack} density={density} n={n}");
                round_trip(&ctx, &codec, &bytes, dtype, Options { sign_pack }, &what);
            }
        }
    }
}

fn gl_matrix_bf16(ctx: GpuContext) {
    matrix(ctx, DType::Bf16);
}

fn gl_matrix_f16(ctx: GpuContext) {
    matrix(ctx, DType::F16);
}

fn gl_matrix_e4m3(ctx: GpuContext) {
    matrix(ctx, DType::E4m3);
}

fn gl_matrix_e5m2(ctx: GpuContext) {
    matrix(ctx, DType::E5m2);
}

fn gl_matrix_f32(ctx: GpuContext) {
    matrix(ctx, DType::F32);
}

/// F32 through the chunked path and the 2-D grid on GL (lowered limits), both sign modes, with the
/// 32-bit special patterns at the start.
fn gl_chunked_and_dispatch_2d_f32(ctx: GpuContext) {
    let ctx = gl(ctx);
    let codec = Codec::with_config(
        &ctx.device,
        CodecConfig { max_binding_bytes: Some(3 * 16384 + 512), max_workgroups_per_dim: Some(2), ..Default::default() },
    )
    .expect("codec");
    for sign_pack in [false, true] {
        let mut bytes = data(13 * 4096 + 999, 0.3, DType::F32, sign_pack, 22);
        for (i, &w) in cpu::SPECIAL32.iter().enumerate() {
            let w = if sign_pack { w & 0x7FFF_FFFF } else { w };
            bytes[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        let what = format!("GL chunked+2d f32 sign_pack={sign_pack}");
        round_trip(&ctx, &codec, &bytes, DType::F32, Options { sign_pack }, &what);
    }
}

/// Realistic ReLU² data over many tiles, so the chained scan's look-back (and its fallback) is
/// exercised with many workgroups in flight on GL.
fn gl_multi_tile_relu2(ctx: GpuContext) {
    let ctx = gl(ctx);
    for spin_limit in [None, Some(1)] {
        let codec = Codec::with_config(&ctx.device, CodecConfig { spin_limit, ..Default::default() }).expect("codec");
        for dtype in [DType::Bf16, DType::E4m3] {
            let bytes = cpu::synthetic_relu2(41 * 4096 + 5, 0.176, dtype, 9);
            round_trip(
                &ctx,
                &codec,
                &bytes,
                dtype,
                Options::SIGN_PACK,
                &format!("GL relu2 {dtype} spin={spin_limit:?}"),
            );
        }
    }
}

/// The chunked and 2-D dispatch paths on GL, reached with lowered limits.
fn gl_chunked_and_dispatch_2d_lowered_limits(ctx: GpuContext) {
    let ctx = gl(ctx);
    let codec = Codec::with_config(
        &ctx.device,
        CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), max_workgroups_per_dim: Some(2), ..Default::default() },
    )
    .expect("codec");
    for dtype in [DType::F16, DType::E5m2] {
        let bytes = data(13 * 4096 + 999, 0.3, dtype, false, 21);
        round_trip(&ctx, &codec, &bytes, dtype, Options::default(), &format!("GL chunked+2d {dtype}"));
    }
}

/// A sign bit under sign packing is found by the portable kernels on GL too.
fn gl_sign_bit_under_sign_pack_is_an_error(ctx: GpuContext) {
    let ctx = gl(ctx);
    let codec = Codec::new(&ctx.device).expect("codec");
    for dtype in DType::ALL {
        let mut d = cpu::synthetic_relu2(2 * 4096 + 3, 0.2, dtype, 4);
        let i = 4096 + 17;
        let eb = dtype.bytes() as usize;
        d[(i + 1) * eb - 1] |= 0x80;
        match host::compress_to_vec(&codec, &ctx.device, &ctx.queue, &d, dtype, Options::SIGN_PACK) {
            Err(bitsparse::Error::SignBitSet { index }) => assert_eq!(index, Some(i as u64), "{dtype}"),
            other => panic!("{dtype}: expected SignBitSet, got {other:?}"),
        }
    }
}

/// The arena and the fused kernels on the GL backend (portable path, no 16-bit types): fused forward
/// and backward bit-exact against the CPU reference, and the compressed r equals `cpu::compress(r)`:
/// byte for byte under `TileOrder::Ordered`, after `cpu::compact` under the default `Unordered` (whose
/// tiles land in the order they claimed their place: on llvmpipe that order varies from run to run).
fn gl_arena_fused_matches_cpu(ctx: GpuContext) {
    use bitsparse::arena::{Arena, ArenaConfig};
    use bitsparse::cpu::act::{self, Activation};
    use bitsparse::host::sync;
    use bitsparse::BufferRange;
    use wgpu::util::DeviceExt;
    let ctx = gl(ctx);
    let codec = Codec::new(&ctx.device).expect("codec");
    assert_eq!(codec.path(), CodecPath::Portable);
    let n = 2 * 4096 + 77;
    // Pre-activations: a synthetic relu(z)² on the positive side, -1-ish elsewhere, plus -0.0 and a NaN.
    let mut z: Vec<u8> = cpu::synthetic_relu2(n, 0.3, DType::Bf16, 5)
        .chunks_exact(2)
        .enumerate()
        .flat_map(|(i, c)| {
            let v = u16::from_le_bytes([c[0], c[1]]);
            (if v == 0 { 0xbf80u16 | (i as u16 & 0x3f) } else { v }).to_le_bytes()
        })
        .collect();
    z[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
    z[2..4].copy_from_slice(&0x7fc1u16.to_le_bytes());
    let g: Vec<u8> = cpu::synthetic_relu2(n, 1.0, DType::Bf16, 6);
    let bytes = z.len() as u64;
    let mk = |d: &[u8]| {
        let mut v = d.to_vec();
        v.resize(d.len().div_ceil(16) * 16, 0);
        ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &v,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
    };
    let (zb, gb) = (mk(&z), mk(&g));
    let (r, a) = act::forward(&z, Activation::Relu2);
    let (dz, a2) = act::backward(&r, &g, Activation::Relu2);
    let want = cpu::compress(&r, DType::Bf16, Options::default()).unwrap();
    for order in [TileOrder::Ordered, TileOrder::Unordered] {
        let arena = Arena::new(&codec, ArenaConfig { tile_order: order, ..ArenaConfig::new(1 << 20) }).expect("arena");
        // Fresh outputs per order, so that the second pass cannot pass on the first one's results.
        let (ab, dzb, a2b) = (mk(&vec![0xA5; z.len()]), mk(&vec![0xA5; z.len()]), mk(&vec![0xA5; z.len()]));
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        arena.reset(&mut enc);
        let slot = arena
            .fused_forward(
                &mut enc,
                BufferRange::new(&zb, 0, bytes),
                n as u64,
                Activation::Relu2,
                Options::default(),
                BufferRange::new(&ab, 0, bytes),
            )
            .unwrap();
        arena
            .fused_backward(
                &mut enc,
                &slot,
                Activation::Relu2,
                BufferRange::new(&gb, 0, bytes),
                BufferRange::new(&dzb, 0, bytes),
                Some(BufferRange::new(&a2b, 0, bytes)),
            )
            .unwrap();
        sync::submit(&ctx.queue, [enc.finish()]);
        arena.read_status(&ctx.queue).unwrap().check().unwrap();
        let read = |b: &wgpu::Buffer| sync::read_buffer(&ctx.device, &ctx.queue, b, 0, bytes).unwrap();
        assert!(read(&ab) == a, "GL fused forward a ({order:?})");
        assert!(read(&dzb) == dz, "GL fused backward dL/dz ({order:?})");
        assert!(read(&a2b) == a2, "GL fused backward a ({order:?})");
        let (_, used) = arena.read_slot(&ctx.queue, &slot).unwrap();
        let stream = sync::read_buffer(&ctx.device, &ctx.queue, arena.buffer(), 0, used).unwrap();
        match order {
            TileOrder::Ordered => assert!(stream == want, "GL arena bytes (ordered)"),
            TileOrder::Unordered => {
                assert!(cpu::compact(&stream).unwrap() == want, "GL arena bytes (unordered, compacted)")
            }
        }
    }
}
