//! F32 (dtype code 4, 32-bit elements, `BITS32` kernels) against the CPU reference, bit-exact both
//! ways: every density × length on the subgroup and portable paths, the look-back fallback, special
//! bit patterns, the sign refusal under packing, chunks past a lowered binding limit, the 2-D grid, the
//! arena, and the fused kernels' typed refusal of F32.

use bitsparse::arena::{Arena, ArenaConfig};
use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::cpu::act::Activation;
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, CodecPath, DType, Options, Staging};

use crate::common::harness::{vulkan_test, Test};
use crate::common::{buf, canary, data, read, round_trip};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(f32_matrix_subgroup),
        vulkan_test!(f32_matrix_portable),
        vulkan_test!(f32_matrix_lookback4_fallback),
        vulkan_test!(f32_special_bit_patterns),
        vulkan_test!(f32_sign_bit_under_sign_pack_is_an_error),
        vulkan_test!(f32_halves_staging_stages_words),
        vulkan_test!(chunked_f32_lowered_binding_limit),
        vulkan_test!(dispatch_2d_f32_lowered_limit),
        vulkan_test!(f32_arena_round_trip_and_fused_backward),
    ]
}

const DTYPE: DType = DType::F32;

/// The conformance densities, × the conformance lengths and nine whole tiles.
fn densities() -> Vec<f64> {
    DENSITIES.to_vec()
}

fn matrix(ctx: &GpuContext, codec: &Codec) {
    for sign_pack in [false, true] {
        for (di, &density) in densities().iter().enumerate() {
            for (li, &n) in LENGTHS.iter().chain(&[9 * 4096]).enumerate() {
                let bytes = data(n, density, DTYPE, sign_pack, (di * 100 + li) as u64);
                let what = format!("f32 sign_pack={sign_pack} density={density} n={n} path={:?}", codec.path());
                round_trip(ctx, codec, &bytes, DTYPE, Options { sign_pack }, &what);
            }
        }
    }
}

fn subgroup_codec(ctx: &GpuContext) -> Codec {
    let codec = Codec::new(&ctx.device).expect("codec");
    assert_eq!(codec.path(), CodecPath::Subgroup, "lavapipe has subgroups: the fast path must be used");
    codec
}

fn portable_codec(ctx: &GpuContext) -> Codec {
    Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).expect("codec")
}

fn f32_matrix_subgroup(ctx: GpuContext) {
    matrix(&ctx, &subgroup_codec(&ctx));
}

fn f32_matrix_portable(ctx: GpuContext) {
    matrix(&ctx, &portable_codec(&ctx));
}

/// The wide look-back window and the decoupled fallback forced at once (spin limit 1), on both paths,
/// over many tiles.
fn f32_matrix_lookback4_fallback(ctx: GpuContext) {
    let wide = CodecConfig {
        kernel_constants: Some("compress.LOOKBACK_PER_LANE=4".into()),
        spin_limit: Some(1),
        ..Default::default()
    };
    let portable = CodecConfig { spin_limit: Some(1), force_portable: true, ..Default::default() };
    for cfg in [wide, portable] {
        let codec = Codec::with_config(&ctx.device, cfg).expect("codec");
        for (density, sign_pack) in [(0.01, false), (0.176, true), (1.0, false)] {
            let bytes = data(61 * 4096 + 9, density, DTYPE, sign_pack, 3);
            let what = format!("f32 fallback {density} sign_pack={sign_pack} path={:?}", codec.path());
            round_trip(&ctx, &codec, &bytes, DTYPE, Options { sign_pack }, &what);
        }
    }
}

/// −0.0, NaN payloads of both signs, subnormals, ±∞, all ones, words with one zero half.
fn f32_special_bit_patterns(ctx: GpuContext) {
    let mut words = Vec::new();
    for i in 0..9000usize {
        words.push(if i % 5 == 4 { 0 } else { cpu::SPECIAL32[(i * 7) % cpu::SPECIAL32.len()] });
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let positive: Vec<u8> = words.iter().flat_map(|w| (w & 0x7FFF_FFFF).to_le_bytes()).collect();
    for codec in [subgroup_codec(&ctx), portable_codec(&ctx)] {
        round_trip(&ctx, &codec, &bytes, DTYPE, Options::default(), "f32 specials");
        round_trip(&ctx, &codec, &positive, DTYPE, Options::SIGN_PACK, "f32 positive specials, sign-packed");
    }
}

/// A nonzero with its sign bit set under sign packing is `SignBitSet` with its index, on both paths and
/// on the CPU: −0.0, a negative NaN, and a negative subnormal, each alone in a positive tensor.
fn f32_sign_bit_under_sign_pack_is_an_error(ctx: GpuContext) {
    for codec in [subgroup_codec(&ctx), portable_codec(&ctx)] {
        for bad in [0x8000_0000u32, 0xFFC0_0001, 0x8000_0001] {
            let mut d = cpu::synthetic_relu2(3 * 4096 + 5, 0.3, DTYPE, 7);
            let i = 2 * 4096 + 77;
            d[4 * i..4 * i + 4].copy_from_slice(&bad.to_le_bytes());
            let cpu_err = cpu::compress(&d, DTYPE, Options::SIGN_PACK).unwrap_err();
            assert!(matches!(cpu_err, bitsparse::Error::SignBitSet { index: Some(j) } if j == i as u64), "{cpu_err}");
            match host::compress_to_vec(&codec, &ctx.device, &ctx.queue, &d, DTYPE, Options::SIGN_PACK) {
                Err(bitsparse::Error::SignBitSet { index }) => assert_eq!(index, Some(i as u64), "{bad:#x}"),
                other => panic!("{bad:#x}: expected SignBitSet, got {other:?}"),
            }
        }
    }
}

/// 32-bit values do not fit `u16` slots: a codec configured for `Staging::Halves` stages F32 in words
/// (and stays bit-exact), while its 16-bit streams keep the halves.
fn f32_halves_staging_stages_words(ctx: GpuContext) {
    let codec = Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Halves), ..Default::default() })
        .expect("lavapipe has SHADER_I16");
    for sign_pack in [false, true] {
        let bytes = data(5 * 4096 + 31, 0.5, DTYPE, sign_pack, 9);
        round_trip(&ctx, &codec, &bytes, DTYPE, Options { sign_pack }, "f32 under Staging::Halves");
    }
}

/// Past the storage-binding size (lowered): many chunks, gaps between them, both paths and sign modes.
fn chunked_f32_lowered_binding_limit(ctx: GpuContext) {
    for force_portable in [false, true] {
        let cfg = CodecConfig { max_binding_bytes: Some(3 * 16384 + 512), force_portable, ..Default::default() };
        let codec = Codec::with_config(&ctx.device, cfg).expect("codec");
        for sign_pack in [false, true] {
            let bytes = data(17 * 4096 + 1001, 0.3, DTYPE, sign_pack, 11);
            let what = format!("chunked f32 sign_pack={sign_pack} portable={force_portable}");
            round_trip(&ctx, &codec, &bytes, DTYPE, Options { sign_pack }, &what);
        }
    }
}

/// Past the workgroups-per-dimension limit (lowered to 5): a 2-D grid, both paths.
fn dispatch_2d_f32_lowered_limit(ctx: GpuContext) {
    for force_portable in [false, true] {
        let cfg = CodecConfig { max_workgroups_per_dim: Some(5), force_portable, ..Default::default() };
        let codec = Codec::with_config(&ctx.device, cfg).expect("codec");
        for sign_pack in [false, true] {
            let bytes = data(23 * 4096 + 3, 0.176, DTYPE, sign_pack, 5);
            round_trip(
                &ctx,
                &codec,
                &bytes,
                DTYPE,
                Options { sign_pack },
                &format!("2d f32 portable={force_portable}"),
            );
        }
    }
}

fn submit(ctx: &GpuContext, enc: wgpu::CommandEncoder) {
    sync::submit(&ctx.queue, [enc.finish()]);
}

/// F32 tensors through the arena (plain and chunked codec): the arena's bytes decode to the input, and
/// the fused backward of an F32 slot is a typed `Unsupported`, recording nothing.
fn f32_arena_round_trip_and_fused_backward(ctx: GpuContext) {
    for max_binding in [None, Some(3 * 16384 + 512)] {
        let codec =
            Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: max_binding, ..Default::default() })
                .expect("codec");
        let a = Arena::new(&codec, ArenaConfig::new(4 << 20)).expect("arena");
        let cases: Vec<(Options, Vec<u8>)> = vec![
            (Options::default(), cpu::synthetic_bits(9 * 4096 + 5, 0.2, DTYPE, 1)),
            (Options::SIGN_PACK, cpu::synthetic_relu2(4097, 0.5, DTYPE, 2)),
            (Options::default(), Vec::new()),
        ];
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        a.reset(&mut enc);
        let inputs: Vec<wgpu::Buffer> = cases.iter().map(|(_, d)| buf(&ctx, d)).collect();
        let mut slots = Vec::new();
        for ((opts, d), b) in cases.iter().zip(&inputs) {
            let n = d.len() as u64 / 4;
            slots.push(a.push(&mut enc, BufferRange::new(b, 0, d.len() as u64), DTYPE, n, *opts).unwrap());
        }
        let outs: Vec<wgpu::Buffer> = cases.iter().map(|(_, d)| canary(&ctx, d.len() as u64)).collect();
        for (i, s) in slots.iter().enumerate() {
            a.decompress(&mut enc, s, BufferRange::new(&outs[i], 0, cases[i].1.len() as u64)).unwrap();
        }
        let g = canary(&ctx, cases[0].1.len() as u64);
        let dz = canary(&ctx, cases[0].1.len() as u64);
        let len = cases[0].1.len() as u64;
        // The fused backward of an F32 slot (ReLU: no arithmetic, so exact on every GPU whatever the bits).
        a.fused_backward(
            &mut enc,
            &slots[0],
            Activation::Relu,
            BufferRange::new(&g, 0, len),
            BufferRange::new(&dz, 0, len),
            None,
        )
        .unwrap();
        submit(&ctx, enc);
        let (dz_ref, _) =
            cpu::act::backward_dtype(&cases[0].1, &vec![0xA5u8; len as usize], DTYPE, Activation::Relu).unwrap();
        assert!(read(&ctx, &dz, len) == dz_ref, "fused backward of an F32 slot differs from the CPU port");
        a.read_status(&ctx.queue).unwrap().check().unwrap();
        for (i, (opts, d)) in cases.iter().enumerate() {
            assert!(
                read(&ctx, &outs[i], d.len() as u64) == *d,
                "f32 tensor {i} ({opts:?}) did not round-trip through the arena"
            );
            let (status, bytes) = a.read_slot(&ctx.queue, &slots[i]).unwrap();
            assert_eq!(status, 0);
            if max_binding.is_none() {
                assert_eq!(bytes, cpu::compress(d, DTYPE, *opts).unwrap().len() as u64, "tensor {i}: compact size");
            }
        }
    }
}
