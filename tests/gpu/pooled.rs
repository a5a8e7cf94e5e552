//! Pooled buffers: an op's inputs and outputs as ranges of one buffer, as Burn / CubeCL allocate tensors
//! from shared pools. Every op (plain compress and decompress, arena push and decompress, fused forward of
//! every dtype and FP8 storage, fused backward with and without `a`, `DenseAct` forward and backward) runs
//! with its ranges carved out of one buffer, adjacent (each at the first aligned offset past the previous
//! range's end: offsets a multiple of the device's `min_storage_buffer_offset_alignment`, not of 256 where
//! the alignment is smaller, and odd-sized ranges whose last word is shared with canary bytes) and in
//! several orders, and must give the bytes of the CPU reference and of the separate-buffer run, touching
//! no byte outside its outputs. Overlapping ranges where one is written are `Error::OverlappingRanges`,
//! returned before anything is recorded (nothing is written); ranges in the arena's buffer stay refused.

use bitsparse::arena::{Arena, ArenaConfig, Fp8Scale, Slot};
use bitsparse::cpu::act::{self, Activation};
use bitsparse::dense_act::DenseAct;
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, BufferRange, Codec, CodecConfig, Compressed, DType, Error, Layout, Options, Placement};
use wgpu::util::DeviceExt;

use crate::common::harness::{gl_test, vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(pooled_compress_decompress),
        vulkan_test!(pooled_compress_decompress_chunked),
        gl_test!(pooled_gl_compress_decompress),
        vulkan_test!(pooled_arena_push_decompress),
        vulkan_test!(pooled_fused_forward_backward),
        vulkan_test!(pooled_fused_fp8_storage),
        vulkan_test!(pooled_dense_act),
        vulkan_test!(pooled_overlap_compress_decompress),
        vulkan_test!(pooled_overlap_arena),
        vulkan_test!(pooled_overlap_dense_act),
        vulkan_test!(pooled_arena_buffer_refused),
    ]
}

/// Elements: two whole tiles and a partial one.
const N: u64 = 2 * 4096 + 33;
/// Elements of the dense-kernel cases (their ranges are whole 16-byte vectors).
const N_DENSE: u64 = 2 * 4096 + 40;
const DENSITY: f64 = 0.176;
/// Orders of two ranges in a pool: the input before the output and after it.
const ORDERS2: [&[usize]; 2] = [&[0, 1], &[1, 0]];
/// Orders of three ranges (an input and two outputs, or two inputs and an output).
const ORDERS3: [&[usize]; 3] = [&[0, 1, 2], &[2, 1, 0], &[1, 0, 2]];

fn submit(ctx: &GpuContext, enc: wgpu::CommandEncoder) {
    sync::submit(&ctx.queue, [enc.finish()]);
}

fn encoder(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device.create_command_encoder(&Default::default())
}

fn align(ctx: &GpuContext) -> u64 {
    ctx.device.limits().min_storage_buffer_offset_alignment as u64
}

/// Where an op's ranges go.
#[derive(Copy, Clone, Debug)]
enum Place {
    /// Each in a buffer of its own (at offset `align`).
    Separate,
    /// All in one buffer, adjacent, in this order of the ranges' indices.
    Pooled(&'static [usize]),
}

/// Canary buffers holding an op's ranges, and what they held before the op.
struct Rig {
    bufs: Vec<wgpu::Buffer>,
    /// (buffer index, offset, size) of each range.
    at: Vec<(usize, u64, u64)>,
    images: Vec<Vec<u8>>,
}

impl Rig {
    /// `ranges[i]`: the size of range i and its contents (canary bytes where `None`), placed by `place`.
    fn new(ctx: &GpuContext, ranges: &[(u64, Option<&[u8]>)], place: Place) -> Rig {
        let a = align(ctx);
        let mut at = vec![(0, 0, 0); ranges.len()];
        match place {
            Place::Separate => {
                for (i, &(size, _)) in ranges.iter().enumerate() {
                    at[i] = (i, a, size);
                }
            }
            Place::Pooled(order) => {
                assert_eq!(order.len(), ranges.len());
                let mut next = a;
                for &i in order {
                    at[i] = (0, next, ranges[i].0);
                    next = (next + ranges[i].0).next_multiple_of(a);
                }
            }
        }
        Rig::at(ctx, &at, &ranges.iter().map(|r| r.1).collect::<Vec<_>>())
    }

    /// Ranges at explicit (buffer, offset, size) places, with `contents`.
    fn at(ctx: &GpuContext, at: &[(usize, u64, u64)], contents: &[Option<&[u8]>]) -> Rig {
        let buffers = at.iter().map(|r| r.0).max().map_or(0, |m| m + 1);
        let mut images: Vec<Vec<u8>> = (0..buffers)
            .map(|b| {
                let end = at.iter().filter(|r| r.0 == b).map(|r| r.1 + r.2).max().unwrap_or(0);
                let size = (end.next_multiple_of(4) + align(ctx)).next_multiple_of(16);
                (0..size as usize).map(|i| (i as u8).wrapping_mul(31) ^ 0xA5 ^ (b as u8 * 77)).collect()
            })
            .collect();
        for (&(b, off, size), c) in at.iter().zip(contents) {
            if let Some(c) = c {
                assert_eq!(c.len() as u64, size);
                images[b][off as usize..(off + size) as usize].copy_from_slice(c);
            }
        }
        let bufs = images
            .iter()
            .map(|img| {
                ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("test.pool"),
                    contents: img,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                })
            })
            .collect();
        Rig { bufs, at: at.to_vec(), images }
    }

    fn range(&self, i: usize) -> BufferRange<'_> {
        let (b, off, size) = self.at[i];
        BufferRange::new(&self.bufs[b], off, size)
    }

    fn read(&self, ctx: &GpuContext, i: usize) -> Vec<u8> {
        let (b, off, size) = self.at[i];
        sync::read_buffer(&ctx.device, &ctx.queue, &self.bufs[b], off, size).expect("readback")
    }

    /// Every byte of every buffer: range `i` of `expect` starts with `bytes` (the rest of the range is not
    /// checked: a compress's capacity past its stream), everything else is as before the op.
    fn check(&self, ctx: &GpuContext, expect: &[(usize, &[u8])], what: &str) {
        for (b, buf) in self.bufs.iter().enumerate() {
            let got = sync::read_buffer(&ctx.device, &ctx.queue, buf, 0, buf.size()).expect("readback");
            let mut want: Vec<Option<u8>> = self.images[b].iter().map(|&x| Some(x)).collect();
            for &(i, bytes) in expect {
                let (rb, off, size) = self.at[i];
                if rb != b {
                    continue;
                }
                let off = off as usize;
                want[off..off + size as usize].fill(None);
                for (k, &x) in bytes.iter().enumerate() {
                    want[off + k] = Some(x);
                }
            }
            if let Some(p) = got.iter().zip(&want).position(|(g, w)| w.is_some_and(|w| w != *g)) {
                let inside =
                    self.at.iter().position(|&(rb, off, size)| rb == b && (off..off + size).contains(&(p as u64)));
                panic!(
                    "{what}: buffer {b} byte {p} (in range {inside:?} of {:?}) is {:#04x}, want {:#04x}",
                    self.at,
                    got[p],
                    want[p].unwrap()
                );
            }
        }
    }
}

/// The codecs of both paths.
fn codecs(ctx: &GpuContext) -> [Codec; 2] {
    [
        Codec::new(&ctx.device).unwrap(),
        Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap(),
    ]
}

/// Plain compress (input, stream) and decompress (stream, output) in one pool each, both orders: the
/// stream is `cpu::compress`'s, the output the data.
fn plain_case(ctx: &GpuContext, codec: &Codec, dtype: DType, n: u64) {
    let opts = Options::default();
    let data = cpu::synthetic_bits(n as usize, DENSITY, dtype, n ^ dtype.bits() as u64);
    let stream = cpu::compress(&data, dtype, opts).unwrap();
    let cap = codec.output_capacity(dtype, n, opts).unwrap();
    let bytes = n * dtype.bytes();
    for order in ORDERS2 {
        let what = format!("{dtype} n={n} path={:?} order={order:?} align={}", codec.path(), align(ctx));
        let rig = Rig::new(ctx, &[(bytes, Some(&data[..])), (cap, None)], Place::Pooled(order));
        let mut enc = encoder(ctx);
        let c = codec.compress(&mut enc, rig.range(0), dtype, n, opts, rig.range(1)).unwrap();
        submit(ctx, enc);
        assert_eq!(c.placement, Placement::Compact);
        rig.check(ctx, &[(1, &stream[..])], &format!("compress {what}"));

        let rig = Rig::new(ctx, &[(stream.len() as u64, Some(&stream[..])), (bytes, None)], Place::Pooled(order));
        let (_, off, size) = rig.at[0];
        let c = Compressed {
            layout: Layout::new(dtype, n, opts).unwrap(),
            buffer: rig.bufs[0].clone(),
            offset: off,
            size,
            placement: Placement::Compact,
        };
        let mut enc = encoder(ctx);
        codec.decompress(&mut enc, &c, rig.range(1)).unwrap();
        submit(ctx, enc);
        rig.check(ctx, &[(1, &data[..])], &format!("decompress {what}"));
    }
}

fn pooled_compress_decompress(ctx: GpuContext) {
    for codec in codecs(&ctx) {
        for dtype in [DType::Bf16, DType::F16, DType::F32, DType::E4m3] {
            plain_case(&ctx, &codec, dtype, N);
        }
    }
}

/// GL (llvmpipe): the portable path's shared variants on a backend without subgroups.
fn pooled_gl_compress_decompress(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    for dtype in [DType::Bf16, DType::E4m3] {
        plain_case(&ctx, &codec, dtype, N);
    }
}

/// A chunked compress (several bindings per range) and its decompress with input, stream and output in
/// one pool: the round trip is exact and nothing outside the stream and the output is touched.
fn pooled_compress_decompress_chunked(ctx: GpuContext) {
    let codec =
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() })
            .unwrap();
    let (dtype, n, opts) = (DType::Bf16, 4 * 4096 + 33, Options::default());
    let data = cpu::synthetic_bits(n as usize, DENSITY, dtype, 3);
    let cap = codec.output_capacity(dtype, n, opts).unwrap();
    for order in ORDERS3 {
        let rig = Rig::new(&ctx, &[(n * 2, Some(&data[..])), (cap, None), (n * 2, None)], Place::Pooled(order));
        let mut enc = encoder(&ctx);
        let c = codec.compress(&mut enc, rig.range(0), dtype, n, opts, rig.range(1)).unwrap();
        assert!(matches!(c.placement, Placement::Chunked { .. }), "{:?}", c.placement);
        codec.decompress(&mut enc, &c, rig.range(2)).unwrap();
        submit(&ctx, enc);
        rig.check(&ctx, &[(1, &[][..]), (2, &data[..])], &format!("chunked order={order:?}"));
    }
}

/// Arena push from a pool range and arena decompress into a range of the same pool.
fn pooled_arena_push_decompress(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let opts = Options::default();
    for dtype in [DType::Bf16, DType::F16, DType::F32, DType::E4m3] {
        let data = cpu::synthetic_bits(N as usize, DENSITY, dtype, 7 + dtype.bits() as u64);
        let bytes = N * dtype.bytes();
        for order in ORDERS2 {
            let what = format!("arena {dtype} order={order:?}");
            let arena = Arena::new(&codec, ArenaConfig::new(1 << 20)).unwrap();
            let rig = Rig::new(&ctx, &[(bytes, Some(&data[..])), (bytes, None)], Place::Pooled(order));
            let mut enc = encoder(&ctx);
            arena.reset(&mut enc);
            let slot = arena.push(&mut enc, rig.range(0), dtype, N, opts).unwrap();
            arena.decompress(&mut enc, &slot, rig.range(1)).unwrap();
            submit(&ctx, enc);
            arena.read_status(&ctx.queue).unwrap().check().unwrap_or_else(|e| panic!("{what}: {e}"));
            rig.check(&ctx, &[(1, &data[..])], &what);
            let (_, used) = arena.read_slot(&ctx.queue, &slot).unwrap();
            let stream = sync::read_buffer(&ctx.device, &ctx.queue, arena.buffer(), 0, used).unwrap();
            // Unordered tiles (the arena's default): in order, byte for byte.
            assert!(
                cpu::compact(&stream).unwrap() == cpu::compress(&data, dtype, opts).unwrap(),
                "{what}: arena bytes differ"
            );
        }
    }
}

/// What a fused case produced.
struct FusedOut {
    /// The forward's dense a.
    a: Vec<u8>,
    /// The slot decompressed (r; FP8 storage: its codes).
    r: Vec<u8>,
    /// The backward's dL/dz.
    dz: Vec<u8>,
    /// The backward's a, when asked for.
    a2: Option<Vec<u8>>,
    /// The slot's stream bytes in the arena.
    stream: Vec<u8>,
}

/// `dtype` of the dense operands, and FP8 storage (e4m3 / e5m2) of a BF16 activation.
#[derive(Copy, Clone, Debug)]
struct Kind {
    dtype: DType,
    fp8: Option<DType>,
}

/// One fused forward (z, a) placed by `fwd` and one fused backward (g, dz[, a]) placed by `bwd`; with
/// `expect`, checks the rigs' bytes against it (and that nothing else moved), else reads the outputs.
#[allow(clippy::too_many_arguments)]
fn fused_run(
    ctx: &GpuContext,
    codec: &Codec,
    kind: Kind,
    act: Activation,
    z: &[u8],
    g: &[u8],
    fwd: Place,
    bwd: Place,
    with_a: bool,
    expect: Option<&FusedOut>,
) -> FusedOut {
    let bytes = z.len() as u64;
    let eb = kind.dtype.bytes();
    let n = bytes / eb;
    let opts = Options::default();
    let what = format!("{kind:?} {act:?} fwd={fwd:?} bwd={bwd:?} with_a={with_a}");
    let arena = Arena::new(codec, ArenaConfig::new(1 << 20)).unwrap();
    let f = Rig::new(ctx, &[(bytes, Some(z)), (bytes, None)], fwd);
    let mut ranges = vec![(bytes, Some(g)), (bytes, None)];
    if with_a {
        ranges.push((bytes, None));
    }
    let b = Rig::new(ctx, &ranges, bwd);
    let r_bytes = match kind.fp8 {
        Some(_) => n,
        None => bytes,
    };
    let r_out = Rig::new(ctx, &[(r_bytes, None)], Place::Separate);
    let mut enc = encoder(ctx);
    arena.reset(&mut enc);
    let slot: Slot = match kind.fp8 {
        None => arena.fused_forward_dtype(&mut enc, f.range(0), kind.dtype, n, act, opts, f.range(1)).unwrap(),
        Some(fmt) => {
            arena.fused_forward_fp8(&mut enc, f.range(0), n, act, fmt, Fp8Scale::Fixed(1.0), opts, f.range(1)).unwrap()
        }
    };
    arena.decompress(&mut enc, &slot, r_out.range(0)).unwrap();
    let a_out = with_a.then(|| b.range(2));
    arena.fused_backward(&mut enc, &slot, act, b.range(0), b.range(1), a_out).unwrap();
    submit(ctx, enc);
    arena.read_status(&ctx.queue).unwrap().check().unwrap_or_else(|e| panic!("{what}: {e}"));
    let (_, used) = arena.read_slot(&ctx.queue, &slot).unwrap();
    let stream = sync::read_buffer(&ctx.device, &ctx.queue, arena.buffer(), 0, used).unwrap();
    match expect {
        Some(e) => {
            f.check(ctx, &[(1, &e.a)], &format!("fused forward {what}"));
            let mut outs = vec![(1, &e.dz[..])];
            if let Some(a2) = &e.a2 {
                outs.push((2, &a2[..]));
            }
            b.check(ctx, &outs, &format!("fused backward {what}"));
            assert!(r_out.read(ctx, 0) == e.r, "{what}: the slot decompresses differently");
            // Unordered tiles: the two runs' placements may differ, their ordered bytes may not.
            let (stream, e_stream) = (cpu::compact(&stream).unwrap(), cpu::compact(&e.stream).unwrap());
            if stream != e_stream {
                let p = stream.iter().zip(&e_stream).position(|(a, b)| a != b);
                let p = p.unwrap_or(0);
                panic!(
                    "{what}: the arena stream differs from the separate-buffer run: lengths {} {}, first byte {p}: {:02x?} vs {:02x?}",
                    stream.len(),
                    e_stream.len(),
                    &stream[p..(p + 16).min(stream.len())],
                    &e_stream[p..(p + 16).min(e_stream.len())]
                );
            }
            FusedOut { a: e.a.clone(), r: e.r.clone(), dz: e.dz.clone(), a2: e.a2.clone(), stream }
        }
        None => FusedOut {
            a: f.read(ctx, 1),
            r: r_out.read(ctx, 0),
            dz: b.read(ctx, 1),
            a2: with_a.then(|| b.read(ctx, 2)),
            stream,
        },
    }
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

/// `n` elements of `dtype`: nonzero with probability 2·ρ, of either sign (so relu(z) has density ≈ ρ),
/// with biased exponents in `exp` (BF16 and F32: every product of the ReLU² math stays normal in f32,
/// which GPUs may flush; docs/FUSED.md).
fn values(n: u64, dtype: DType, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut out = Vec::new();
    for _ in 0..n {
        let s = rng.next();
        let on = (s >> 40) as f64 / (1u64 << 24) as f64 / 2.0 < DENSITY;
        let sign = s & 1;
        match dtype {
            DType::F32 => {
                let v = sign << 31 | (100 + (s >> 8) % 50) << 23 | (s >> 20) & 0x7f_ffff;
                out.extend_from_slice(&(if on { v as u32 } else { 0 }).to_le_bytes());
            }
            DType::F16 => {
                let v = (s >> 16) as u16;
                out.extend_from_slice(&(if on { v } else { 0 }).to_le_bytes());
            }
            _ => {
                let v = (sign << 15 | (100 + (s >> 8) % 40) << 7 | (s >> 20) & 0x7f) as u16;
                out.extend_from_slice(&(if on { v } else { 0 }).to_le_bytes());
            }
        }
    }
    out
}

/// The separate-buffer run, then pooled runs (forward and backward in every order, with and without a)
/// that must give the same bytes.
fn fused_case(ctx: &GpuContext, codec: &Codec, kind: Kind, act: Activation, z: &[u8], g: &[u8]) -> FusedOut {
    let sep = Place::Separate;
    let base = fused_run(ctx, codec, kind, act, z, g, sep, sep, true, None);
    for (i, order) in ORDERS3.into_iter().enumerate() {
        let fwd = Place::Pooled(ORDERS2[i % 2]);
        fused_run(ctx, codec, kind, act, z, g, fwd, Place::Pooled(order), true, Some(&base));
    }
    let without_a = fused_run(ctx, codec, kind, act, z, g, sep, sep, false, None);
    for order in ORDERS2 {
        fused_run(ctx, codec, kind, act, z, g, Place::Pooled(order), Place::Pooled(order), false, Some(&without_a));
    }
    assert!(without_a.dz == base.dz && without_a.a == base.a, "{kind:?}: the backward without a differs");
    base
}

fn pooled_fused_forward_backward(ctx: GpuContext) {
    for codec in codecs(&ctx) {
        for dtype in [DType::Bf16, DType::F16, DType::F32] {
            for act in [Activation::Relu2, Activation::Relu] {
                if act == Activation::Relu && dtype != DType::Bf16 {
                    continue;
                }
                let z = values(N, dtype, 1 + dtype.bits() as u64);
                let g = values(N, dtype, 2 + dtype.bits() as u64);
                let out = fused_case(&ctx, &codec, Kind { dtype, fp8: None }, act, &z, &g);
                // The separate-buffer run is the CPU reference's.
                let what = format!("{dtype} {act:?} path={:?}", codec.path());
                let (r, a) = act::forward_dtype(&z, dtype, act).unwrap();
                let (dz, a2) = act::backward_dtype(&r, &g, dtype, act).unwrap();
                assert!(out.a == a, "{what}: forward a differs from the CPU port");
                assert!(out.r == r, "{what}: relu(z) differs from the CPU port");
                assert!(out.dz == dz, "{what}: dL/dz differs from the CPU port");
                assert!(out.a2.as_ref() == Some(&a2), "{what}: backward a differs from the CPU port");
                let want = cpu::compress(&r, dtype, Options::default()).unwrap();
                assert!(cpu::compact(&out.stream).unwrap() == want, "{what}: stream");
            }
        }
    }
}

/// FP8 storage (lossy): pooled runs give the separate-buffer run's bytes; the stored codes are the
/// CPU quantization of relu(z), the header's AMAX its amax.
fn pooled_fused_fp8_storage(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let z = values(N, DType::Bf16, 5);
    let g = values(N, DType::Bf16, 6);
    for fmt in [DType::E4m3, DType::E5m2] {
        let out = fused_case(&ctx, &codec, Kind { dtype: DType::Bf16, fp8: Some(fmt) }, Activation::Relu2, &z, &g);
        let (r, _) = act::forward_dtype(&z, DType::Bf16, Activation::Relu2).unwrap();
        assert!(out.r == cpu::fp8::quantize(&r, 1.0, fmt), "{fmt}: stored codes differ from the CPU quantization");
        // The header's AMAX is relu(z)'s, not raised by the canary element sharing the tensor's last word
        // (n is odd): a regression of the FP8 compress, which took it into the amax.
        let amax = u32::from_le_bytes(out.stream[24..28].try_into().unwrap());
        assert_eq!(amax, cpu::fp8::amax_bits(&r), "{fmt}: header AMAX");
    }
}

fn pooled_dense_act(ctx: GpuContext) {
    let dense = DenseAct::new(&ctx.device).unwrap();
    for dtype in [DType::Bf16, DType::F16, DType::F32] {
        let bytes = N_DENSE * dtype.bytes();
        let z = values(N_DENSE, dtype, 11 + dtype.bits() as u64);
        let g = values(N_DENSE, dtype, 12 + dtype.bits() as u64);
        for act in [Activation::Relu, Activation::Relu2] {
            let (r, a) = act::forward_dtype(&z, dtype, act).unwrap();
            let (dz, _) = act::backward_dtype(&r, &g, dtype, act).unwrap();
            for order in ORDERS2 {
                let rig = Rig::new(&ctx, &[(bytes, Some(&z[..])), (bytes, None)], Place::Pooled(order));
                let mut enc = encoder(&ctx);
                dense.forward_dtype(&mut enc, dtype, rig.range(0), rig.range(1), N_DENSE, act).unwrap();
                submit(&ctx, enc);
                rig.check(&ctx, &[(1, &a[..])], &format!("dense forward {dtype} {act:?} order={order:?}"));
            }
            for order in ORDERS3 {
                let rig = Rig::new(
                    &ctx,
                    &[(bytes, Some(&r[..])), (bytes, Some(&g[..])), (bytes, None)],
                    Place::Pooled(order),
                );
                let mut enc = encoder(&ctx);
                dense.backward_dtype(&mut enc, dtype, rig.range(0), rig.range(1), rig.range(2), N_DENSE, act).unwrap();
                submit(&ctx, enc);
                rig.check(&ctx, &[(2, &dz[..])], &format!("dense backward {dtype} {act:?} order={order:?}"));
            }
        }
    }
}

/// `r` is `Err(OverlappingRanges { a, b })`.
fn assert_overlap<T: std::fmt::Debug>(r: Result<T, Error>, a: &str, b: &str, what: &str) {
    match r {
        Err(Error::OverlappingRanges { a: x, b: y }) => assert_eq!((x, y), (a, b), "{what}"),
        other => panic!("{what}: expected OverlappingRanges {{ {a}, {b} }}, got {other:?}"),
    }
}

fn pooled_overlap_compress_decompress(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let (dtype, opts, al) = (DType::Bf16, Options::default(), align(&ctx));
    let data = cpu::synthetic_bits(N as usize, DENSITY, dtype, 9);
    let stream = cpu::compress(&data, dtype, opts).unwrap();
    let cap = codec.output_capacity(dtype, N, opts).unwrap();
    let bytes = N * 2;
    // The output starting inside the input, the input starting inside the output, and the output's last
    // aligned offset before the input's end.
    let last = (al + bytes - 1) / al * al;
    for (in_off, out_off) in [(al, 2 * al), (2 * al, al), (al, last)] {
        let what = format!("compress input at {in_off}, output at {out_off}");
        let rig = Rig::at(&ctx, &[(0, in_off, bytes), (0, out_off, cap)], &[Some(&data[..]), None]);
        let mut enc = encoder(&ctx);
        let r = codec.compress(&mut enc, rig.range(0), dtype, N, opts, rig.range(1));
        assert_overlap(r, "compress input", "compress output", &what);
        submit(&ctx, enc);
        rig.check(&ctx, &[], &what);
    }
    // Decompress: the output over the stream's range (also past the compact stream, inside its size).
    let slen = stream.len() as u64;
    for (s_off, out_off, s_size) in
        [(al, 2 * al, slen), (2 * al, al, slen), (al, (al + slen).next_multiple_of(al), cap)]
    {
        let what = format!("decompress stream at {s_off} ({s_size} bytes), output at {out_off}");
        let mut padded = stream.clone();
        padded.resize(s_size as usize, 0);
        let rig = Rig::at(&ctx, &[(0, s_off, s_size), (0, out_off, bytes)], &[Some(&padded[..]), None]);
        let c = Compressed {
            layout: Layout::new(dtype, N, opts).unwrap(),
            buffer: rig.bufs[0].clone(),
            offset: s_off,
            size: s_size,
            placement: Placement::Compact,
        };
        let mut enc = encoder(&ctx);
        assert_overlap(codec.decompress(&mut enc, &c, rig.range(1)), "compressed stream", "decompress output", &what);
        submit(&ctx, enc);
        rig.check(&ctx, &[], &what);
    }
}

fn ctrl(ctx: &GpuContext, arena: &Arena) -> Vec<u8> {
    let c = arena.ctrl_buffer();
    sync::read_buffer(&ctx.device, &ctx.queue, c, 0, c.size()).unwrap()
}

/// Overlapping arena ranges: refused before anything is recorded (no reserve: the control words do not
/// move), nothing written; the slot id of a refused forward is given back.
fn pooled_overlap_arena(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let (opts, al, act) = (Options::default(), align(&ctx), Activation::Relu2);
    let z = values(N, DType::Bf16, 21);
    let bytes = N * 2;
    let arena = Arena::new(&codec, ArenaConfig { max_slots: 2, ..ArenaConfig::new(1 << 20) }).unwrap();
    let before = ctrl(&ctx, &arena);
    let last = (al + bytes - 1) / al * al;
    for (z_off, a_off) in [(al, al), (al, 2 * al), (2 * al, al), (al, last)] {
        let what = format!("fused forward z at {z_off}, a at {a_off}");
        let rig = Rig::at(&ctx, &[(0, z_off, bytes), (0, a_off, bytes)], &[Some(&z[..]), None]);
        let mut enc = encoder(&ctx);
        let r = arena.fused_forward(&mut enc, rig.range(0), N, act, opts, rig.range(1));
        assert_overlap(r, "compress input", "fused forward output", &what);
        let r =
            arena.fused_forward_fp8(&mut enc, rig.range(0), N, act, DType::E4m3, Fp8Scale::Delayed, opts, rig.range(1));
        assert_overlap(r, "compress input", "fused forward output", &format!("FP8 {what}"));
        submit(&ctx, enc);
        rig.check(&ctx, &[], &what);
        assert!(ctrl(&ctx, &arena) == before, "{what}: the arena's control words moved");
    }
    // A valid slot (both slot ids were given back, or this would fail), then overlapping backwards.
    let zr = Rig::new(&ctx, &[(bytes, Some(&z[..])), (bytes, None)], Place::Separate);
    let mut enc = encoder(&ctx);
    let slot = arena.fused_forward(&mut enc, zr.range(0), N, act, opts, zr.range(1)).unwrap();
    let _second = arena.push(&mut enc, zr.range(0), DType::Bf16, N, opts).unwrap();
    submit(&ctx, enc);
    let before = ctrl(&ctx, &arena);
    let g = values(N, DType::Bf16, 22);
    let (x, y) = (al, 2 * al);
    let far = (3 * al + 2 * bytes).next_multiple_of(al);
    // (g, dz, a) offsets and the pair named.
    let cases = [
        ((x, y, None), ("fused backward gradient", "fused backward dL/dz")),
        ((y, x, Some(far)), ("fused backward gradient", "fused backward dL/dz")),
        ((far, x, Some(y)), ("fused backward dL/dz", "fused backward activation")),
        ((x, far, Some(y)), ("fused backward gradient", "fused backward activation")),
        ((far, x, Some(x)), ("fused backward dL/dz", "fused backward activation")),
    ];
    for ((g_off, dz_off, a_off), (na, nb)) in cases {
        let what = format!("fused backward g at {g_off}, dz at {dz_off}, a at {a_off:?}");
        let mut at = vec![(0, g_off, bytes), (0, dz_off, bytes)];
        at.extend(a_off.map(|o| (0, o, bytes)));
        let rig = Rig::at(&ctx, &at, &[Some(&g[..]), None, None][..at.len()]);
        let mut enc = encoder(&ctx);
        let a_out = a_off.map(|_| rig.range(2));
        assert_overlap(arena.fused_backward(&mut enc, &slot, act, rig.range(0), rig.range(1), a_out), na, nb, &what);
        submit(&ctx, enc);
        rig.check(&ctx, &[], &what);
        assert!(ctrl(&ctx, &arena) == before, "{what}: the arena's control words moved");
    }
}

fn pooled_overlap_dense_act(ctx: GpuContext) {
    let dense = DenseAct::new(&ctx.device).unwrap();
    let (dtype, al, act) = (DType::F32, align(&ctx), Activation::Relu2);
    let bytes = N_DENSE * 4;
    let z = values(N_DENSE, dtype, 31);
    let g = values(N_DENSE, dtype, 32);
    for (z_off, a_off) in [(al, al), (al, 2 * al), (2 * al, al)] {
        let what = format!("dense forward z at {z_off}, a at {a_off}");
        let rig = Rig::at(&ctx, &[(0, z_off, bytes), (0, a_off, bytes)], &[Some(&z[..]), None]);
        let mut enc = encoder(&ctx);
        let r = dense.forward_dtype(&mut enc, dtype, rig.range(0), rig.range(1), N_DENSE, act);
        assert_overlap(r, "dense forward z", "dense forward a", &what);
        submit(&ctx, enc);
        rig.check(&ctx, &[], &what);
    }
    let far = (3 * al + 2 * bytes).next_multiple_of(al);
    for ((r_off, g_off, dz_off), (na, nb)) in [
        ((al, far, 2 * al), ("dense backward r", "dense backward dL/dz")),
        ((far, al, 2 * al), ("dense backward g", "dense backward dL/dz")),
        ((al, al, al), ("dense backward r", "dense backward dL/dz")),
    ] {
        let what = format!("dense backward r at {r_off}, g at {g_off}, dz at {dz_off}");
        let at = [(0, r_off, bytes), (0, g_off, bytes), (0, dz_off, bytes)];
        let rig = Rig::at(&ctx, &at, &[Some(&z[..]), Some(&g[..]), None]);
        let mut enc = encoder(&ctx);
        let r = dense.backward_dtype(&mut enc, dtype, rig.range(0), rig.range(1), rig.range(2), N_DENSE, act);
        assert_overlap(r, na, nb, &what);
        submit(&ctx, enc);
        rig.check(&ctx, &[], &what);
    }
    // Two inputs may overlap: r and g the same range, dz beside them.
    let (r, _) = act::forward_dtype(&z, dtype, act).unwrap();
    let (dz, _) = act::backward_dtype(&r, &r, dtype, act).unwrap();
    let rig = Rig::new(&ctx, &[(bytes, Some(&r[..])), (bytes, None)], Place::Pooled(&[0, 1]));
    let mut enc = encoder(&ctx);
    dense.backward_dtype(&mut enc, dtype, rig.range(0), rig.range(0), rig.range(1), N_DENSE, act).unwrap();
    submit(&ctx, enc);
    rig.check(&ctx, &[(1, &dz[..])], "dense backward with r = g");
}

/// Caller ranges in the arena's own buffer stay refused, inputs and outputs alike.
fn pooled_arena_buffer_refused(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let (opts, act) = (Options::default(), Activation::Relu2);
    let arena = Arena::new(&codec, ArenaConfig::new(1 << 20)).unwrap();
    let bytes = N * 2;
    let z = values(N, DType::Bf16, 41);
    let rig = Rig::new(&ctx, &[(bytes, Some(&z[..])), (bytes, None), (bytes, None)], Place::Pooled(&[0, 1, 2]));
    let inside = BufferRange::new(arena.buffer(), arena.capacity_bytes() - bytes.next_multiple_of(256) - 256, bytes);
    let mut enc = encoder(&ctx);
    let refused = |r: Result<(), Error>, what: &str| {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
    };
    refused(arena.fused_forward(&mut enc, inside, N, act, opts, rig.range(1)).map(drop), "z in the arena");
    refused(arena.fused_forward(&mut enc, rig.range(0), N, act, opts, inside).map(drop), "a in the arena");
    refused(arena.push(&mut enc, inside, DType::Bf16, N, opts).map(drop), "push input in the arena");
    let slot = arena.fused_forward(&mut enc, rig.range(0), N, act, opts, rig.range(1)).unwrap();
    refused(arena.decompress(&mut enc, &slot, inside), "decompress output in the arena");
    refused(arena.fused_backward(&mut enc, &slot, act, inside, rig.range(2), None), "g in the arena");
    refused(arena.fused_backward(&mut enc, &slot, act, rig.range(0), inside, None), "dz in the arena");
    refused(arena.fused_backward(&mut enc, &slot, act, rig.range(0), rig.range(2), Some(inside)), "a in the arena");
    submit(&ctx, enc);
}
