//! The GPU codec against the CPU reference: every dtype × sign mode × path × density × edge length,
//! bit-exact both ways, plus the large cases (chunked, 2-D dispatch) and special bit patterns.

use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::host::context::GpuContext;
use bitsparse::{cpu, host, Codec, CodecConfig, CodecPath, DType, Options, Staging};

use crate::common::harness::{vulkan_test, Test};
use crate::common::{data, round_trip};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(matrix_bf16_subgroup),
        vulkan_test!(matrix_f16_subgroup),
        vulkan_test!(matrix_e4m3_subgroup),
        vulkan_test!(matrix_e5m2_subgroup),
        vulkan_test!(matrix_bf16_portable),
        vulkan_test!(matrix_f16_portable),
        vulkan_test!(matrix_e4m3_portable),
        vulkan_test!(matrix_e5m2_portable),
        vulkan_test!(matrix_bf16_lookback4),
        vulkan_test!(matrix_f16_lookback4),
        vulkan_test!(matrix_e4m3_lookback4),
        vulkan_test!(matrix_e5m2_lookback4),
        vulkan_test!(matrix_bf16_words),
        vulkan_test!(matrix_f16_words),
        vulkan_test!(matrix_e4m3_words),
        vulkan_test!(matrix_e5m2_words),
        vulkan_test!(special_bit_patterns),
        vulkan_test!(sign_bit_under_sign_pack_is_an_error),
        vulkan_test!(chunked_lowered_binding_limit),
        vulkan_test!(dispatch_2d_lowered_limit),
        vulkan_test!(lookback_fallback_forced),
        vulkan_test!(many_tiles_one_dispatch_bit_exact),
        vulkan_test!(lookback4_many_tiles_and_bad_spec),
    ]
}

/// Nine whole tiles (no partial last tile), past the longest of the conformance lengths.
const WHOLE_TILES: usize = 9 * 4096;

/// Every density × length of the conformance suite (and [`WHOLE_TILES`]), both sign modes.
fn matrix(ctx: &GpuContext, codec: &Codec, dtype: DType) {
    for sign_pack in [false, true] {
        let options = Options { sign_pack };
        for (di, &density) in DENSITIES.iter().enumerate() {
            for (li, &n) in LENGTHS.iter().chain(&[WHOLE_TILES]).enumerate() {
                let bytes = data(n, density, dtype, sign_pack, (di * 100 + li) as u64);
                let what = format!("{dtype} sign_pack={sign_pack} density={density} n={n} path={:?}", codec.path());
                round_trip(ctx, codec, &bytes, dtype, options, &what);
            }
        }
    }
}

fn subgroup_codec(ctx: &GpuContext) -> Codec {
    let codec = Codec::new(&ctx.device).expect("codec");
    assert_eq!(codec.path(), CodecPath::Subgroup, "lavapipe has subgroups: the fast path must be used");
    codec
}

/// A look-back window of 4 statuses per lane (`compress.LOOKBACK_PER_LANE=4`, the tuning knob's other
/// look-back path), with the fallback forced at once (`spin_limit` 1).
fn lookback4_codec(ctx: &GpuContext) -> Codec {
    let cfg = CodecConfig {
        kernel_constants: Some("compress.LOOKBACK_PER_LANE=4".into()),
        spin_limit: Some(1),
        ..Default::default()
    };
    let codec = Codec::with_config(&ctx.device, cfg).expect("codec");
    assert_eq!(codec.path(), CodecPath::Subgroup);
    codec
}

/// Compaction staged in packed `u32` words (`Staging::Words`): what devices without
/// `Features::SHADER_I16` run; lavapipe has it, so `Staging::Auto` stages in `u16` slots there.
fn words_codec(ctx: &GpuContext) -> Codec {
    let codec = Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Words), ..Default::default() })
        .expect("codec");
    assert_eq!(codec.path(), CodecPath::Subgroup);
    codec
}

fn portable_codec(ctx: &GpuContext) -> Codec {
    Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).expect("codec")
}

macro_rules! matrix_tests {
    ($($name:ident: $dtype:expr, $codec:ident;)*) => {$(
        fn $name(ctx: GpuContext) {
            let codec = $codec(&ctx);
            matrix(&ctx, &codec, $dtype);
        }
    )*};
}

matrix_tests! {
    matrix_bf16_subgroup: DType::Bf16, subgroup_codec;
    matrix_f16_subgroup: DType::F16, subgroup_codec;
    matrix_e4m3_subgroup: DType::E4m3, subgroup_codec;
    matrix_e5m2_subgroup: DType::E5m2, subgroup_codec;
    matrix_bf16_portable: DType::Bf16, portable_codec;
    matrix_f16_portable: DType::F16, portable_codec;
    matrix_e4m3_portable: DType::E4m3, portable_codec;
    matrix_e5m2_portable: DType::E5m2, portable_codec;
    matrix_bf16_lookback4: DType::Bf16, lookback4_codec;
    matrix_f16_lookback4: DType::F16, lookback4_codec;
    matrix_e4m3_lookback4: DType::E4m3, lookback4_codec;
    matrix_e5m2_lookback4: DType::E5m2, lookback4_codec;
    matrix_bf16_words: DType::Bf16, words_codec;
    matrix_f16_words: DType::F16, words_codec;
    matrix_e4m3_words: DType::E4m3, words_codec;
    matrix_e5m2_words: DType::E5m2, words_codec;
}

/// Special bit patterns: −0.0, NaN payloads, infinities, subnormals, all-ones, and their neighbours.
fn special_bit_patterns(ctx: GpuContext) {
    for codec in [subgroup_codec(&ctx), portable_codec(&ctx)] {
        let w16: [u16; 12] =
            [0x8000, 0x7fc1, 0xffff, 0x7f80, 0xff80, 0x0001, 0x8001, 0x7fff, 0x0000, 0x7c00, 0xfe00, 0x0400];
        let mut d16 = Vec::new();
        for i in 0..5000usize {
            d16.extend_from_slice(&w16[(i * 7) % w16.len()].to_le_bytes());
        }
        for dtype in [DType::Bf16, DType::F16] {
            round_trip(&ctx, &codec, &d16, dtype, Options::default(), &format!("{dtype} specials"));
        }
        let w8: [u8; 10] = [0x80, 0x7f, 0xff, 0x01, 0x81, 0x00, 0x7c, 0xfc, 0x7e, 0x08];
        let d8: Vec<u8> = (0..9001usize).map(|i| w8[(i * 3) % w8.len()]).collect();
        for dtype in [DType::E4m3, DType::E5m2] {
            round_trip(&ctx, &codec, &d8, dtype, Options::default(), &format!("{dtype} specials"));
        }
        // Sign packing on positive specials (NaN with clear sign, +inf, subnormals).
        let pos: Vec<u8> = d16.chunks(2).flat_map(|c| [c[0], c[1] & 0x7f]).collect();
        round_trip(&ctx, &codec, &pos, DType::Bf16, Options::SIGN_PACK, "bf16 positive specials, sign-packed");
    }
}

/// A set sign bit under sign packing is an error, found on the GPU.
fn sign_bit_under_sign_pack_is_an_error(ctx: GpuContext) {
    for codec in [subgroup_codec(&ctx), portable_codec(&ctx)] {
        for dtype in DType::ALL {
            let mut d = cpu::synthetic_relu2(3 * 4096 + 5, 0.3, dtype, 7);
            // −0.0 (only the sign bit) deep inside the second tile.
            let i = 4096 + 1234;
            let eb = dtype.bytes() as usize;
            d[i * eb..(i + 1) * eb].fill(0);
            d[(i + 1) * eb - 1] = 0x80;
            let err =
                host::compress_to_vec(&codec, &ctx.device, &ctx.queue, &d, dtype, Options::SIGN_PACK).unwrap_err();
            match err {
                bitsparse::Error::SignBitSet { index } => assert_eq!(index, Some(i as u64), "{dtype}"),
                e => panic!("{dtype}: expected SignBitSet, got {e}"),
            }
        }
    }
}

/// Past the storage-binding size: a lowered binding limit forces many chunks (and gaps between them).
fn chunked_lowered_binding_limit(ctx: GpuContext) {
    for (dtype, path) in [(DType::Bf16, false), (DType::E4m3, false), (DType::F16, true), (DType::E5m2, true)] {
        let codec = Codec::with_config(
            &ctx.device,
            CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), force_portable: path, ..Default::default() },
        )
        .expect("codec");
        for sign_pack in [false, true] {
            let n = 17 * 4096 + 1001;
            let bytes = data(n, 0.3, dtype, sign_pack, 11);
            round_trip(
                &ctx,
                &codec,
                &bytes,
                dtype,
                Options { sign_pack },
                &format!("chunked {dtype} sign_pack={sign_pack}"),
            );
        }
    }
}

/// Past 65535 workgroups per dimension, reached with a lowered limit: the grid becomes 2-D.
fn dispatch_2d_lowered_limit(ctx: GpuContext) {
    for force_portable in [false, true] {
        let codec = Codec::with_config(
            &ctx.device,
            CodecConfig { max_workgroups_per_dim: Some(5), force_portable, ..Default::default() },
        )
        .expect("codec");
        for dtype in [DType::Bf16, DType::E5m2] {
            let n = 23 * 4096 + 3;
            let bytes = data(n, 0.176, dtype, false, 5);
            round_trip(&ctx, &codec, &bytes, dtype, Options::default(), &format!("2d {dtype}"));
        }
    }
}

/// The decoupled fallback: with a look-back limit of one attempt, workgroups recompute stalled
/// predecessors all the time; the bytes must not change.
fn lookback_fallback_forced(ctx: GpuContext) {
    for force_portable in [false, true] {
        let codec =
            Codec::with_config(&ctx.device, CodecConfig { spin_limit: Some(1), force_portable, ..Default::default() })
                .expect("codec");
        for (dtype, sign_pack) in [(DType::Bf16, false), (DType::F16, true), (DType::E4m3, true), (DType::E5m2, false)]
        {
            for density in [0.01, 0.176, 1.0] {
                let bytes = data(61 * 4096 + 9, density, dtype, sign_pack, 3);
                round_trip(&ctx, &codec, &bytes, dtype, Options { sign_pack }, &format!("fallback {dtype} {density}"));
            }
        }
    }
}

/// Thousands of tiles in one dispatch (12.6M elements): enough for lavapipe to split the grid between
/// its threads. Tiles assigned by workgroup id made the second half's prefixes wrong there; this test
/// failed on that variant and passes with the start-order ticket.
fn many_tiles_one_dispatch_bit_exact(ctx: GpuContext) {
    let n = 3072 * 4096;
    let d = cpu::synthetic_relu2(n, 0.5, DType::Bf16, 42);
    let want = cpu::compress(&d, DType::Bf16, Options::default()).unwrap();
    for codec in [subgroup_codec(&ctx), portable_codec(&ctx)] {
        let got = host::compress_to_vec(&codec, &ctx.device, &ctx.queue, &d, DType::Bf16, Options::default()).unwrap();
        assert!(got == want, "{:?}: GPU stream of 3072 tiles differs from the CPU reference", codec.path());
        let back = host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &want).unwrap();
        assert!(back == d, "{:?}: decode of 3072 tiles differs", codec.path());
    }
}

/// The look-back window of 4 statuses per lane across many tiles in one dispatch, and a tuning spec
/// the shaders cannot take is a typed error at construction.
fn lookback4_many_tiles_and_bad_spec(ctx: GpuContext) {
    let codec = lookback4_codec(&ctx);
    for (rho, dtype) in [(0.003, DType::Bf16), (0.7, DType::Bf16), (0.05, DType::E4m3)] {
        let d = cpu::synthetic_relu2(300 * 4096 + 11, rho, dtype, 5);
        for sign_pack in [false, true] {
            let opts = Options { sign_pack };
            let want = cpu::compress(&d, dtype, opts).unwrap();
            let got = host::compress_to_vec(&codec, &ctx.device, &ctx.queue, &d, dtype, opts).unwrap();
            assert!(got == want, "{dtype:?} rho={rho} sign_pack={sign_pack}: stream differs from the CPU reference");
        }
    }
    for bad in ["compress.LOOKBACK_PER_LANE=9", "compress.NOPE=1", "decompress.SPIN_LIMIT=1"] {
        let r =
            Codec::with_config(&ctx.device, CodecConfig { kernel_constants: Some(bad.into()), ..Default::default() });
        assert!(matches!(r, Err(bitsparse::Error::InvalidArgument(_))), "{bad:?} was accepted");
    }
}
