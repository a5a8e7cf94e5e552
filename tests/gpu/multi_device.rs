//! Several devices in one process (the core's share of running data-parallel): nothing in the library is
//! process-global — one codec and one arena per device, no singleton holding a device or a queue. Two
//! devices opened from lavapipe's adapter, each with its own codec and arena, run the same micro-batches
//! at the same time (one thread each); each device's streams and decoded tensors equal those of a
//! single-device run over the same micro-batches in the same order, and the CPU reference.

use bitsparse::arena::{Arena, ArenaConfig};
use bitsparse::host::context::GpuContext;
use bitsparse::host::{self, sync};
use bitsparse::{cpu, BufferRange, Codec, DType, Options};

use crate::common::harness::{vulkan_test, Test};
use crate::common::{buf, canary, read};

pub fn tests() -> Vec<Test> {
    vec![vulkan_test!(two_devices_each_equal_a_single_device_run)]
}

/// The micro-batches: every dtype, sparse and dense, sign-packed and not, partial tiles.
fn micro_batches() -> Vec<(DType, Options, Vec<u8>)> {
    let mut v = Vec::new();
    for (i, dtype) in DType::ALL.into_iter().enumerate() {
        let n = 2 * 4096 + 37 * (i + 1);
        v.push((dtype, Options::default(), cpu::synthetic_bits(n, 0.3, dtype, 10 + i as u64)));
        v.push((dtype, Options::SIGN_PACK, cpu::synthetic_relu2(n + 5, 0.05, dtype, 20 + i as u64)));
    }
    v
}

/// What one device makes of the micro-batches, in order: through the codec (stream and decoded bytes)
/// and through an arena of its own (decoded bytes and each slot's stream size, after one step).
#[derive(Debug, PartialEq)]
struct Run {
    streams: Vec<Vec<u8>>,
    decoded: Vec<Vec<u8>>,
    arena_decoded: Vec<Vec<u8>>,
    arena_bytes: Vec<u64>,
}

fn run_on(ctx: &GpuContext, batches: &[(DType, Options, Vec<u8>)]) -> Run {
    let codec = Codec::new(&ctx.device).expect("codec");
    let mut r = Run { streams: vec![], decoded: vec![], arena_decoded: vec![], arena_bytes: vec![] };
    for (dtype, opts, d) in batches {
        let s = host::compress_to_vec(&codec, &ctx.device, &ctx.queue, d, *dtype, *opts).expect("compress");
        r.decoded.push(host::decompress_to_vec(&codec, &ctx.device, &ctx.queue, &s).expect("decompress"));
        r.streams.push(s);
    }
    let arena = Arena::new(&codec, ArenaConfig::new(4 << 20)).expect("arena");
    let inputs: Vec<wgpu::Buffer> = batches.iter().map(|(_, _, d)| buf(ctx, d)).collect();
    let outputs: Vec<wgpu::Buffer> = batches.iter().map(|(_, _, d)| canary(ctx, d.len() as u64)).collect();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    arena.reset(&mut enc);
    let mut slots = Vec::new();
    for ((dtype, opts, d), b) in batches.iter().zip(&inputs) {
        let n = d.len() as u64 / dtype.bytes();
        slots.push(arena.push(&mut enc, BufferRange::new(b, 0, d.len() as u64), *dtype, n, *opts).expect("push"));
    }
    for ((s, o), (_, _, d)) in slots.iter().zip(&outputs).zip(batches) {
        arena.decompress(&mut enc, s, BufferRange::new(o, 0, d.len() as u64)).expect("arena decompress");
    }
    sync::submit(&ctx.queue, [enc.finish()]);
    for ((s, o), (_, _, d)) in slots.iter().zip(&outputs).zip(batches) {
        r.arena_decoded.push(read(ctx, o, d.len() as u64));
        let (status, bytes) = arena.read_slot(&ctx.queue, s).expect("slot");
        assert_eq!(status, 0, "slot status");
        r.arena_bytes.push(bytes);
    }
    arena.read_status(&ctx.queue).expect("status").check().expect("arena step");
    r
}

fn two_devices_each_equal_a_single_device_run(ctx: GpuContext) {
    let batches = micro_batches();
    // The single-device run, on the harness's device.
    let single = run_on(&ctx, &batches);
    for (i, (dtype, opts, d)) in batches.iter().enumerate() {
        assert!(single.decoded[i] == *d && single.arena_decoded[i] == *d, "micro-batch {i} ({dtype}) not lossless");
        assert!(single.streams[i] == cpu::compress(d, *dtype, *opts).unwrap(), "micro-batch {i}: GPU bytes != CPU's");
    }
    // Two more devices from the same adapter, each driven by its own thread at the same time.
    let devices: Vec<GpuContext> = (0..2)
        .map(|_| GpuContext::from_adapter(ctx.adapter.clone(), wgpu::Features::empty()).expect("second device"))
        .collect();
    assert!(devices[0].device != devices[1].device && devices[0].device != ctx.device, "three distinct devices");
    let runs: Vec<Run> = std::thread::scope(|s| {
        let hs: Vec<_> = devices.iter().map(|c| s.spawn(|| run_on(c, &batches))).collect();
        hs.into_iter().map(|h| h.join().expect("device thread")).collect()
    });
    for (k, r) in runs.iter().enumerate() {
        assert!(*r == single, "device {k}: its run differs from the single-device run");
    }
}
