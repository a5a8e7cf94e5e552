//! Past the real storage-binding size (128 MiB on lavapipe), once per element width, and the 2-D
//! dispatch path with the most extreme lowered limit.
//!
//! * `chunked_bf16_*` / `chunked_e4m3_*`: a realistic ReLU² tensor (ρ ≈ 0.176) larger than one binding,
//!   through the host helpers: the GPU stream equals the CPU reference byte for byte, and the GPU decodes
//!   it back exactly.
//! * `chunked_codec_direct_*`: `Codec::compress` itself on one > 128 MiB input range (not host pieces),
//!   so the GPU splits it into chunks with gaps between them (`Placement::Chunked`); `Codec::decompress`
//!   decodes that placement, and the CPU decodes it after `host::read_compressed`.
//!
//! On lavapipe a chunk holds at most 16383 (16-bit) or 32767 (8-bit) tiles, so the real 65535-workgroup
//! limit is out of reach there: `dispatch_2d_*` lowers the limit instead.
//!
//! These tests move ~140 MB tensors: run them under `cargo test --release` (CI does).

use std::sync::OnceLock;

use bitsparse::format::TILE;
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, host, BufferRange, Codec, CodecConfig, CodecPath, DType, Options, Placement};
use wgpu::util::DeviceExt;

use crate::common::harness::{vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(chunked_bf16_past_binding_size),
        vulkan_test!(chunked_e4m3_past_binding_size),
        vulkan_test!(chunked_codec_direct_bf16_past_binding_size),
        vulkan_test!(dispatch_2d_one_workgroup_per_dimension_prime_tiles),
        vulkan_test!(dispatch_2d_one_workgroup_per_dimension_chunked),
        vulkan_test!(chunked_gpu_decodes_cpu_placed_stream),
    ]
}

const DENSITY: f64 = 0.176;
/// ~70M BF16 elements = ~140 MB, past a 128 MiB binding; not a whole number of tiles.
const N_BF16: usize = 70_000_000 + 77;
/// ~140M e4m3 elements = ~140 MB.
const N_E4M3: usize = 140_000_000 + 5;

/// The BF16 tensor, shared by the two BF16 tests (generating it costs more than a round trip).
fn bf16_data() -> &'static [u8] {
    static DATA: OnceLock<Vec<u8>> = OnceLock::new();
    DATA.get_or_init(|| cpu::synthetic_relu2(N_BF16, DENSITY, DType::Bf16, 176))
}

/// Asserts the premise: `bytes` do not fit one storage binding of this device.
fn assert_past_binding(ctx: &GpuContext, bytes: usize) {
    let limit = ctx.device.limits().max_storage_buffer_binding_size;
    assert!(bytes as u64 > limit, "{bytes} bytes fit one binding of {limit} bytes: the test would not chunk");
}

fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// Host helpers past the binding size: GPU bytes = CPU bytes, GPU decode = input, CPU decode of the GPU stream = input.
fn host_round_trip(ctx: &GpuContext, data: &[u8], dtype: DType, options: Options) {
    assert_past_binding(ctx, data.len());
    let codec = Codec::new(&ctx.device).expect("codec");
    let t = std::time::Instant::now();
    let gpu = host::compress_to_vec(&codec, &ctx.device, &ctx.queue, data, dtype, options).expect("GPU compress");
    let t_c = t.elapsed();
    let cpu_stream = cpu::compress(data, dtype, options).expect("CPU compress");
    assert!(
        gpu == cpu_stream,
        "{dtype}: GPU stream differs from the CPU reference (lengths {} / {}, first difference at byte {:?})",
        gpu.len(),
        cpu_stream.len(),
        first_diff(&gpu, &cpu_stream)
    );
    drop(cpu_stream);
    let t = std::time::Instant::now();
    let back = host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &gpu).expect("GPU decompress");
    let t_d = t.elapsed();
    assert!(
        back == data,
        "{dtype}: GPU decode differs from the input (first difference at byte {:?})",
        first_diff(&back, data)
    );
    drop(back);
    assert!(cpu::decompress(&gpu).expect("CPU decompress") == data, "{dtype}: CPU decode of the GPU stream differs");
    eprintln!(
        "{dtype}: {} bytes, stream {} bytes, GPU compress {t_c:?}, GPU decompress {t_d:?}",
        data.len(),
        gpu.len()
    );
}

fn chunked_bf16_past_binding_size(ctx: GpuContext) {
    host_round_trip(&ctx, bf16_data(), DType::Bf16, Options::SIGN_PACK);
}

fn chunked_e4m3_past_binding_size(ctx: GpuContext) {
    let data = cpu::synthetic_relu2(N_E4M3, DENSITY, DType::E4m3, 177);
    host_round_trip(&ctx, &data, DType::E4m3, Options::default());
}

fn storage_with(ctx: &GpuContext, contents: &[u8]) -> wgpu::Buffer {
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.chunked"),
        contents,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    })
}

/// `Codec::compress` / `Codec::decompress` on one > 128 MiB range at a non-zero offset: the GPU chunks
/// the tensor itself, leaving gaps between the chunks' value streams.
fn chunked_codec_direct_bf16_past_binding_size(ctx: GpuContext) {
    let data = bf16_data();
    assert_past_binding(&ctx, data.len());
    let (dtype, options, n) = (DType::Bf16, Options::SIGN_PACK, N_BF16 as u64);
    let codec = Codec::new(&ctx.device).expect("codec");
    let align = ctx.device.limits().min_storage_buffer_offset_alignment as u64;
    let dense = data.len() as u64;

    // Input at offset `align` inside a larger buffer.
    let input = {
        let mut c = vec![0xEEu8; (align + dense + align) as usize];
        c[align as usize..(align + dense) as usize].copy_from_slice(data);
        storage_with(&ctx, &c)
    };
    let cap = codec.output_capacity(dtype, n, options).expect("capacity");
    let stream = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.stream"),
        size: (2 * align + cap).next_multiple_of(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let output = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.output"),
        size: (3 * align + dense).next_multiple_of(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let c = codec
        .compress(
            &mut enc,
            BufferRange::new(&input, align, dense),
            dtype,
            n,
            options,
            BufferRange::new(&stream, 2 * align, cap),
        )
        .expect("compress");
    let Placement::Chunked { chunk_tiles } = c.placement else {
        panic!("a {dense}-byte tensor must be chunked, got {:?}", c.placement)
    };
    let tiles = n.div_ceil(TILE as u64);
    assert!(chunk_tiles < tiles, "{chunk_tiles} tiles per chunk, {tiles} tiles: only one chunk");
    assert!(chunk_tiles * TILE as u64 * dtype.bytes() <= ctx.device.limits().max_storage_buffer_binding_size);
    codec.decompress(&mut enc, &c, BufferRange::new(&output, 3 * align, dense)).expect("decompress");
    sync::submit(&ctx.queue, [enc.finish()]);

    // GPU decode of the chunked placement.
    let back = sync::read_buffer(&ctx.device, &ctx.queue, &output, 3 * align, dense).expect("read output");
    assert!(
        back == data,
        "Codec::decompress of the chunked stream differs (first difference at byte {:?})",
        first_diff(&back, data)
    );
    drop(back);

    // The raw gapped stream: exactly the CPU reference re-placed the way the chunks place it.
    let expect_compact = cpu::compress(data, dtype, options).expect("CPU compress");
    let expect_chunked = cpu::place_chunked(&expect_compact, chunk_tiles).expect("place_chunked");
    let raw = sync::read_buffer(&ctx.device, &ctx.queue, &stream, 2 * align, expect_chunked.len() as u64)
        .expect("read stream");
    assert!(
        raw == expect_chunked,
        "the chunked GPU stream differs from cpu::place_chunked (first difference at byte {:?})",
        first_diff(&raw, &expect_chunked)
    );
    assert!(cpu::decompress(&raw).expect("CPU decode of the gapped stream") == data);
    drop(raw);

    // read_compressed compacts it; the CPU decodes that.
    let compact = host::read_compressed(&ctx.device, &ctx.queue, &c).expect("read_compressed");
    assert!(
        compact == expect_compact,
        "read_compressed differs from cpu::compress (first difference at byte {:?})",
        first_diff(&compact, &expect_compact)
    );
    assert!(cpu::decompress(&compact).expect("CPU decompress") == data, "CPU decode after read_compressed differs");
}

/// Round trip through the host helpers with `codec`: GPU bytes = CPU bytes, both decoders exact.
fn round_trip(ctx: &GpuContext, codec: &Codec, data: &[u8], dtype: DType, options: Options, what: &str) {
    let cpu_stream = cpu::compress(data, dtype, options).expect("CPU compress");
    let gpu = host::compress_to_vec(codec, &ctx.device, &ctx.queue, data, dtype, options)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        gpu == cpu_stream,
        "{what}: GPU stream differs (first difference at byte {:?})",
        first_diff(&gpu, &cpu_stream)
    );
    assert!(cpu::decompress(&gpu).expect("CPU decompress") == data, "{what}: CPU decode differs");
    let back =
        host::decompress_to_vec(codec, &ctx.device, &ctx.queue, &cpu_stream).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(back == data, "{what}: GPU decode differs");
}

/// One workgroup per grid row: a prime tile count cannot be a rectangle, so every tile index comes
/// from the (x, y) → linear rebuild with x = 1, and the last row is the only one.
fn dispatch_2d_one_workgroup_per_dimension_prime_tiles(ctx: GpuContext) {
    for force_portable in [false, true] {
        let codec = Codec::with_config(
            &ctx.device,
            CodecConfig { max_workgroups_per_dim: Some(1), force_portable, ..Default::default() },
        )
        .expect("codec");
        assert_eq!(codec.path(), if force_portable { CodecPath::Portable } else { CodecPath::Subgroup });
        for (dtype, tiles, tail) in
            [(DType::Bf16, 13u64, 5u64), (DType::F16, 31, 0), (DType::E4m3, 29, 4095), (DType::E5m2, 17, 1)]
        {
            for sign_pack in [false, true] {
                // `tiles` tiles in all, the last one partial unless `tail` is 0.
                let n = if tail == 0 { tiles * TILE as u64 } else { (tiles - 1) * TILE as u64 + tail };
                let mut data = cpu::synthetic_bits(n as usize, 0.3, dtype, tiles);
                if sign_pack {
                    let eb = dtype.bytes() as usize;
                    data.chunks_mut(eb).for_each(|e| e[eb - 1] &= 0x7f);
                }
                let what = format!(
                    "max 1 workgroup/dim, {dtype}, {tiles} tiles, sign_pack={sign_pack}, portable={force_portable}"
                );
                round_trip(&ctx, &codec, &data, dtype, Options { sign_pack }, &what);
            }
        }
    }
}

/// Both lowered limits at once: chunks of 3 tiles, each dispatched as a 1-wide column.
fn dispatch_2d_one_workgroup_per_dimension_chunked(ctx: GpuContext) {
    let codec = Codec::with_config(
        &ctx.device,
        CodecConfig { max_workgroups_per_dim: Some(1), max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() },
    )
    .expect("codec");
    for dtype in [DType::Bf16, DType::E4m3] {
        let data = cpu::synthetic_relu2(19 * 4096 + 333, DENSITY, dtype, 19);
        round_trip(&ctx, &codec, &data, dtype, Options::SIGN_PACK, &format!("2d + chunked {dtype}"));
    }
}

/// The GPU decodes a gapped stream the CPU placed (`cpu::place_chunked`), given as
/// `Placement::Chunked`, at a non-zero offset: the chunked placement is a format fact, not a private
/// agreement between the GPU compress and decompress.
fn chunked_gpu_decodes_cpu_placed_stream(ctx: GpuContext) {
    let codec =
        Codec::with_config(&ctx.device, CodecConfig { max_binding_bytes: Some(3 * 8192 + 512), ..Default::default() })
            .expect("codec");
    let align = ctx.device.limits().min_storage_buffer_offset_alignment as u64;
    for (dtype, options) in [(DType::F16, Options::SIGN_PACK), (DType::E5m2, Options::default())] {
        let n = 14 * 4096 + 2049u64;
        let data = cpu::synthetic_relu2(n as usize, DENSITY, dtype, 14);
        let compact = cpu::compress(&data, dtype, options).expect("CPU compress");
        // What this codec's chunks are: take them from a GPU compress of the same tensor.
        let input = storage_with(&ctx, &{
            let mut d = data.clone();
            d.resize(d.len().next_multiple_of(4), 0);
            d
        });
        let cap = codec.output_capacity(dtype, n, options).expect("cap");
        let scratch = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("scratch"),
            size: cap,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let probe = codec
            .compress(
                &mut enc,
                BufferRange::new(&input, 0, data.len() as u64),
                dtype,
                n,
                options,
                BufferRange::new(&scratch, 0, cap),
            )
            .expect("compress");
        drop(enc);
        let Placement::Chunked { chunk_tiles } = probe.placement else {
            panic!("expected chunks, got {:?}", probe.placement)
        };
        let placed = cpu::place_chunked(&compact, chunk_tiles).expect("place_chunked");
        assert!(placed != compact, "the placed stream has no gaps: the test would prove nothing");
        let mut contents = vec![0x5Au8; (2 * align) as usize];
        contents.extend_from_slice(&placed);
        contents.resize(contents.len().next_multiple_of(4) + 64, 0);
        let sbuf = storage_with(&ctx, &contents);
        let c = bitsparse::Compressed {
            layout: probe.layout,
            buffer: sbuf.clone(),
            offset: 2 * align,
            size: placed.len() as u64,
            placement: probe.placement,
        };
        let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("out"),
            size: (data.len() as u64).next_multiple_of(4),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        codec.decompress(&mut enc, &c, BufferRange::new(&out, 0, data.len() as u64)).expect("decompress");
        sync::submit(&ctx.queue, [enc.finish()]);
        let back = sync::read_buffer(&ctx.device, &ctx.queue, &out, 0, data.len() as u64).expect("read");
        assert!(
            back == data,
            "{dtype}: GPU decode of the CPU-placed chunked stream differs (first difference at byte {:?})",
            first_diff(&back, &data)
        );
        // read_compressed compacts it back to the CPU's bytes.
        assert!(
            host::read_compressed(&ctx.device, &ctx.queue, &c).expect("read_compressed") == compact,
            "{dtype}: compaction differs"
        );
    }
}
