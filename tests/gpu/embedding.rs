//! The embedding contract: the codec works on sub-ranges of a caller's pooled buffers, as a trainer's
//! allocator hands them out (CubeCL / Burn tensors are buffer + offset + size).
//!
//! Ranges sit at non-zero offsets that are multiples of the device's `min_storage_buffer_offset_alignment`,
//! element counts are odd (so a dense range's last 32-bit word is partly outside it), and every byte of the
//! pools outside the ranges carries a canary pattern. All compresses and decompresses are recorded into
//! one encoder and submitted once; afterwards each round trip is exact and every canary byte survives,
//! including the 1–3 bytes that share the last word of an odd-length dense range.

use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, DType, Options};
use wgpu::util::DeviceExt;

use crate::common::harness::{vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(embedding_pooled_ranges_adapter_limits),
        vulkan_test!(embedding_pooled_ranges_chunked),
        vulkan_test!(embedding_default_limits_device),
        vulkan_test!(embedding_tight_buffers),
    ]
}

/// The canary byte at pool position `i` (position-dependent, so a shifted copy is caught too).
fn canary(i: usize, salt: u8) -> u8 {
    (i as u8).wrapping_mul(31) ^ 0xA5 ^ salt
}

/// Canary bytes for a pool of `size` bytes.
fn canaries(size: u64, salt: u8) -> Vec<u8> {
    (0..size as usize).map(|i| canary(i, salt)).collect()
}

/// A pool buffer holding `bytes`.
fn pool_of(ctx: &GpuContext, bytes: &[u8], label: &str) -> wgpu::Buffer {
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    })
}

/// A pool of `size` canary bytes.
fn pool(ctx: &GpuContext, size: u64, salt: u8, label: &str) -> (wgpu::Buffer, Vec<u8>) {
    let bytes = canaries(size, salt);
    (pool_of(ctx, &bytes, label), bytes)
}

struct Case {
    dtype: DType,
    options: Options,
    n: u64,
    data: Vec<u8>,
    in_off: u64,
    stream_off: u64,
    cap: u64,
    out_off: u64,
}

/// Lays ranges out one after another: each at an aligned offset `gap` alignment units (1..=3) past the
/// previous range's end rounded up to the alignment.
struct Packer {
    align: u64,
    next: u64,
}

impl Packer {
    fn new(align: u64) -> Packer {
        Packer { align, next: 0 }
    }
    fn take(&mut self, size: u64, gap: u64) -> u64 {
        let off = self.next.next_multiple_of(self.align) + gap * self.align;
        self.next = off + size;
        off
    }
    fn total(&self) -> u64 {
        (self.next.next_multiple_of(self.align) + 2 * self.align).next_multiple_of(4)
    }
}

/// Compresses and decompresses every case through pooled ranges in one encoder and one submit, then
/// checks round trips, stream bytes against the CPU reference, and every canary byte.
fn embedded_round_trips(ctx: &GpuContext, codec: &Codec, counts: &[u64]) {
    let align = ctx.device.limits().min_storage_buffer_offset_alignment as u64;
    let (mut pin, mut pst, mut pout) = (Packer::new(align), Packer::new(align), Packer::new(align));
    let mut cases = Vec::new();
    let mut k = 0u64;
    for dtype in DType::ALL {
        for options in [Options::default(), Options::SIGN_PACK] {
            for &n in counts {
                k += 1;
                let data = cpu::synthetic_relu2(n as usize, 0.176, dtype, k);
                let dense = n * dtype.bytes();
                let cap = codec.output_capacity(dtype, n, options).expect("capacity");
                cases.push(Case {
                    dtype,
                    options,
                    n,
                    data,
                    in_off: pin.take(dense, 1 + k % 3),
                    stream_off: pst.take(cap, 1 + (k + 1) % 3),
                    cap,
                    out_off: pout.take(dense, 1 + (k + 2) % 3),
                });
            }
        }
    }
    // The inputs sit in their ranges; the bytes around them stay canary.
    let mut in_bytes = canaries(pin.total(), 1);
    for c in &cases {
        in_bytes[c.in_off as usize..c.in_off as usize + c.data.len()].copy_from_slice(&c.data);
    }
    let input = pool_of(ctx, &in_bytes, "test.input_pool");
    let (streams, st_bytes) = pool(ctx, pst.total(), 2, "test.stream_pool");
    let (output, out_bytes) = pool(ctx, pout.total(), 3, "test.output_pool");

    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let mut handles = Vec::new();
    for c in &cases {
        let dense = c.data.len() as u64;
        let h = codec
            .compress(
                &mut enc,
                BufferRange::new(&input, c.in_off, dense),
                c.dtype,
                c.n,
                c.options,
                BufferRange::new(&streams, c.stream_off, c.cap),
            )
            .unwrap_or_else(|e| panic!("{} n={} {:?}: compress: {e}", c.dtype, c.n, c.options));
        codec
            .decompress(&mut enc, &h, BufferRange::new(&output, c.out_off, dense))
            .unwrap_or_else(|e| panic!("{} n={} {:?}: decompress: {e}", c.dtype, c.n, c.options));
        handles.push(h);
    }
    sync::submit(&ctx.queue, [enc.finish()]);

    let in_after = sync::read_buffer(&ctx.device, &ctx.queue, &input, 0, input.size()).expect("read input pool");
    let st_after = sync::read_buffer(&ctx.device, &ctx.queue, &streams, 0, streams.size()).expect("read stream pool");
    let out_after = sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, output.size()).expect("read output pool");
    assert!(in_after == in_bytes, "the codec wrote into its input pool");

    let mut st_expect = st_bytes.clone();
    let mut out_expect = out_bytes.clone();
    for (c, h) in cases.iter().zip(&handles) {
        let what = format!(
            "{} n={} sign_pack={} (input @{}, stream @{}, output @{})",
            c.dtype, c.n, c.options.sign_pack, c.in_off, c.stream_off, c.out_off
        );
        let o = c.out_off as usize;
        assert!(out_after[o..o + c.data.len()] == c.data[..], "{what}: round trip differs");
        out_expect[o..o + c.data.len()].copy_from_slice(&c.data);
        // The stream: the whole capacity range belongs to the codec; its compact prefix equals the CPU's bytes.
        let s = c.stream_off as usize;
        st_expect[s..s + c.cap as usize].copy_from_slice(&st_after[s..s + c.cap as usize]);
        let expect = cpu::compress(&c.data, c.dtype, c.options).expect("cpu compress");
        assert!(st_after[s..s + expect.len()] == expect[..], "{what}: stream differs from the CPU reference");
        let read = host::read_compressed(&ctx.device, &ctx.queue, h).expect("read_compressed");
        assert!(read == expect, "{what}: read_compressed differs from the CPU reference");
    }
    let first_diff = |a: &[u8], b: &[u8]| a.iter().zip(b).position(|(x, y)| x != y);
    assert!(
        out_after == out_expect,
        "output pool: a byte outside the dense ranges changed (first at {:?})",
        first_diff(&out_after, &out_expect)
    );
    assert!(
        st_after == st_expect,
        "stream pool: a byte outside the stream ranges changed (first at {:?})",
        first_diff(&st_after, &st_expect)
    );
    // The layout really put canary bytes in the last word of odd-length ranges (the test can fail there).
    assert!(cases.iter().any(|c| (c.out_off + c.data.len() as u64) % 4 == 1), "no range ends 1 byte into a word");
    assert!(cases.iter().any(|c| (c.out_off + c.data.len() as u64) % 4 == 3), "no range ends 3 bytes into a word");
    assert!(cases.iter().any(|c| (c.out_off + c.data.len() as u64) % 4 == 2), "no range ends 2 bytes into a word");
}

/// Odd counts (the last word partial for every width), one element, empty, tile ± 1, several tiles.
const COUNTS: [u64; 8] = [1, 3, 0, 33, 4095, 4097, 2 * 4096 + 1, 3 * 4096 + 4093];

fn embedding_pooled_ranges_adapter_limits(ctx: GpuContext) {
    for force_portable in [false, true] {
        let codec =
            Codec::with_config(&ctx.device, CodecConfig { force_portable, ..Default::default() }).expect("codec");
        embedded_round_trips(&ctx, &codec, &COUNTS);
    }
}

/// The chunked path through pooled ranges: a lowered binding limit splits these tensors into chunks
/// whose bindings start at non-zero offsets inside the pools.
fn embedding_pooled_ranges_chunked(ctx: GpuContext) {
    let codec =
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() })
            .expect("codec");
    embedded_round_trips_chunked(&ctx, &codec);
}

fn embedded_round_trips_chunked(ctx: &GpuContext, codec: &Codec) {
    // Chunked streams have gaps: compare the decoded data and the compacted stream, not raw bytes.
    let align = ctx.device.limits().min_storage_buffer_offset_alignment as u64;
    for (dtype, n) in [(DType::Bf16, 7 * 4096 + 3u64), (DType::E5m2, 11 * 4096 + 4095)] {
        let data = cpu::synthetic_relu2(n as usize, 0.176, dtype, n);
        let dense = data.len() as u64;
        let cap = codec.output_capacity(dtype, n, Options::SIGN_PACK).expect("cap");
        let (in_off, st_off, out_off) = (3 * align, 5 * align, 2 * align);
        let mut in_bytes = canaries((in_off + dense + align).next_multiple_of(4), 4);
        in_bytes[in_off as usize..(in_off + dense) as usize].copy_from_slice(&data);
        let input = pool_of(ctx, &in_bytes, "in");
        let (streams, st_bytes) = pool(ctx, (st_off + cap + 2 * align).next_multiple_of(4), 5, "st");
        let (output, out_bytes) = pool(ctx, (out_off + dense + align).next_multiple_of(4), 6, "out");
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let h = codec
            .compress(
                &mut enc,
                BufferRange::new(&input, in_off, dense),
                dtype,
                n,
                Options::SIGN_PACK,
                BufferRange::new(&streams, st_off, cap),
            )
            .expect("compress");
        assert!(matches!(h.placement, bitsparse::Placement::Chunked { .. }), "{dtype}: expected a chunked placement");
        codec.decompress(&mut enc, &h, BufferRange::new(&output, out_off, dense)).expect("decompress");
        sync::submit(&ctx.queue, [enc.finish()]);
        let out_after = sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, output.size()).expect("read");
        let st_after = sync::read_buffer(&ctx.device, &ctx.queue, &streams, 0, streams.size()).expect("read");
        let mut out_expect = out_bytes.clone();
        out_expect[out_off as usize..(out_off + dense) as usize].copy_from_slice(&data);
        assert!(
            out_after == out_expect,
            "{dtype}: chunked round trip differs or a byte outside the output range changed"
        );
        let (s, e) = (st_off as usize, (st_off + cap) as usize);
        assert!(
            st_after[..s] == st_bytes[..s] && st_after[e..] == st_bytes[e..],
            "{dtype}: bytes outside the stream range changed"
        );
        let expect = cpu::compress(&data, dtype, Options::SIGN_PACK).expect("cpu");
        assert!(
            host::read_compressed(&ctx.device, &ctx.queue, &h).expect("read_compressed") == expect,
            "{dtype}: compacted stream differs"
        );
        let in_after = sync::read_buffer(&ctx.device, &ctx.queue, &input, 0, input.size()).expect("read");
        assert!(in_after == in_bytes, "{dtype}: input pool changed");
    }
}

/// A borrowed device need not have the adapter's limits: under `Limits::default()` offsets must be
/// multiples of 256 and a storage binding holds at most 128 MiB. The codec must read both from the device.
fn embedding_default_limits_device(probe: GpuContext) {
    let adapter = probe.adapter.clone();
    let features = adapter.features() & bitsparse::host::context::wanted_features();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("default-limits"),
        required_features: features,
        required_limits: wgpu::Limits::default(),
        ..Default::default()
    }))
    .expect("a device with default limits");
    let limits = device.limits();
    assert_eq!(limits.min_storage_buffer_offset_alignment, 256);
    assert_eq!(limits.max_storage_buffer_binding_size, 128 << 20);
    let info = adapter.get_info();
    let ctx = GpuContext { adapter, device, queue, info };
    for force_portable in [false, true] {
        let codec = Codec::with_config(&ctx.device, CodecConfig { force_portable, ..Default::default() })
            .expect("codec on a default-limits device");
        embedded_round_trips(&ctx, &codec, &[1, 3, 33, 4097, 2 * 4096 + 3]);
        let data = cpu::synthetic_relu2(5 * 4096 + 7, 0.176, DType::F16, 3);
        let s = host::compress_to_vec(&codec, &ctx.device, &ctx.queue, &data, DType::F16, Options::default())
            .expect("compress_to_vec");
        assert!(s == cpu::compress(&data, DType::F16, Options::default()).expect("cpu"));
        assert!(host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &s).expect("decompress_to_vec") == data);
    }
}

/// Buffers exactly as large as their ranges (rounded up to whole words), so any binding the codec makes
/// past a range's end is a wgpu validation error: compress, decompress and the chunked path must stay
/// inside the ranges they were given.
fn embedding_tight_buffers(ctx: GpuContext) {
    let exact = |bytes: &[u8]| {
        let mut b = bytes.to_vec();
        b.resize(bytes.len().next_multiple_of(4).max(4), 0);
        pool_of(&ctx, &b, "tight")
    };
    let empty = |size: u64| {
        ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tight"),
            size: size.next_multiple_of(4).max(4),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    };
    let configs = [
        CodecConfig::default(),
        CodecConfig { force_portable: true, ..Default::default() },
        CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() },
    ];
    for config in configs {
        let codec = Codec::with_config(&ctx.device, config.clone()).expect("codec");
        for dtype in DType::ALL {
            for n in [1u64, 3, 4097, 7 * 4096 + 5, 8 * 4096] {
                for options in [Options::default(), Options::SIGN_PACK] {
                    let what = format!("{config:?} {dtype} n={n} {options:?}");
                    let data = cpu::synthetic_relu2(n as usize, 0.5, dtype, n);
                    let dense = data.len() as u64;
                    let cap = codec.output_capacity(dtype, n, options).expect("cap");
                    let (input, stream, output) = (exact(&data), empty(cap), empty(dense));
                    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
                    let mut enc = ctx.device.create_command_encoder(&Default::default());
                    let c = codec
                        .compress(
                            &mut enc,
                            BufferRange::new(&input, 0, dense),
                            dtype,
                            n,
                            options,
                            BufferRange::new(&stream, 0, cap),
                        )
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    codec
                        .decompress(&mut enc, &c, BufferRange::new(&output, 0, dense))
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    sync::submit(&ctx.queue, [enc.finish()]);
                    if let Some(e) = pollster::block_on(scope.pop()) {
                        panic!("{what}: wgpu validation error: {e}");
                    }
                    let back = sync::read_buffer(&ctx.device, &ctx.queue, &output, 0, dense).expect("read");
                    assert!(back == data, "{what}: round trip differs");
                    let s = host::read_compressed(&ctx.device, &ctx.queue, &c).expect("read_compressed");
                    assert!(s == cpu::compress(&data, dtype, options).expect("cpu"), "{what}: stream differs");
                }
            }
        }
    }
}
