//! The fused kernels and the dense baselines for F32 and F16 (`Arena::fused_forward_dtype`,
//! `Arena::fused_backward`, `DenseAct::forward_dtype` / `backward_dtype`): bit-identical to the CPU port
//! (`cpu::act::forward_dtype` / `backward_dtype`, the dense op order a = r*r; t = g*r, dr = t+t, dz = dr
//! where r > 0) and to each other, on the subgroup and portable paths, ReLU and ReLU², both sign modes,
//! partial tiles, special values. F32 inputs keep every product of the ReLU² math normal in f32
//! (GPUs may flush f32 subnormals: docs/FUSED.md); subnormals appear where no arithmetic sees them.
//! F16 inputs are unrestricted (its math never forms an f32 subnormal).

use bitsparse::arena::{Arena, ArenaConfig};
use bitsparse::cpu::act::{self, Activation};
use bitsparse::dense_act::DenseAct;
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, BufferRange, Codec, CodecConfig, DType, Error, Options};

use crate::common::harness::{vulkan_test, Test};
use crate::common::{buf, canary, read};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(fused_f32_forward_backward_match_cpu_and_dense),
        vulkan_test!(fused_f16_forward_backward_match_cpu_and_dense),
        vulkan_test!(fused_f16_every_value),
        vulkan_test!(fused_bf16_square_forms_every_value),
        vulkan_test!(fused_f32_f16_sign_pack_and_refusals),
    ]
}

fn submit(ctx: &GpuContext, enc: wgpu::CommandEncoder) {
    sync::submit(&ctx.queue, [enc.finish()]);
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// F32 (z, g) bit patterns: every 61st element in turn a special value (±0, NaN payloads of both signs,
/// ±∞, subnormals, 2^64 whose square overflows, the largest finite), of the rest 50 % zeros and values
/// with exponents 2^-60 .. 2^70 (z) / 2^-60 .. 2^60 (g). Where r = relu(z) is subnormal, g is ±0, and g
/// is never subnormal, so every product in the ReLU² math is 0 or normal (or overflows).
fn f32_inputs(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    const SPECIAL: [u32; 12] = [
        0x8000_0000,
        0x7fc0_0001,
        0xffc1_2345,
        0x7f80_0000,
        0xff80_0000,
        0x0000_0001,
        0x0040_0000,
        0x8000_0003,
        0x5f80_0000,
        0x7f7f_ffff,
        0x7f80_0001,
        0x0000_0000,
    ];
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let val = |rng: &mut Rng, span: u64| -> u32 {
        let s = rng.next();
        if (s >> 40) % 2 == 0 {
            return 0;
        }
        let exp = 67 + ((s >> 8) % span) as u32;
        ((s & 1) as u32) << 31 | (exp << 23) | ((s >> 20) as u32 & 0x7f_ffff)
    };
    let mut z = Vec::with_capacity(n);
    let mut g = Vec::with_capacity(n);
    for i in 0..n {
        z.push(if i % 61 < SPECIAL.len() && i % 3 == 0 {
            SPECIAL[(i / 61 + i % 61) % SPECIAL.len()]
        } else {
            val(&mut rng, 131)
        });
        let mut gi = if i % 59 < 6 {
            [0x7f80_0000, 0xff80_0000, 0, 0x8000_0000, 0x7fc0_0002, 0xffc0_0000][i % 59]
        } else {
            val(&mut rng, 121)
        };
        let r = act::relu_bits32(z[i]);
        if r != 0 && r & 0x7f80_0000 == 0 {
            gi &= 0x8000_0000; // r subnormal: g = ±0
        }
        g.push(gi);
    }
    (z, g)
}

/// F16 (z, g): random bits (every class: zeros, subnormals, normals, ±∞, NaN payloads of both signs)
/// with a third of z zeroed.
fn f16_inputs(n: usize, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let mut z = Vec::with_capacity(n);
    let mut g = Vec::with_capacity(n);
    for i in 0..n {
        let s = rng.next();
        z.push(match i % 53 {
            0 => 0x8000,
            1 => 0x7e01,
            2 => 0xfd23,
            3 => 0x7c00,
            4 => 0x5c00, // 256: its square overflows
            5 => 0x0001,
            _ if s % 3 == 0 => 0,
            _ => (s >> 16) as u16,
        });
        g.push((s >> 40) as u16);
    }
    (z, g)
}

fn le<T: Copy>(v: &[T], f: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// One fused forward + decompress + fused backward with and without `a`, and the dense kernels on the
/// same data, all compared with the CPU port.
#[allow(clippy::too_many_arguments)]
fn case(
    ctx: &GpuContext,
    codec: &Codec,
    dense: &DenseAct,
    dtype: DType,
    z: &[u8],
    g: &[u8],
    act: Activation,
    opts: Options,
) {
    let eb = dtype.bytes() as usize;
    let n = z.len() / eb;
    let bytes = z.len() as u64;
    let what = format!("{dtype} {act:?} n={n} {opts:?} path={:?}", codec.path());
    let (r_ref, a_ref) = act::forward_dtype(z, dtype, act).unwrap();
    let (dz_ref, a2_ref) = act::backward_dtype(&r_ref, g, dtype, act).unwrap();
    let arena = Arena::new(codec, ArenaConfig::new(4 << 20)).expect("arena");
    let (zb, gb) = (buf(ctx, z), buf(ctx, g));
    let outs: Vec<wgpu::Buffer> = (0..5).map(|_| canary(ctx, bytes)).collect();
    let range = |b| BufferRange::new(b, 0, bytes);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    arena.reset(&mut enc);
    let slot = arena.fused_forward_dtype(&mut enc, range(&zb), dtype, n as u64, act, opts, range(&outs[0])).unwrap();
    arena.decompress(&mut enc, &slot, range(&outs[1])).unwrap();
    arena.fused_backward(&mut enc, &slot, act, range(&gb), range(&outs[2]), Some(range(&outs[3]))).unwrap();
    arena.fused_backward(&mut enc, &slot, act, range(&gb), range(&outs[4]), None).unwrap();
    // The dense kernels on whole 16-byte vectors: the inputs padded with zeros.
    let padded = bytes.next_multiple_of(16);
    let nd = padded / eb as u64;
    let r_pad = {
        let mut r = r_ref.clone();
        r.resize(padded as usize, 0);
        buf(ctx, &r)
    };
    let (da, ddz) = (canary(ctx, padded), canary(ctx, padded));
    let prange = |b| BufferRange::new(b, 0, padded);
    let zpad = buf(ctx, &[z, &vec![0u8; (padded - bytes) as usize]].concat());
    let gpad = buf(ctx, &[g, &vec![0u8; (padded - bytes) as usize]].concat());
    if nd > 0 {
        dense.forward_dtype(&mut enc, dtype, prange(&zpad), prange(&da), nd, act).unwrap();
        dense.backward_dtype(&mut enc, dtype, prange(&r_pad), prange(&gpad), prange(&ddz), nd, act).unwrap();
    }
    submit(ctx, enc);
    let st = arena.read_status(&ctx.queue).unwrap();
    if opts.sign_pack && r_ref.chunks(eb).any(|c| c[eb - 1] & 0x80 != 0) {
        assert!(matches!(st.check(), Err(Error::SignBitSet { .. })), "{what}: expected a sign-bit error, got {st:?}");
        assert_eq!(
            read(ctx, &outs[2], bytes),
            vec![0xA5u8; n * eb],
            "{what}: an invalid slot's backward writes nothing"
        );
        return;
    }
    st.check().unwrap_or_else(|e| panic!("{what}: {e}"));
    let first = |at: usize, got: &[u8], want: &[u8]| {
        let i = got.chunks(eb).zip(want.chunks(eb)).position(|(a, b)| a != b).unwrap_or(0);
        format!(
            "element {i} of {at}: got {:02x?} want {:02x?}",
            &got[i * eb..(i + 1) * eb],
            &want[i * eb..(i + 1) * eb]
        )
    };
    for (k, (out, want, name)) in [
        (&outs[0], &a_ref, "fused forward a"),
        (&outs[1], &r_ref, "compressed relu(z)"),
        (&outs[2], &dz_ref, "fused backward dL/dz"),
        (&outs[3], &a2_ref, "fused backward a"),
        (&outs[4], &dz_ref, "fused backward dL/dz (without a)"),
        (&da, &a_ref, "dense forward a"),
        (&ddz, &dz_ref, "dense backward dL/dz"),
    ]
    .into_iter()
    .enumerate()
    {
        if k >= 5 && nd == 0 {
            continue;
        }
        let got = read(ctx, out, bytes);
        assert!(got == *want, "{what}: {name} differs from the CPU port: {}", first(n, &got, want));
    }
    let (_, used) = arena.read_slot(&ctx.queue, &slot).unwrap();
    let stream = sync::read_buffer(&ctx.device, &ctx.queue, arena.buffer(), 0, used).unwrap();
    let want = cpu::compress(&r_ref, dtype, opts).unwrap();
    assert_eq!(stream.len(), want.len(), "{what}: arena stream size");
    assert!(cpu::compact(&stream).unwrap() == want, "{what}: arena bytes differ from cpu::compress(r)");
}

const LENS: [usize; 6] = [1, 7, 33, 4095, 4097, 2 * 4096 + 1001];

fn codecs(ctx: &GpuContext) -> [Codec; 2] {
    [
        Codec::new(&ctx.device).unwrap(),
        Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap(),
    ]
}

fn fused_f32_forward_backward_match_cpu_and_dense(ctx: GpuContext) {
    let dense = DenseAct::new(&ctx.device).unwrap();
    for codec in codecs(&ctx) {
        for act in [Activation::Relu, Activation::Relu2] {
            for &n in &LENS {
                let (z, g) = f32_inputs(n, n as u64);
                let (z, g) = (le(&z, |x| x.to_le_bytes().to_vec()), le(&g, |x| x.to_le_bytes().to_vec()));
                case(&ctx, &codec, &dense, DType::F32, &z, &g, act, Options::default());
            }
        }
    }
}

fn fused_f16_forward_backward_match_cpu_and_dense(ctx: GpuContext) {
    let dense = DenseAct::new(&ctx.device).unwrap();
    for codec in codecs(&ctx) {
        for act in [Activation::Relu, Activation::Relu2, Activation::Relu2Stepwise] {
            for &n in &LENS {
                let (z, g) = f16_inputs(n, n as u64 + 5);
                let (z, g) = (le(&z, |x| x.to_le_bytes().to_vec()), le(&g, |x| x.to_le_bytes().to_vec()));
                case(&ctx, &codec, &dense, DType::F16, &z, &g, act, Options::default());
            }
        }
    }
}

/// F16 exhaustively: z takes every one of the 65,536 bit patterns in each of four blocks (in a different
/// scrambled order per block, so zeros, subnormals, normals, infinities and NaNs share subgroups), and g
/// every pattern too, paired differently per block. So the forward (an element-wise map of z) is checked
/// for every input, and the backward's roundings of 2·g·r on 262,144 pairs, among them ties,
/// subnormal and overflowing results. The F16 kernels select among their classes without branches
/// (lib/act.wgsl): a wrong class boundary fails here.
fn fused_f16_every_value(ctx: GpuContext) {
    let dense = DenseAct::new(&ctx.device).unwrap();
    let mut z = Vec::with_capacity(4 << 16);
    let mut g = Vec::with_capacity(4 << 16);
    for k in 0..4u32 {
        for i in 0..1u32 << 16 {
            // Odd multipliers: each block is a permutation of all 16-bit patterns.
            z.push((i.wrapping_mul(40503).wrapping_add(k * 12345) & 0xffff) as u16);
            g.push(((i ^ (i >> 7)).wrapping_mul(0x2f1b + 2 * k).wrapping_add(k * 0x1234) & 0xffff) as u16);
        }
    }
    let (z, g) = (le(&z, |x| x.to_le_bytes().to_vec()), le(&g, |x| x.to_le_bytes().to_vec()));
    // Both ReLU² roundings (one rounding of 2·g·r, or g·r rounded first: `Relu2Stepwise`); they differ
    // where g·r is an F16 subnormal, which these pairs include.
    let (r, _) = cpu::act::forward_dtype(&z, DType::F16, Activation::Relu2).unwrap();
    let once = cpu::act::backward_dtype(&r, &g, DType::F16, Activation::Relu2).unwrap().0;
    let stepwise = cpu::act::backward_dtype(&r, &g, DType::F16, Activation::Relu2Stepwise).unwrap().0;
    assert_ne!(once, stepwise, "the inputs do not tell the two roundings apart");
    for codec in codecs(&ctx) {
        for act in [Activation::Relu, Activation::Relu2, Activation::Relu2Stepwise] {
            case(&ctx, &codec, &dense, DType::F16, &z, &g, act, Options::default());
        }
    }
}

/// BF16 ReLU²'s two square forms (`SQUARE_NAN_FLAGS` in shaders/lib/act.wgsl; the adapter picks one,
/// the tuning constants force either): the fused and the dense forward, each form on both paths, on
/// every BF16 pattern whose square is zero, normal in f32, infinite or NaN (±0, |z| >= 2^-63, ±∞ and
/// every NaN payload of both signs; GPUs may flush an f32 subnormal square, docs/FUSED.md), in a
/// scrambled order. g lies in ±[0.5, 2) with ±0, ±∞ and NaNs among it, so every 2·r·g is 0, normal,
/// infinite or NaN.
fn fused_bf16_square_forms_every_value(ctx: GpuContext) {
    let z: Vec<u16> = (0..1u32 << 16)
        .map(|i| (i.wrapping_mul(40503) & 0xffff) as u16)
        .filter(|&x| {
            let exp = (x >> 7) & 0xff;
            exp >= 64 || x & 0x7fff == 0
        })
        .collect();
    assert!(z.iter().any(|&x| act::bf16_is_nan(x) && x & 0x8000 != 0), "no NaN with its sign bit set");
    const SPECIAL: [u16; 6] = [0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0xffc3];
    let g: Vec<u16> = (0..z.len() as u32)
        .map(|i| {
            if i % 97 == 0 {
                SPECIAL[(i / 97) as usize % SPECIAL.len()]
            } else {
                (0x3f00 + (i.wrapping_mul(7) & 0xff) as u16) | (((i >> 3) & 1) as u16) << 15
            }
        })
        .collect();
    let (z, g) = (le(&z, |x| x.to_le_bytes().to_vec()), le(&g, |x| x.to_le_bytes().to_vec()));
    for form in 0..2 {
        let config = |force_portable| CodecConfig {
            force_portable,
            kernel_constants: Some(format!("compress.SQUARE_NAN_FLAGS={form}")),
            ..Default::default()
        };
        let spec = format!("forward.SQUARE_NAN_FLAGS={form}");
        let dense = DenseAct::with_kernel_constants(&ctx.device, Some(&spec)).unwrap();
        for force_portable in [false, true] {
            let codec = Codec::with_config(&ctx.device, config(force_portable)).unwrap();
            case(&ctx, &codec, &dense, DType::Bf16, &z, &g, Activation::Relu2, Options::default());
        }
    }
}

/// Sign packing: with NaNs whose sign bit is set the slot refuses (`SignBitSet`, its backward writes
/// nothing); without them the results equal the unpacked ones. FP8 dtypes are a typed refusal of the
/// fused and dense kernels.
fn fused_f32_f16_sign_pack_and_refusals(ctx: GpuContext) {
    let dense = DenseAct::new(&ctx.device).unwrap();
    let codec = Codec::new(&ctx.device).unwrap();
    let n = 4096 + 333;
    let (z32, g32) = f32_inputs(n, 11);
    let (z16, g16) = f16_inputs(n, 12);
    for act in [Activation::Relu, Activation::Relu2] {
        for clear in [false, true] {
            let z: Vec<u32> =
                z32.iter().map(|&x| if clear && act::f32_is_nan(x) { x & 0x7fff_ffff } else { x }).collect();
            let (z, g) = (le(&z, |x| x.to_le_bytes().to_vec()), le(&g32, |x| x.to_le_bytes().to_vec()));
            case(&ctx, &codec, &dense, DType::F32, &z, &g, act, Options::SIGN_PACK);
            let z: Vec<u16> = z16.iter().map(|&x| if clear && act::f16_is_nan(x) { x & 0x7fff } else { x }).collect();
            let (z, g) = (le(&z, |x| x.to_le_bytes().to_vec()), le(&g16, |x| x.to_le_bytes().to_vec()));
            case(&ctx, &codec, &dense, DType::F16, &z, &g, act, Options::SIGN_PACK);
        }
    }
    let arena = Arena::new(&codec, ArenaConfig::new(1 << 20)).unwrap();
    let b = canary(&ctx, 64);
    let r = BufferRange::new(&b, 0, 64);
    let o = canary(&ctx, 64);
    let out = BufferRange::new(&o, 0, 64);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    for dtype in [DType::E4m3, DType::E5m2] {
        let e = arena.fused_forward_dtype(&mut enc, r, dtype, 64, Activation::Relu2, Options::default(), out);
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "fused forward of {dtype}: {e:?}");
        let e = dense.forward_dtype(&mut enc, dtype, r, out, 64, Activation::Relu2);
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "dense forward of {dtype}: {e:?}");
        // A plain FP8 tensor in the arena has no fused backward.
        let slot = arena.push(&mut enc, r, dtype, 64, Options::default()).unwrap();
        let e = arena.fused_backward(&mut enc, &slot, Activation::Relu, r, out, None);
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "fused backward of {dtype}: {e:?}");
    }
    submit(&ctx, enc);
}
