//! FP8 storage of BF16 activations in the arena (`Arena::fused_forward_fp8`, docs/FUSED.md "FP8 storage
//! (lossy)"): the CPU conversions against a manual definition, and the GPU path (subgroup and portable)
//! bit-exact against the CPU reference: dense output, stream bytes, delayed scale over two steps, fixed
//! scale, fused backward on the dequantized r', and the measured error of the lossy path.

use bitsparse::arena::{Arena, ArenaConfig, Fp8Scale, Slot};
use bitsparse::cpu::act::{self, Activation};
use bitsparse::cpu::fp8;
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, BufferRange, Codec, CodecConfig, DType, Error, Options, Staging};

use crate::common;
use crate::common::harness::{cpu_test, vulkan_test, Test};
use crate::common::{buf, canary, read_at};

pub fn tests() -> Vec<Test> {
    vec![
        cpu_test!(fp8_decode_exhaustive),
        cpu_test!(fp8_encode_rne_and_saturation),
        cpu_test!(fp8_dequantize_and_delayed_scale_are_correctly_rounded),
        vulkan_test!(fp8_delayed_scale_two_steps_bit_exact),
        vulkan_test!(fp8_fixed_scale_saturation_and_sign_pack),
        vulkan_test!(fp8_storage_refuses_bad_arguments),
        vulkan_test!(fp8_lossy_error_is_within_half_an_fp8_ulp),
        vulkan_test!(chunked_fp8_storage),
        vulkan_test!(arena_overflow_fp8_writes_nothing),
    ]
}

// ---------------------------------------------------------------- manual definition (f64, no `half`)

/// (mantissa bits, bias) of a format.
fn params(dtype: DType) -> (i32, i32) {
    if dtype == DType::E5m2 {
        (2, 15)
    } else {
        (3, 7)
    }
}

/// The value of a code from the format's definition; None for NaN.
fn manual_decode(code: u8, dtype: DType) -> Option<f64> {
    let (man, bias) = params(dtype);
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((code & 0x7f) >> man) as i32;
    let m = (code & ((1 << man) - 1)) as f64;
    match dtype {
        DType::E4m3 if code & 0x7f == 0x7f => return None,
        DType::E5m2 if e == 31 && m != 0.0 => return None,
        DType::E5m2 if e == 31 => return Some(sign * f64::INFINITY),
        _ => {}
    }
    let v = if e == 0 { m * 2f64.powi(1 - bias - man) } else { (1.0 + m / 2f64.powi(man)) * 2f64.powi(e - bias) };
    Some(sign * v)
}

/// Round-to-nearest-even with saturation by search over the finite non-negative codes.
fn manual_encode_pos(x: f64, dtype: DType) -> u8 {
    let max_code = if dtype == DType::E5m2 { 0x7b } else { 0x7e };
    let max = manual_decode(max_code, dtype).unwrap();
    if x >= max {
        return max_code;
    }
    // Codes 0..=max_code are increasing in value.
    let mut lo = 0u8;
    while lo < max_code && manual_decode(lo + 1, dtype).unwrap() <= x {
        lo += 1;
    }
    let (a, b) = (manual_decode(lo, dtype).unwrap(), manual_decode(lo + 1, dtype).unwrap());
    if x - a < b - x || (x - a == b - x && lo % 2 == 0) {
        lo
    } else {
        lo + 1
    }
}

/// bf16 round-to-nearest-even of a positive finite f64 (normal or subnormal bf16 range).
fn manual_bf16(x: f64) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let e = x.log2().floor() as i32;
    // log2 may be off by one near powers of two: fix the exponent so that 2^e <= x < 2^(e+1).
    let e = if 2f64.powi(e) > x {
        e - 1
    } else if 2f64.powi(e + 1) <= x {
        e + 1
    } else {
        e
    };
    let ulp = 2f64.powi(e.max(-126) - 7);
    let k = (x / ulp).round_ties_even();
    let v = k * ulp;
    if v >= 2f64.powi(128) {
        return 0x7f80;
    }
    ((v as f32).to_bits() >> 16) as u16
}

const FORMATS: [DType; 2] = [DType::E4m3, DType::E5m2];

fn fp8_decode_exhaustive() {
    for dtype in FORMATS {
        for code in 0..=255u8 {
            let got = fp8::decode(code, dtype) as f64;
            match manual_decode(code, dtype) {
                None => {
                    assert!(got.is_nan() && fp8::is_nan(code, dtype), "{dtype} {code:#04x}: NaN expected, got {got}")
                }
                Some(v) => {
                    assert!(!fp8::is_nan(code, dtype));
                    assert_eq!(got, v, "{dtype} {code:#04x}");
                    assert_eq!(got.is_sign_negative(), code & 0x80 != 0, "{dtype} {code:#04x}: sign");
                }
            }
        }
        assert_eq!(
            fp8::max_finite(dtype) as f64,
            manual_decode(if dtype == DType::E5m2 { 0x7b } else { 0x7e }, dtype).unwrap()
        );
    }
}

fn fp8_encode_rne_and_saturation() {
    for dtype in FORMATS {
        let nan = fp8::nan_code(dtype);
        assert_eq!(nan, if dtype == DType::E5m2 { 0x7e } else { 0x7f });
        assert!(fp8::is_nan(nan, dtype));
        assert_eq!(fp8::encode(f32::NAN, dtype), nan);
        assert_eq!(fp8::encode(f32::INFINITY, dtype), manual_encode_pos(f64::MAX, dtype));
        // Every code's value, every midpoint between neighbours (the ties) and a hair either side.
        let max_code = if dtype == DType::E5m2 { 0x7b } else { 0x7e };
        let mut xs: Vec<f64> = Vec::new();
        for c in 0..=max_code {
            let a = manual_decode(c, dtype).unwrap();
            let b = if c < max_code { manual_decode(c + 1, dtype).unwrap() } else { 2.0 * a };
            let mid = (a + b) / 2.0;
            xs.extend([a, mid, mid * (1.0 + 1e-6), mid * (1.0 - 1e-6), b * 0.999]);
        }
        xs.extend([1e-30, 1e30, 3.0e38]);
        for x in xs {
            let xf = x as f32;
            let want = manual_encode_pos(xf as f64, dtype);
            assert_eq!(fp8::encode(xf, dtype), want, "{dtype} encode({xf:e})");
            assert_eq!(fp8::encode(-xf, dtype), want | 0x80, "{dtype} encode(-{xf:e}): the sign is kept");
        }
        // quantize_bf16 = RNE of the exact product, for every positive BF16 and a few scales.
        for scale in [1.0f32, 0.75, 3.0, 448.0 / 3.0, 1.0e-3, 7.3e5] {
            for r in 0..0x7f80u16 {
                let x = f32::from_bits((r as u32) << 16) as f64 * scale as f64; // exact in f64
                let want = manual_encode_pos(x, dtype);
                assert_eq!(fp8::quantize_bf16(r, scale, dtype), want, "{dtype} quantize({r:#06x} * {scale})");
            }
            assert_eq!(fp8::quantize_bf16(0x7f80, scale, dtype), max_code, "+inf saturates");
            assert_eq!(fp8::quantize_bf16(0x7fc1, scale, dtype), nan, "NaN");
            assert_eq!(fp8::quantize_bf16(0xffc1, scale, dtype), nan, "NaN with its sign bit");
        }
    }
}

fn fp8_dequantize_and_delayed_scale_are_correctly_rounded() {
    for dtype in FORMATS {
        for scale in [1.0f32, 0.75, 3.0, 448.0 / 3.0, 57344.0 / 1.7, 1.0e-3, 7.3e5, 1.0e30, 1.0e36] {
            for q in 0..=255u8 {
                let got = fp8::dequantize_bf16(q, scale, dtype);
                match manual_decode(q, dtype) {
                    None => assert_eq!(got, act::BF16_QNAN),
                    Some(v) if v.is_infinite() => assert_eq!(got & 0x7fff, 0x7f80),
                    Some(v) => {
                        let want = manual_bf16(v.abs() / scale as f64)
                            | if v < 0.0 || (v == 0.0 && q & 0x80 != 0) { 0x8000 } else { 0 };
                        assert_eq!(got, want, "{dtype} dequantize({q:#04x} / {scale})");
                    }
                }
            }
        }
        // Delayed scale: FP8_MAX / amax correctly rounded in f32. The f64 quotient rounded to f32 is a
        // valid oracle: an inexact quotient of these significands lies farther from an f32 tie than
        // f64's rounding error.
        let max = fp8::max_finite(dtype);
        for amax in [1.0f32, 3.0, 0.1, 448.0, 57344.0, 1.0e-20, 3.0e38, 2.5] {
            let want = (max as f64 / amax as f64) as f32;
            assert_eq!(fp8::delayed_scale(amax.to_bits(), dtype), want, "{dtype} {max}/{amax}");
        }
        for bad in [0.0f32, f32::INFINITY, f32::NAN, 1.0e-40, 1.0e-37] {
            assert_eq!(fp8::delayed_scale(bad.to_bits(), dtype), 1.0, "{dtype} amax {bad}: no usable scale");
        }
    }
}

// ---------------------------------------------------------------- GPU

/// Pre-activations: negatives, -0.0, NaNs of both signs, values over a wide exponent range (some whose
/// scaled value rounds to FP8 zero), times 2^`mag`; `inf` adds infinities. Exponents keep r², 2·r·g
/// normal in f32 (docs/FUSED.md).
fn preact(n: usize, seed: u64, mag: u16, inf: bool) -> Vec<u8> {
    common::preact(n, seed, 105 + mag, 30, inf)
}

struct Step {
    scale: f32,
    amax: u32,
    q: Vec<u8>,
    r_prime: Vec<u8>,
}

/// One FP8 forward + decompress + fused backward, checked bit for bit against the CPU reference
/// computed with `scale_expected`. Returns what the step stored.
#[allow(clippy::too_many_arguments)]
fn fp8_step(
    ctx: &GpuContext,
    arena: &Arena,
    chunked: bool,
    z: &[u8],
    g: &[u8],
    act: Activation,
    dtype: DType,
    scale: Fp8Scale,
    scale_expected: f32,
    opts: Options,
    what: &str,
) -> Step {
    let n = z.len() / 2;
    let bytes = z.len() as u64;
    let (r_ref, a_ref) = act::forward(z, act);
    let amax = fp8::amax_bits(&r_ref);
    let q_ref = fp8::quantize(&r_ref, scale_expected, dtype);
    let r_prime = fp8::dequantize(&q_ref, scale_expected, dtype);
    let (dz_ref, a2_ref) = act::backward(&r_prime, g, act);
    let (zb, gb) = (buf(ctx, z), buf(ctx, g));
    let (ab, qb, dzb, a2b) = (canary(ctx, bytes), canary(ctx, n as u64), canary(ctx, bytes), canary(ctx, bytes));
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let syncs = sync::thread_host_syncs();
    arena.reset(&mut enc);
    let slot: Slot = arena
        .fused_forward_fp8(
            &mut enc,
            BufferRange::new(&zb, 0, bytes),
            n as u64,
            act,
            dtype,
            scale,
            opts,
            BufferRange::new(&ab, 0, bytes),
        )
        .unwrap();
    assert!(slot.is_fp8());
    assert_eq!(slot.layout.dtype, dtype);
    arena.decompress(&mut enc, &slot, BufferRange::new(&qb, 0, n as u64)).unwrap();
    arena
        .fused_backward(
            &mut enc,
            &slot,
            act,
            BufferRange::new(&gb, 0, bytes),
            BufferRange::new(&dzb, 0, bytes),
            Some(BufferRange::new(&a2b, 0, bytes)),
        )
        .unwrap();
    assert_eq!(
        sync::thread_host_syncs(),
        syncs,
        "{what}: recording the FP8 forward/backward synchronised with the host"
    );
    sync::submit(&ctx.queue, [enc.finish()]);
    arena.read_status(&ctx.queue).unwrap().check().unwrap();
    let (amax_gpu, scale_gpu) = arena.read_fp8(&ctx.queue, &slot).unwrap();
    assert_eq!(scale_gpu.to_bits(), scale_expected.to_bits(), "{what}: scale used");
    assert_eq!(amax_gpu.to_bits(), amax, "{what}: amax recorded");
    assert!(read_at(ctx, &ab, 0, bytes) == a_ref, "{what}: dense a differs from cpu::act::forward");
    assert!(read_at(ctx, &qb, 0, n as u64) == q_ref, "{what}: decompressed q differs from the CPU quantization");
    assert!(
        read_at(ctx, &dzb, 0, bytes) == dz_ref,
        "{what}: fused backward dL/dz differs from the CPU reference on r'"
    );
    assert!(read_at(ctx, &a2b, 0, bytes) == a2_ref, "{what}: fused backward a differs from the CPU reference on r'");
    // The stream: exactly cpu::compress(q) with the header's AMAX / SCALE words filled in.
    let (_, used) = arena.read_slot(&ctx.queue, &slot).unwrap();
    let stream = read_at(ctx, arena.buffer(), 0, used);
    // The stream is an ordinary e4m3/e5m2 tensor: the CPU codec decodes it to q.
    assert!(cpu::decompress(&stream).unwrap() == q_ref, "{what}: stream does not decode to q");
    if chunked {
        // A chunked compress leaves gaps between chunks: compare the compacted stream.
        let stream = cpu::compact(&stream).unwrap();
        let mut want = cpu::compress(&q_ref, dtype, opts).unwrap();
        want[24..28].copy_from_slice(&amax.to_le_bytes());
        want[28..32].copy_from_slice(&scale_expected.to_bits().to_le_bytes());
        assert!(stream == want, "{what}: compacted chunked stream differs from cpu::compress(q) (+ AMAX/SCALE)");
        return Step { scale: scale_expected, amax, q: q_ref, r_prime };
    }
    let mut want = cpu::compress(&q_ref, dtype, opts).unwrap();
    want[24..28].copy_from_slice(&amax.to_le_bytes());
    want[28..32].copy_from_slice(&scale_expected.to_bits().to_le_bytes());
    assert_eq!(stream.len(), want.len(), "{what}: arena stream size");
    let stream = cpu::compact(&stream).unwrap(); // the arena's tiles are unordered
    assert!(stream == want, "{what}: arena stream differs from cpu::compress(q) (+ AMAX/SCALE)");
    Step { scale: scale_expected, amax, q: q_ref, r_prime }
}

/// The default codec, the portable path, and FP8 storage staged in `u16` slots (`Staging::Halves`,
/// which `Staging::Auto` does not pick for FP8 storage).
fn codecs(ctx: &GpuContext) -> Vec<Codec> {
    vec![
        Codec::new(&ctx.device).unwrap(),
        Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap(),
        Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Halves), ..Default::default() }).unwrap(),
    ]
}

/// Step 1 of a fresh arena uses scale 1 (no amax yet); step 2 uses FP8_MAX / the amax step 1 recorded.
fn fp8_delayed_scale_two_steps_bit_exact(ctx: GpuContext) {
    for codec in codecs(&ctx) {
        for dtype in FORMATS {
            for (act, n) in [(Activation::Relu2, 5 * 4096 + 1001), (Activation::Relu, 4097), (Activation::Relu2, 33)] {
                let arena = Arena::new(&codec, ArenaConfig::new(4 << 20)).unwrap();
                let what = format!("{:?} {dtype} {act:?} n={n}", codec.path());
                // Step 1 small values (many round to FP8 zero at scale 1), step 2 larger ones.
                let z1 = preact(n, n as u64, 0, false);
                let z2 = preact(n, 3 + n as u64, 10, false);
                let g = preact(n, 11 + n as u64, 5, false);
                let s1 = fp8_step(
                    &ctx,
                    &arena,
                    false,
                    &z1,
                    &g,
                    act,
                    dtype,
                    Fp8Scale::Delayed,
                    1.0,
                    Options::default(),
                    &format!("{what} step 1"),
                );
                let want2 = fp8::delayed_scale(s1.amax, dtype);
                assert!(want2 != 1.0, "{what}: the test needs a nontrivial second scale");
                let rel = (want2 as f64 - fp8::max_finite(dtype) as f64 / f32::from_bits(s1.amax) as f64).abs()
                    / want2 as f64;
                assert!(rel <= 2f64.powi(-24), "{what}: scale 2 is FP8_MAX/amax1 correctly rounded");
                let s2 = fp8_step(
                    &ctx,
                    &arena,
                    false,
                    &z2,
                    &g,
                    act,
                    dtype,
                    Fp8Scale::Delayed,
                    want2,
                    Options::default(),
                    &format!("{what} step 2"),
                );
                assert_eq!(s2.scale, want2);
                // Step 1's amax scaled to FP8_MAX: the largest step-1 value would map to the largest code.
                assert!(s1.q.iter().any(|&c| c != 0), "{what}: step 1 stored nonzeros");
            }
        }
    }
}

/// A fixed scale, with values past FP8_MAX (saturation) and infinities; sign packing (q is never
/// negative: NaN becomes the positive NaN code) stays valid with NaNs whose sign bit is set.
fn fp8_fixed_scale_saturation_and_sign_pack(ctx: GpuContext) {
    for codec in codecs(&ctx) {
        for dtype in FORMATS {
            let arena = Arena::new(&codec, ArenaConfig::new(4 << 20)).unwrap();
            let n = 3 * 4096 + 9;
            let z = preact(n, 77, 15, true); // magnitudes up to ~2^40: saturate at scale 2^-3
            let g = preact(n, 78, 0, false);
            let scale = 0.125f32;
            for opts in [Options::default(), Options::SIGN_PACK] {
                let what = format!("{:?} {dtype} fixed {opts:?}", codec.path());
                let st = fp8_step(
                    &ctx,
                    &arena,
                    false,
                    &z,
                    &g,
                    Activation::Relu2,
                    dtype,
                    Fp8Scale::Fixed(scale),
                    scale,
                    opts,
                    &what,
                );
                let max_code = if dtype == DType::E5m2 { 0x7b } else { 0x7e };
                assert!(st.q.contains(&max_code), "{what}: some values saturate");
                assert!(st.q.contains(&fp8::nan_code(dtype)), "{what}: NaNs are stored as the NaN code");
                assert_eq!(st.r_prime.len(), 2 * n);
            }
            // The next delayed compress of slot 0 uses FP8_MAX / the amax the fixed one recorded (inf
            // here, so the rule gives 1.0).
            let st = fp8_step(
                &ctx,
                &arena,
                false,
                &z,
                &g,
                Activation::Relu,
                dtype,
                Fp8Scale::Delayed,
                1.0,
                Options::default(),
                "delayed after inf amax",
            );
            assert_eq!(st.amax, 0x7f80_0000, "amax of a tensor with +inf is +inf");
            let _ = st.scale;
        }
    }
}

fn fp8_storage_refuses_bad_arguments(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let arena = Arena::new(&codec, ArenaConfig::new(1 << 20)).unwrap();
    let z = buf(&ctx, &[0u8; 128]);
    let a = canary(&ctx, 128);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let zr = BufferRange::new(&z, 0, 128);
    let ar = BufferRange::new(&a, 0, 128);
    for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY, 1.0e-40] {
        let r = arena.fused_forward_fp8(
            &mut enc,
            zr,
            64,
            Activation::Relu,
            DType::E4m3,
            Fp8Scale::Fixed(bad),
            Options::default(),
            ar,
        );
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "scale {bad}");
    }
    for bad in [DType::Bf16, DType::F16] {
        let r =
            arena.fused_forward_fp8(&mut enc, zr, 64, Activation::Relu, bad, Fp8Scale::Delayed, Options::default(), ar);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{bad}");
    }
}

/// The documented error of the lossy path: for r whose scaled value lies in the FP8 normal range and
/// below FP8_MAX, |r' − r| / r ≤ 2^−(m+1) + 2^−9 (half an FP8 ulp, plus the BF16 rounding of r'),
/// m = 3 (e4m3) or 2 (e5m2); below it the absolute error is at most half the smallest subnormal / scale.
/// Measured on the GPU (a = r' from the fused backward with ReLU) and printed.
fn fp8_lossy_error_is_within_half_an_fp8_ulp(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    for dtype in FORMATS {
        // A fresh arena: slot 0's amax history would otherwise carry over from the other format.
        let arena = Arena::new(&codec, ArenaConfig::new(4 << 20)).unwrap();
        let (man, bias) = params(dtype);
        let n = 8 * 4096;
        // Step 1 records the amax, step 2 stores with the delayed scale: the realistic training case.
        let z = preact(n, 5, 8, false);
        let g = preact(n, 6, 0, false);
        let s1 = fp8_step(
            &ctx,
            &arena,
            false,
            &z,
            &g,
            Activation::Relu,
            dtype,
            Fp8Scale::Delayed,
            1.0,
            Options::default(),
            "error step 1",
        );
        let scale = fp8::delayed_scale(s1.amax, dtype);
        let st = fp8_step(
            &ctx,
            &arena,
            false,
            &z,
            &g,
            Activation::Relu,
            dtype,
            Fp8Scale::Delayed,
            scale,
            Options::default(),
            "error step 2",
        );
        let (r, _) = act::forward(&z, Activation::Relu);
        let min_normal = 2f64.powi(1 - bias);
        let half_sub = 2f64.powi(1 - bias - man) / 2.0;
        let bound = 2f64.powi(-(man + 1)) + 2f64.powi(-9) + 2f64.powi(-(man + 1) - 9);
        // Half the smallest subnormal, plus the BF16 rounding of r' (below the FP8 normal range).
        let sub_bound = half_sub + 2f64.powi(-9) * min_normal;
        let (mut max_rel, mut max_abs_sub, mut zeros) = (0f64, 0f64, 0usize);
        for (rc, pc) in r.chunks(2).zip(st.r_prime.chunks(2)) {
            let rb = u16::from_le_bytes([rc[0], rc[1]]);
            let pb = u16::from_le_bytes([pc[0], pc[1]]);
            if act::bf16_is_nan(rb) || rb == 0 {
                continue;
            }
            let (rv, pv) = (f32::from_bits((rb as u32) << 16) as f64, f32::from_bits((pb as u32) << 16) as f64);
            let x = rv * st.scale as f64;
            if x >= min_normal {
                max_rel = max_rel.max((pv - rv).abs() / rv);
            } else {
                max_abs_sub = max_abs_sub.max((pv - rv).abs() * st.scale as f64);
                zeros += (pb == 0) as usize;
            }
        }
        eprintln!(
            "{dtype}: scale {} (amax {}), max relative error {max_rel:.5} (bound {bound:.5}), subnormal range: max |r'-r|·scale {max_abs_sub:.3e} (bound {sub_bound:.3e}), {zeros} values stored as 0",
            st.scale,
            f32::from_bits(s1.amax)
        );
        assert!(max_rel > 0.0 && max_rel <= bound, "{dtype}: max relative error {max_rel} vs bound {bound}");
        assert!(max_abs_sub <= sub_bound, "{dtype}: subnormal-range error {max_abs_sub} vs {sub_bound}");
    }
}

/// Past the binding size (a test-only small binding): the FP8 forward is split into chunks of BF16
/// tiles; q, the dense outputs and the backward stay bit-exact, and the stream decodes to q.
fn chunked_fp8_storage(ctx: GpuContext) {
    let codec =
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(4 * 8192 + 1024), ..Default::default() })
            .unwrap();
    let arena = Arena::new(&codec, ArenaConfig::new(4 << 20)).unwrap();
    let n = 10 * 4096 + 77;
    let z = preact(n, 21, 4, false);
    let g = preact(n, 22, 0, false);
    for dtype in FORMATS {
        let s = fp8_step(
            &ctx,
            &arena,
            true,
            &z,
            &g,
            Activation::Relu2,
            dtype,
            Fp8Scale::Fixed(0.5),
            0.5,
            Options::default(),
            "chunked",
        );
        assert_eq!(s.q.len(), n);
    }
}

/// An FP8 tensor that does not fit: typed error, its decompress and fused backward write nothing.
fn arena_overflow_fp8_writes_nothing(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let n = 20 * 4096;
    let bytes = 2 * n as u64;
    let z = preact(n, 31, 4, false);
    let zb = buf(&ctx, &z);
    let (ab, qb, dzb) = (canary(&ctx, bytes), canary(&ctx, n as u64), canary(&ctx, bytes));
    // Room for the header, table and mask, not for the values.
    let layout = bitsparse::Layout::new(DType::E4m3, n as u64, Options::default()).unwrap();
    let arena = Arena::new(&codec, ArenaConfig::new((layout.values_offset * 4 + 1024).next_multiple_of(16))).unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let slot = arena
        .fused_forward_fp8(
            &mut enc,
            BufferRange::new(&zb, 0, bytes),
            n as u64,
            Activation::Relu2,
            DType::E4m3,
            Fp8Scale::Delayed,
            Options::default(),
            BufferRange::new(&ab, 0, bytes),
        )
        .unwrap();
    arena.decompress(&mut enc, &slot, BufferRange::new(&qb, 0, n as u64)).unwrap();
    arena
        .fused_backward(
            &mut enc,
            &slot,
            Activation::Relu2,
            BufferRange::new(&zb, 0, bytes),
            BufferRange::new(&dzb, 0, bytes),
            None,
        )
        .unwrap();
    sync::submit(&ctx.queue, [enc.finish()]);
    assert!(matches!(arena.read_status(&ctx.queue).unwrap().check(), Err(Error::ArenaOverflow { .. })));
    assert_eq!(read_at(&ctx, &qb, 0, n as u64), vec![0xA5u8; n], "overflowed decompress wrote");
    assert_eq!(read_at(&ctx, &dzb, 0, bytes), vec![0xA5u8; 2 * n], "overflowed fused backward wrote");
    // The dense a of an overflowed forward is not guaranteed (as with the lossless fused forward, tiles
    // that start after the overflow was flagged write nothing): the step is re-run after growing.
    let _ = &ab;
}
