//! Every error the codec API can give, with the exact `Error` variant (and its fields where they are
//! part of the contract), and no panic on corrupt input.
//!
//! Each case breaks exactly one thing, so a check that moved or vanished shows up as a different
//! variant (or as `Ok`).

use bitsparse::format::{hdr, status, Header, Layout, HEADER_WORDS};
use bitsparse::host::context::GpuContext;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, Compressed, DType, Error, Options, Placement};
use wgpu::util::DeviceExt;

use crate::common::harness::{cpu_test, vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(compress_good_call_is_ok),
        vulkan_test!(compress_misaligned_input_offset),
        vulkan_test!(compress_misaligned_output_offset),
        vulkan_test!(compress_output_smaller_than_capacity),
        vulkan_test!(compress_input_size_not_n_elements),
        vulkan_test!(compress_ranges_outside_the_buffer),
        vulkan_test!(ranges_ending_inside_a_partial_last_word),
        vulkan_test!(compress_missing_storage_usage),
        vulkan_test!(compress_input_and_output_overlapping_in_one_buffer),
        vulkan_test!(compress_tensor_too_large_for_the_format),
        vulkan_test!(codec_binding_limit_too_small_is_unsupported),
        vulkan_test!(decompress_errors),
        vulkan_test!(decompress_chunk_placement_the_device_cannot_bind),
        vulkan_test!(host_compress_partial_element),
        vulkan_test!(host_decompress_corrupt_streams),
        vulkan_test!(host_decompress_sign_status_is_sign_error),
        cpu_test!(status_bits_to_errors),
        vulkan_test!(host_decompress_random_damage_never_panics),
        vulkan_test!(sign_bit_under_sign_pack),
    ]
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE;

fn buffer(ctx: &GpuContext, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test"),
        size: size.next_multiple_of(4),
        usage,
        mapped_at_creation: false,
    })
}

fn buffer_with(ctx: &GpuContext, bytes: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    let mut b = bytes.to_vec();
    b.resize(bytes.len().next_multiple_of(4).max(4), 0);
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("test"), contents: &b, usage })
}

fn encoder(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device.create_command_encoder(&Default::default())
}

/// A compress call with one part of a correct call replaced.
struct Call<'a> {
    input: BufferRange<'a>,
    n: u64,
    output: BufferRange<'a>,
}

const DT: DType = DType::Bf16;
const N: u64 = 5000;

fn compress(ctx: &GpuContext, codec: &Codec, c: Call<'_>) -> Result<Compressed, Error> {
    // Validation errors must be returned before anything is recorded, so the encoder stays usable.
    let mut enc = encoder(ctx);
    let r = codec.compress(&mut enc, c.input, DT, c.n, Options::default(), c.output);
    enc.finish();
    r
}

/// Buffers for a correct compress of N BF16 elements with 64 spare bytes before and after each range.
struct Rig {
    ctx: GpuContext,
    codec: Codec,
    input: wgpu::Buffer,
    output: wgpu::Buffer,
    cap: u64,
    align: u64,
}

fn rig(ctx: GpuContext) -> Rig {
    let codec = Codec::new(&ctx.device).expect("codec");
    let cap = codec.output_capacity(DT, N, Options::default()).expect("capacity");
    let align = ctx.device.limits().min_storage_buffer_offset_alignment as u64;
    let input = buffer(&ctx, 2 * align + N * 2, STORAGE);
    let output = buffer(&ctx, 2 * align + cap, STORAGE | wgpu::BufferUsages::COPY_SRC);
    Rig { ctx, codec, input, output, cap, align }
}

impl Rig {
    fn good(&self) -> Call<'_> {
        Call {
            input: BufferRange::new(&self.input, 0, N * 2),
            n: N,
            output: BufferRange::new(&self.output, 0, self.cap),
        }
    }
    fn run(&self, c: Call<'_>) -> Result<Compressed, Error> {
        compress(&self.ctx, &self.codec, c)
    }
}

fn compress_good_call_is_ok(ctx: GpuContext) {
    // The baseline every error case below departs from.
    let r = rig(ctx);
    r.run(r.good()).expect("the unmodified call must succeed");
    let c = Call {
        input: BufferRange::new(&r.input, r.align, N * 2),
        output: BufferRange::new(&r.output, r.align, r.cap),
        ..r.good()
    };
    r.run(c).expect("aligned non-zero offsets must succeed");
}

fn compress_misaligned_input_offset(ctx: GpuContext) {
    let r = rig(ctx);
    assert!(r.align > 4, "test needs an alignment above 4 (have {})", r.align);
    let c = Call { input: BufferRange::new(&r.input, 4, N * 2), ..r.good() };
    match r.run(c) {
        Err(Error::Misaligned { what, offset: 4, align }) => {
            assert_eq!(align, r.align);
            assert!(what.contains("input"), "{what}");
        }
        other => panic!("expected Misaligned, got {other:?}"),
    }
}

fn compress_misaligned_output_offset(ctx: GpuContext) {
    let r = rig(ctx);
    let c = Call { output: BufferRange::new(&r.output, 4, r.cap), ..r.good() };
    match r.run(c) {
        Err(Error::Misaligned { what, offset: 4, align }) => {
            assert_eq!(align, r.align);
            assert!(what.contains("output"), "{what}");
        }
        other => panic!("expected Misaligned, got {other:?}"),
    }
}

fn compress_output_smaller_than_capacity(ctx: GpuContext) {
    let r = rig(ctx);
    let c = Call { output: BufferRange::new(&r.output, 0, r.cap - 4), ..r.good() };
    match r.run(c) {
        Err(Error::RangeTooSmall { need, got, .. }) => assert_eq!((need, got), (r.cap, r.cap - 4)),
        other => panic!("expected RangeTooSmall, got {other:?}"),
    }
}

fn compress_input_size_not_n_elements(ctx: GpuContext) {
    let r = rig(ctx);
    for size in [N * 2 - 2, N * 2 + 2, N * 2 - 1, 0] {
        let c = Call { input: BufferRange::new(&r.input, 0, size), ..r.good() };
        assert!(matches!(r.run(c), Err(Error::InvalidArgument(_))), "input of {size} bytes for {N} elements");
    }
    // n one short of what the input range holds (the output stays large enough for n).
    let c = Call { n: N - 1, ..r.good() };
    assert!(matches!(r.run(c), Err(Error::InvalidArgument(_))), "n = N - 1");
}

fn compress_ranges_outside_the_buffer(ctx: GpuContext) {
    let r = rig(ctx);
    let in_size = r.input.size();
    // Input: ends past the buffer; offset past the end; an offset so large that offset + size overflows.
    let huge = u64::MAX / r.align * r.align;
    for off in [in_size - N * 2 + r.align, in_size + r.align, huge] {
        let off = off / r.align * r.align;
        let c = Call { input: BufferRange::new(&r.input, off, N * 2), ..r.good() };
        match r.run(c) {
            Err(Error::OutOfBounds { what, offset, buffer_size, .. }) => {
                assert!(what.contains("input"), "{what}");
                assert_eq!((offset, buffer_size), (off, in_size));
            }
            other => panic!("input at {off}: expected OutOfBounds, got {other:?}"),
        }
    }
    let out_size = r.output.size();
    for off in [out_size - r.cap + r.align, huge] {
        let off = off / r.align * r.align;
        let c = Call { output: BufferRange::new(&r.output, off, r.cap), ..r.good() };
        match r.run(c) {
            Err(Error::OutOfBounds { what, .. }) => assert!(what.contains("output"), "{what}"),
            other => panic!("output at {off}: expected OutOfBounds, got {other:?}"),
        }
    }
}

/// The kernels touch whole 32-bit words: a range whose last word is not entirely inside its buffer (an
/// odd-sized buffer ending with the range) is refused, not left to a wgpu validation panic.
fn ranges_ending_inside_a_partial_last_word(ctx: GpuContext) {
    let r = rig(ctx);
    let n = 4099u64;
    let odd = r.ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("odd"),
        size: n,
        usage: STORAGE,
        mapped_at_creation: false,
    });
    assert_eq!(odd.size(), n);
    let cap = r.codec.output_capacity(DType::E4m3, n, Options::default()).expect("cap");
    let mut enc = encoder(&r.ctx);
    let res = r.codec.compress(
        &mut enc,
        BufferRange::new(&odd, 0, n),
        DType::E4m3,
        n,
        Options::default(),
        BufferRange::new(&r.output, 0, cap),
    );
    assert!(
        matches!(res, Err(Error::OutOfBounds { offset: 0, size, buffer_size, .. }) if size == n && buffer_size == n),
        "compress input: {res:?}"
    );
    // The same data from a whole-word buffer compresses, and decompressing into the odd buffer is refused.
    let even = buffer(&r.ctx, n, STORAGE);
    let c = r
        .codec
        .compress(
            &mut enc,
            BufferRange::new(&even, 0, n),
            DType::E4m3,
            n,
            Options::default(),
            BufferRange::new(&r.output, 0, cap),
        )
        .expect("compress");
    let res = r.codec.decompress(&mut enc, &c, BufferRange::new(&odd, 0, n));
    assert!(matches!(res, Err(Error::OutOfBounds { .. })), "decompress output: {res:?}");
    enc.finish();
}

fn compress_missing_storage_usage(ctx: GpuContext) {
    let r = rig(ctx);
    let plain_in = buffer(&r.ctx, N * 2, wgpu::BufferUsages::COPY_SRC);
    let c = Call { input: BufferRange::new(&plain_in, 0, N * 2), ..r.good() };
    match r.run(c) {
        Err(Error::MissingUsage { what, usage: "STORAGE" }) => assert!(what.contains("input"), "{what}"),
        other => panic!("expected MissingUsage, got {other:?}"),
    }
    let plain_out = buffer(&r.ctx, r.cap, wgpu::BufferUsages::COPY_SRC);
    let c = Call { output: BufferRange::new(&plain_out, 0, r.cap), ..r.good() };
    match r.run(c) {
        Err(Error::MissingUsage { what, usage: "STORAGE" }) => assert!(what.contains("output"), "{what}"),
        other => panic!("expected MissingUsage, got {other:?}"),
    }
}

fn compress_input_and_output_overlapping_in_one_buffer(ctx: GpuContext) {
    // Ranges of one buffer are fine (pooled tensors, tests/gpu/pooled.rs); overlapping ones are not.
    let r = rig(ctx);
    let both = buffer(&r.ctx, N * 2 + r.cap + 2 * r.align, STORAGE);
    let out_off = (N * 2).next_multiple_of(r.align);
    let c =
        Call { input: BufferRange::new(&both, 0, N * 2), output: BufferRange::new(&both, out_off, r.cap), ..r.good() };
    r.run(c).expect("input and output side by side in one buffer");
    let c = Call {
        input: BufferRange::new(&both, 0, N * 2),
        output: BufferRange::new(&both, out_off - r.align, r.cap),
        ..r.good()
    };
    assert!(
        matches!(r.run(c), Err(Error::OverlappingRanges { a: "compress input", b: "compress output" })),
        "overlapping input and output must be refused"
    );
}

fn compress_tensor_too_large_for_the_format(ctx: GpuContext) {
    let r = rig(ctx);
    let n = 1u64 << 40;
    assert!(
        matches!(r.codec.output_capacity(DT, n, Options::default()), Err(Error::TooLarge { elements }) if elements == n)
    );
    let c = Call { n, ..r.good() };
    assert!(matches!(r.run(c), Err(Error::TooLarge { .. })));
}

fn codec_binding_limit_too_small_is_unsupported(ctx: GpuContext) {
    let r = Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(1024), ..Default::default() });
    assert!(matches!(r, Err(Error::Unsupported(_))), "a 1 KiB binding cannot hold a tile: got {r:?}");
}

/// A valid compressed tensor on the GPU, for the decompress error cases.
fn compressed(r: &Rig) -> Compressed {
    let data = cpu::synthetic_relu2(N as usize, 0.2, DT, 3);
    let input = buffer_with(&r.ctx, &data, STORAGE);
    let mut enc = encoder(&r.ctx);
    let c = r
        .codec
        .compress(
            &mut enc,
            BufferRange::new(&input, 0, N * 2),
            DT,
            N,
            Options::default(),
            BufferRange::new(&r.output, 0, r.cap),
        )
        .expect("compress");
    bitsparse::host::sync::submit(&r.ctx.queue, [enc.finish()]);
    c
}

fn decompress(r: &Rig, c: &Compressed, out: BufferRange<'_>) -> Result<(), Error> {
    let mut enc = encoder(&r.ctx);
    let res = r.codec.decompress(&mut enc, c, out);
    enc.finish();
    res
}

fn decompress_errors(ctx: GpuContext) {
    let r = rig(ctx);
    let c = compressed(&r);
    let dense = buffer(&r.ctx, N * 2 + 2 * r.align, STORAGE | wgpu::BufferUsages::COPY_SRC);
    decompress(&r, &c, BufferRange::new(&dense, 0, N * 2)).expect("the unmodified call must succeed");

    // Output of the wrong size.
    for size in [N * 2 - 2, N * 2 + 2, 0] {
        assert!(
            matches!(decompress(&r, &c, BufferRange::new(&dense, 0, size)), Err(Error::InvalidArgument(_))),
            "output of {size} bytes"
        );
    }
    // Misaligned output.
    match decompress(&r, &c, BufferRange::new(&dense, 4, N * 2)) {
        Err(Error::Misaligned { offset: 4, align, .. }) => assert_eq!(align, r.align),
        other => panic!("expected Misaligned, got {other:?}"),
    }
    // Output outside its buffer.
    let off = (dense.size() - N * 2 + r.align) / r.align * r.align;
    assert!(matches!(decompress(&r, &c, BufferRange::new(&dense, off, N * 2)), Err(Error::OutOfBounds { .. })));
    // Output without STORAGE.
    let plain = buffer(&r.ctx, N * 2, wgpu::BufferUsages::COPY_DST);
    assert!(matches!(
        decompress(&r, &c, BufferRange::new(&plain, 0, N * 2)),
        Err(Error::MissingUsage { usage: "STORAGE", .. })
    ));
    // Output in the stream's own buffer: past the stream's range it is fine (pooled tensors), inside it
    // refused.
    let own = BufferRange::new(&r.output, r.cap.next_multiple_of(r.align), N * 2);
    let big = Compressed { buffer: buffer(&r.ctx, r.cap.next_multiple_of(r.align) + N * 2 + 4, STORAGE), ..c.clone() };
    let own_big = BufferRange::new(&big.buffer, own.offset, N * 2);
    decompress(&r, &big, own_big).expect("output past the stream, in its buffer");
    let inside = BufferRange::new(&big.buffer, own.offset - r.align, N * 2);
    assert!(
        matches!(
            decompress(&r, &big, inside),
            Err(Error::OverlappingRanges { a: "compressed stream", b: "decompress output" })
        ),
        "output overlapping the stream's range"
    );

    // Stream range: misaligned, outside its buffer, smaller than header + table + mask.
    let mis = Compressed { offset: 4, ..c.clone() };
    assert!(matches!(
        decompress(&r, &mis, BufferRange::new(&dense, 0, N * 2)),
        Err(Error::Misaligned { offset: 4, .. })
    ));
    let oob = Compressed { size: c.buffer.size() + 4, ..c.clone() };
    assert!(matches!(decompress(&r, &oob, BufferRange::new(&dense, 0, N * 2)), Err(Error::OutOfBounds { .. })));
    let small = Compressed { size: c.layout.values_offset * 4 - 4, ..c.clone() };
    match decompress(&r, &small, BufferRange::new(&dense, 0, N * 2)) {
        Err(Error::RangeTooSmall { need, got, .. }) => {
            assert_eq!((need, got), (c.layout.values_offset * 4, c.layout.values_offset * 4 - 4))
        }
        other => panic!("expected RangeTooSmall, got {other:?}"),
    }
    // A stream buffer without STORAGE.
    let nostore = Compressed { buffer: buffer(&r.ctx, c.buffer.size(), wgpu::BufferUsages::COPY_DST), ..c.clone() };
    assert!(matches!(decompress(&r, &nostore, BufferRange::new(&dense, 0, N * 2)), Err(Error::MissingUsage { .. })));
}

fn decompress_chunk_placement_the_device_cannot_bind(ctx: GpuContext) {
    let limited =
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() })
            .expect("codec");
    let n = 20 * 4096u64;
    let data = cpu::synthetic_relu2(n as usize, 0.9, DT, 5);
    let stream = cpu::compress(&data, DT, Options::default()).expect("cpu compress");
    let c = host::upload(&ctx.device, &stream).expect("upload");
    let dense = buffer(&ctx, n * 2, STORAGE);
    let out = BufferRange::new(&dense, 0, n * 2);
    let run = |c: &Compressed| {
        let mut enc = encoder(&ctx);
        let r = limited.decompress(&mut enc, c, out);
        enc.finish();
        r
    };
    // A compact values section larger than one binding: the caller must split it (host helpers do).
    assert!(matches!(run(&c), Err(Error::Unsupported(_))), "compact stream past the binding size");
    // Chunks larger than a binding, or of zero tiles.
    for chunk_tiles in [0, 1000] {
        let ch = Compressed { placement: Placement::Chunked { chunk_tiles }, ..c.clone() };
        assert!(matches!(run(&ch), Err(Error::Unsupported(_))), "chunk_tiles = {chunk_tiles}");
    }
    // The host helper splits it and succeeds.
    let back = host::decompress_to_vec(&limited, &ctx.device, &ctx.queue, &stream).expect("host decompress in pieces");
    assert!(back == data);
}

fn host_compress_partial_element(ctx: GpuContext) {
    let r = rig(ctx);
    let (ctx, codec) = (&r.ctx, &r.codec);
    for (dtype, len) in [(DType::Bf16, 1usize), (DType::F16, 4097), (DType::Bf16, 9999)] {
        match host::compress_to_vec(codec, &ctx.device, &ctx.queue, &vec![1u8; len], dtype, Options::default()) {
            Err(Error::PartialElement { bytes, elem_bytes: 2 }) => assert_eq!(bytes, len as u64),
            other => panic!("{dtype} {len} bytes: expected PartialElement, got {other:?}"),
        }
    }
}

/// A small valid stream and its dense data.
fn valid_stream() -> (Vec<u8>, Vec<u8>) {
    let data = cpu::synthetic_bits(3 * 4096 + 100, 0.3, DT, 8);
    let s = cpu::compress(&data, DT, Options::default()).expect("compress");
    (data, s)
}

fn put(s: &mut [u8], word: usize, v: u32) {
    s[word * 4..word * 4 + 4].copy_from_slice(&v.to_le_bytes());
}

/// Rewrites word `word` of `s` as `f(old)`.
fn upd(s: &mut [u8], word: usize, f: impl Fn(u32) -> u32) {
    let old = get(s, word);
    put(s, word, f(old));
}

fn get(s: &[u8], word: usize) -> u32 {
    u32::from_le_bytes(s[word * 4..word * 4 + 4].try_into().expect("4 bytes"))
}

fn host_decompress_corrupt_streams(ctx: GpuContext) {
    let r = rig(ctx);
    let (ctx, codec) = (&r.ctx, &r.codec);
    let (data, s) = valid_stream();
    assert!(host::decompress_to_vec(codec, &ctx.device, &ctx.queue, &s).expect("valid stream") == data);
    let layout = Layout::from_header(&(0..8).map(|i| get(&s, i)).collect::<Vec<_>>()).expect("header").0;
    let t0 = HEADER_WORDS as usize;

    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("half a header", s[..16].to_vec()),
        ("header only", s[..32].to_vec()),
        ("truncated in the mask", s[..(layout.mask_offset as usize + 3) * 4].to_vec()),
        ("truncated by one byte", s[..s.len() - 1].to_vec()),
        ("truncated by one word", s[..s.len() - 4].to_vec()),
    ];
    let mut edit = |what: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut c = s.clone();
        f(&mut c);
        cases.push((what, c));
    };
    edit("bad magic", &|c| put(c, hdr::MAGIC, 0x1234_5678));
    edit("bad version", &|c| upd(c, hdr::INFO, |v| v & !0xff | 7));
    edit("unknown dtype", &|c| upd(c, hdr::INFO, |v| v & !0xff00 | 9 << 8));
    edit("unknown flags", &|c| upd(c, hdr::INFO, |v| v | 0x80 << 16));
    edit("wrong tile size", &|c| upd(c, hdr::INFO, |v| v & 0x00ff_ffff | 11 << 24));
    edit("dtype changed to 8-bit", &|c| upd(c, hdr::INFO, |v| v & !0xff00 | 2 << 8));
    edit("sign-pack flag added", &|c| upd(c, hdr::INFO, |v| v | 1 << 16));
    edit("element count huge", &|c| put(c, hdr::N_HI, 0xffff));
    // (A count changed by less than a mask word can describe a valid stream with trailing zeros:
    // the tensor stream has no checksum, the file container has one.)
    edit("element count one tile more", &|c| upd(c, hdr::N_LO, |v| v + 4096));
    edit("element count one tile less", &|c| upd(c, hdr::N_LO, |v| v - 4096));
    edit("value words past capacity", &|c| put(c, hdr::VALUE_WORDS, u32::MAX));
    edit("value words one short", &|c| upd(c, hdr::VALUE_WORDS, |v| v - 1));
    edit("status OVERFLOW", &|c| put(c, hdr::STATUS, status::OVERFLOW));
    edit("status SKIPPED", &|c| put(c, hdr::STATUS, status::SKIPPED));
    edit("status unknown bit", &|c| put(c, hdr::STATUS, 0x100));
    edit("table entry out of range", &|c| put(c, t0 + 1, 0x7fff_ffff));
    edit("last table entry past the values", &|c| {
        let vw = get(c, hdr::VALUE_WORDS);
        put(c, t0 + 3, vw)
    });
    edit("tiles overlap", &|c| {
        let t1 = get(c, t0 + 1);
        put(c, t0 + 2, t1)
    });
    edit("tiles overlap (first moved forward)", &|c| put(c, t0, 1));
    edit("mask bit past the last element", &|c| {
        let last = layout.mask_offset as usize + layout.mask_words as usize - 1;
        upd(c, last, |v| v | 1 << 31)
    });
    edit("extra mask bit (more values than stored)", &|c| {
        let last_tile_mask = layout.mask_offset as usize + 3 * 128;
        put(c, last_tile_mask, !0)
    });
    for (what, stream) in &cases {
        match host::decompress_to_vec(codec, &ctx.device, &ctx.queue, stream) {
            Err(Error::Corrupt(msg)) => eprintln!("{what}: Corrupt({msg})"),
            other => panic!("{what}: expected Error::Corrupt, got {:?}", other.map(|v| v.len())),
        }
        // The CPU reference agrees, and an upload of a corrupt header is refused the same way.
        assert!(matches!(cpu::decompress(stream), Err(Error::Corrupt(_))), "{what}: cpu::decompress");
    }
    for what in ["bad magic", "half a header", "unknown dtype"] {
        let stream = &cases.iter().find(|(w, _)| *w == what).expect("case").1;
        assert!(matches!(host::upload(&ctx.device, stream), Err(Error::Corrupt(_))), "upload of {what}");
    }
}

/// A stream whose status says a sign bit was set is an error, not data.
fn host_decompress_sign_status_is_sign_error(ctx: GpuContext) {
    let r = rig(ctx);
    let (_, mut s) = valid_stream();
    put(&mut s, hdr::STATUS, status::SIGN_BIT_SET);
    assert!(matches!(
        host::decompress_to_vec(&r.codec, &r.ctx.device, &r.ctx.queue, &s),
        Err(Error::SignBitSet { index: None })
    ));
}

/// Header status bits map to typed errors.
fn status_bits_to_errors() {
    let layout = Layout::new(DT, 10, Options::default()).expect("layout");
    let h = |status| Header { status, ..Default::default() };
    assert!(host::check_status(&h(0), &layout).is_ok());
    assert!(matches!(host::check_status(&h(status::SIGN_BIT_SET), &layout), Err(Error::SignBitSet { index: None })));
    assert!(matches!(host::check_status(&h(status::OVERFLOW), &layout), Err(Error::ArenaOverflow { .. })));
    assert!(matches!(host::check_status(&h(status::SKIPPED), &layout), Err(Error::Corrupt(_))));
    assert!(matches!(host::check_status(&h(0x40), &layout), Err(Error::Corrupt(_))));
}

/// Random damage (bit flips, truncation, word overwrites) never panics, and the GPU path agrees with
/// the CPU reference: both refuse the stream, or both decode it to the same bytes.
fn host_decompress_random_damage_never_panics(ctx: GpuContext) {
    let r = rig(ctx);
    let (ctx, codec) = (&r.ctx, &r.codec);
    let data = cpu::synthetic_bits(2 * 4096 + 33, 0.2, DType::E4m3, 2);
    let s = cpu::compress(&data, DType::E4m3, Options::default()).expect("compress");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut refused, mut decoded) = (0, 0);
    for i in 0..120 {
        let mut c = s.clone();
        match i % 3 {
            0 => {
                let bit = (rnd() % (c.len() as u64 * 8)) as usize;
                c[bit / 8] ^= 1 << (bit % 8);
            }
            1 => c.truncate((rnd() % c.len() as u64) as usize),
            _ => {
                // Damage the header / table / start of the mask, where the structure lives.
                let w = (rnd() % 16) as usize;
                put(&mut c, w, rnd() as u32);
            }
        }
        let gpu = host::decompress_to_vec(codec, &ctx.device, &ctx.queue, &c);
        let cpu = cpu::decompress(&c);
        match (&gpu, &cpu) {
            (Ok(g), Ok(h)) => {
                assert!(g == h, "damage {i}: GPU and CPU decode the same damaged stream differently");
                decoded += 1;
            }
            (Err(g), Err(h)) if std::mem::discriminant(g) == std::mem::discriminant(h) => {
                assert!(
                    matches!(g, Error::Corrupt(_) | Error::SignBitSet { .. }),
                    "damage {i}: unexpected error {g:?}"
                );
                refused += 1
            }
            (g, h) => {
                panic!("damage {i}: GPU {:?} vs CPU {:?}", g.as_ref().map(|v| v.len()), h.as_ref().map(|v| v.len()))
            }
        }
    }
    assert!(
        refused > 20 && decoded > 5,
        "refused {refused}, decoded {decoded}: the damage mix is not exercising both outcomes"
    );
}

/// Sign bits under sign packing: the host helper names the first offending element; a stream compressed
/// by `Codec::compress` carries the status bit, `read_compressed` turns it into the error, and a GPU
/// decompress of it writes nothing at all (the output's canary bytes survive).
fn sign_bit_under_sign_pack(ctx: GpuContext) {
    let codecs = [
        Codec::new(&ctx.device).expect("codec"),
        Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).expect("codec"),
        // Chunked: the sign bit is in the first chunk, the status must survive the later chunks.
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() })
            .expect("codec"),
    ];
    for (ci, codec) in codecs.iter().enumerate() {
        for dtype in DType::ALL {
            let n = 9 * 4096 + 77;
            let eb = dtype.bytes() as usize;
            let mut d = cpu::synthetic_relu2(n, 0.3, dtype, 12);
            let i = if ci == 2 { 5 } else { n - 3 };
            d[(i + 1) * eb - 1] |= 0x80;
            // Host helper and CPU reference: the first offending element.
            match host::compress_to_vec(codec, &ctx.device, &ctx.queue, &d, dtype, Options::SIGN_PACK) {
                Err(Error::SignBitSet { index }) => assert_eq!(index, Some(i as u64), "{dtype}"),
                other => panic!("{dtype}: expected SignBitSet, got {:?}", other.map(|v| v.len())),
            }
            assert!(
                matches!(cpu::compress(&d, dtype, Options::SIGN_PACK), Err(Error::SignBitSet { index: Some(j) }) if j == i as u64)
            );
            // Without sign packing the same data is fine.
            host::compress_to_vec(codec, &ctx.device, &ctx.queue, &d, dtype, Options::default())
                .expect("no sign packing");

            // The embedding API: compress + decompress recorded together; the decompress must write nothing.
            let input = buffer_with(&ctx, &d, STORAGE);
            let cap = codec.output_capacity(dtype, n as u64, Options::SIGN_PACK).expect("cap");
            let stream = buffer(&ctx, cap, STORAGE | wgpu::BufferUsages::COPY_SRC);
            let canary: Vec<u8> = (0..(n * eb).next_multiple_of(4)).map(|k| 0xA5 ^ (k as u8)).collect();
            let out = buffer_with(&ctx, &canary, STORAGE | wgpu::BufferUsages::COPY_SRC);
            let mut enc = encoder(&ctx);
            let c = codec
                .compress(
                    &mut enc,
                    BufferRange::new(&input, 0, (n * eb) as u64),
                    dtype,
                    n as u64,
                    Options::SIGN_PACK,
                    BufferRange::new(&stream, 0, cap),
                )
                .expect("recording a compress of signed data is fine: the GPU finds the sign bit");
            codec
                .decompress(&mut enc, &c, BufferRange::new(&out, 0, (n * eb) as u64))
                .expect("recording the decompress is fine too");
            bitsparse::host::sync::submit(&ctx.queue, [enc.finish()]);
            let h = host::read_header(&ctx.device, &ctx.queue, &c).expect("header");
            assert_eq!(h.status & status::SIGN_BIT_SET, status::SIGN_BIT_SET, "{dtype} codec {ci}: status bit not set");
            assert!(matches!(
                host::read_compressed(&ctx.device, &ctx.queue, &c),
                Err(Error::SignBitSet { index: None })
            ));
            let after = bitsparse::host::sync::read_buffer(&ctx.device, &ctx.queue, &out, 0, canary.len() as u64)
                .expect("read");
            assert!(after == canary, "{dtype} codec {ci}: decompress of a sign-error stream wrote into the output");
        }
    }
}
