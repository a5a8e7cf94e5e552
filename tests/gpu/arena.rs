//! The GPU arena and the fused kernels: round trips through the arena, fused forward/backward against
//! the CPU reference, overflow handling (`arena_overflow_*`) and a whole step with no host
//! synchronisation (`no_host_sync_*`).

use bitsparse::arena::{ctrl, Arena, ArenaConfig, ArenaSizer, Slot};
use bitsparse::conformance::LENGTHS;
use bitsparse::cpu::act::{self, Activation};
use bitsparse::format::status;
use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::update::GatedSgd;
use bitsparse::{cpu, BufferRange, Codec, CodecConfig, DType, Error, Options, Staging};
use wgpu::util::DeviceExt;

use crate::common;
use crate::common::harness::{vulkan_test, Test};
use crate::common::{buf, canary, read};

pub fn tests() -> Vec<Test> {
    vec![
        vulkan_test!(arena_round_trip_lifo_and_reset),
        vulkan_test!(fused_forward_backward_match_cpu),
        vulkan_test!(fused_forward_sign_packed_positive_input),
        vulkan_test!(arena_overflow_is_detected_and_contained),
        vulkan_test!(arena_overflow_at_reservation),
        vulkan_test!(no_host_sync_training_step),
        vulkan_test!(arena_refuses_bad_configuration),
        vulkan_test!(fused_forward_fallback_counts_relu_output),
        vulkan_test!(arena_ring_fifo_across_micro_batches),
        vulkan_test!(arena_ring_overflow_spares_the_live_tensor),
    ]
}

fn submit(ctx: &GpuContext, enc: wgpu::CommandEncoder) {
    sync::submit(&ctx.queue, [enc.finish()]);
}

/// Pre-activations with negatives, -0.0, NaNs of both signs and infinities; exponents in [100, 150]
/// keep r² and 2·r·g normal in f32 and finite in bf16 (GPUs may flush subnormals; docs/FUSED.md).
fn preact(n: usize, seed: u64) -> Vec<u8> {
    common::preact(n, seed, 100, 51, true)
}

fn arena(_ctx: &GpuContext, codec: &Codec, bytes: u64) -> Arena {
    Arena::new(codec, ArenaConfig::new(bytes)).expect("arena")
}

fn arena_round_trip_lifo_and_reset(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let a = arena(&ctx, &codec, 4 << 20);
    let cases: Vec<(DType, Options, Vec<u8>)> = vec![
        (DType::Bf16, Options::default(), cpu::synthetic_bits(3 * 4096 + 5, 0.2, DType::Bf16, 1)),
        (DType::E4m3, Options::default(), cpu::synthetic_bits(4096 * 2 + 3, 0.5, DType::E4m3, 2)),
        (DType::F16, Options::SIGN_PACK, cpu::synthetic_relu2(9999, 0.176, DType::F16, 3)),
        (DType::E5m2, Options::SIGN_PACK, cpu::synthetic_relu2(77, 0.3, DType::E5m2, 4)),
        (DType::Bf16, Options::default(), Vec::new()),
    ];
    for round in 0..2 {
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        a.reset(&mut enc);
        let inputs: Vec<wgpu::Buffer> = cases.iter().map(|(_, _, d)| buf(&ctx, d)).collect();
        let mut slots: Vec<Slot> = Vec::new();
        for ((dtype, opts, d), b) in cases.iter().zip(&inputs) {
            let n = d.len() as u64 / dtype.bytes();
            slots.push(a.push(&mut enc, BufferRange::new(b, 0, d.len() as u64), *dtype, n, *opts).unwrap());
        }
        let outs: Vec<wgpu::Buffer> = cases.iter().map(|(_, _, d)| canary(&ctx, d.len() as u64)).collect();
        for (i, s) in slots.iter().enumerate() {
            a.decompress(&mut enc, s, BufferRange::new(&outs[i], 0, cases[i].2.len() as u64)).unwrap();
        }
        submit(&ctx, enc);
        for (i, (dtype, _, d)) in cases.iter().enumerate() {
            assert!(
                read(&ctx, &outs[i], d.len() as u64) == *d,
                "round {round}: {dtype} tensor {i} did not round-trip through the arena"
            );
        }
        let st = a.read_status(&ctx.queue).unwrap();
        st.check().unwrap();
        // The arena's own accounting equals the sum of the compact sizes, 16-byte aligned each.
        let mut expect = 0;
        for s in &slots {
            let (status, bytes) = a.read_slot(&ctx.queue, s).unwrap();
            assert_eq!(status, 0);
            expect += bytes.next_multiple_of(16);
        }
        assert_eq!(st.used_bytes, expect);
        // LIFO: popping out of order is refused; in order brings the head back to 0.
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let first = slots[0].clone();
        assert!(matches!(a.pop(&mut enc, first), Err(Error::InvalidArgument(_))));
        while let Some(s) = slots.pop() {
            a.pop(&mut enc, s).unwrap();
        }
        submit(&ctx, enc);
        assert_eq!(a.read_status(&ctx.queue).unwrap().used_bytes, 0);
    }
}

fn fused_case(ctx: &GpuContext, codec: &Codec, n: usize, act: Activation, sign_pack: bool) {
    let a = arena(ctx, codec, 8 << 20);
    let z = preact(n, n as u64);
    let (r_ref, a_ref) = act::forward(&z, act);
    let g = preact(n, 7 + n as u64);
    let (dz_ref, a2_ref) = act::backward(&r_ref, &g, act);
    let bytes = (n * 2) as u64;
    let zb = buf(ctx, &z);
    let gb = buf(ctx, &g);
    let (ab, rb, dzb, a2b) = (canary(ctx, bytes), canary(ctx, bytes), canary(ctx, bytes), canary(ctx, bytes));
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    a.reset(&mut enc);
    // Sign packing with NaNs whose sign bit is set would be an error: use it only without them.
    let opts = Options { sign_pack };
    let slot = a
        .fused_forward(&mut enc, BufferRange::new(&zb, 0, bytes), n as u64, act, opts, BufferRange::new(&ab, 0, bytes))
        .unwrap();
    a.decompress(&mut enc, &slot, BufferRange::new(&rb, 0, bytes)).unwrap();
    a.fused_backward(
        &mut enc,
        &slot,
        act,
        BufferRange::new(&gb, 0, bytes),
        BufferRange::new(&dzb, 0, bytes),
        Some(BufferRange::new(&a2b, 0, bytes)),
    )
    .unwrap();
    submit(ctx, enc);
    let what = format!("{act:?} n={n} sign_pack={sign_pack}");
    let st = a.read_status(&ctx.queue).unwrap();
    if sign_pack {
        // preact() has NaNs with the sign bit set: relu keeps them, so sign packing must refuse.
        assert!(matches!(st.check(), Err(Error::SignBitSet { .. })), "{what}: expected a sign-bit error, got {st:?}");
        assert_eq!(read(ctx, &rb, bytes), vec![0xA5u8; n * 2], "{what}: an invalid slot must decompress to nothing");
        return;
    }
    st.check().unwrap();
    assert!(read(ctx, &ab, bytes) == a_ref, "{what}: fused forward dense output differs from the CPU reference");
    assert!(read(ctx, &rb, bytes) == r_ref, "{what}: compressed relu(z) differs from the CPU reference");
    assert!(read(ctx, &dzb, bytes) == dz_ref, "{what}: fused backward dL/dz differs from the CPU reference");
    assert!(read(ctx, &a2b, bytes) == a2_ref, "{what}: fused backward dense a differs from the CPU reference");
    // And the compressed bytes are what the CPU codec makes of r: the same size, and byte for byte once
    // the unordered tiles (the arena's default placement) are put in order.
    let (_, used) = a.read_slot(&ctx.queue, &slot).unwrap();
    let stream = sync::read_buffer(&ctx.device, &ctx.queue, a.buffer(), 0, used).unwrap();
    let want = cpu::compress(&r_ref, DType::Bf16, opts).unwrap();
    assert_eq!(stream.len(), want.len(), "{what}: arena stream size");
    assert!(cpu::compact(&stream).unwrap() == want, "{what}: arena bytes differ from cpu::compress(r)");
}

/// On both paths, and with BF16 values stored directly into the arena (`Staging::Direct`).
fn fused_forward_backward_match_cpu(ctx: GpuContext) {
    for codec in [
        Codec::new(&ctx.device).unwrap(),
        Codec::with_config(&ctx.device, CodecConfig { force_portable: true, ..Default::default() }).unwrap(),
        Codec::with_config(&ctx.device, CodecConfig { staging: Some(Staging::Direct), ..Default::default() }).unwrap(),
    ] {
        for act in [Activation::Relu, Activation::Relu2] {
            // The conformance suite's lengths, and five tiles past its longest.
            for &n in LENGTHS.iter().chain(&[5 * 4096 + 1001]) {
                fused_case(&ctx, &codec, n, act, false);
            }
        }
        fused_case(&ctx, &codec, 3 * 4096 + 9, Activation::Relu2, true);
    }
}

fn fused_forward_sign_packed_positive_input(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let a = arena(&ctx, &codec, 1 << 20);
    // No NaN with a sign bit: relu(z) is then >= 0 everywhere and sign packing is valid.
    let z: Vec<u8> = preact(10_000, 5)
        .chunks(2)
        .flat_map(|c| {
            let v = u16::from_le_bytes([c[0], c[1]]);
            let v = if act::bf16_is_nan(v) { v & 0x7fff } else { v };
            v.to_le_bytes()
        })
        .collect();
    let (r_ref, a_ref) = act::forward(&z, Activation::Relu2);
    let bytes = z.len() as u64;
    let (zb, ab, rb) = (buf(&ctx, &z), canary(&ctx, bytes), canary(&ctx, bytes));
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let slot = a
        .fused_forward(
            &mut enc,
            BufferRange::new(&zb, 0, bytes),
            10_000,
            Activation::Relu2,
            Options::SIGN_PACK,
            BufferRange::new(&ab, 0, bytes),
        )
        .unwrap();
    a.decompress(&mut enc, &slot, BufferRange::new(&rb, 0, bytes)).unwrap();
    submit(&ctx, enc);
    a.read_status(&ctx.queue).unwrap().check().unwrap();
    assert!(read(&ctx, &ab, bytes) == a_ref);
    assert!(read(&ctx, &rb, bytes) == r_ref);
}

/// An arena too small for the third tensor: typed error, the overflowed decompress writes nothing,
/// the tensors before it are intact, and the gated weight update changes nothing. For each way values
/// are written: BF16 in `u16` slots (the default), F32 and BF16 stored directly (`Staging::Direct`, F32's default; BF16's through a `u16` view of the arena).
fn arena_overflow_is_detected_and_contained(ctx: GpuContext) {
    let cases = [(DType::Bf16, Staging::Auto), (DType::F32, Staging::Auto), (DType::Bf16, Staging::Direct)];
    for (chunked, (dtype, staging)) in [false, true].into_iter().flat_map(|c| cases.map(|k| (c, k))) {
        let chunk_bytes = 4 * 4096 * dtype.bytes() + 1024;
        let cfg = CodecConfig {
            max_binding_bytes: chunked.then_some(chunk_bytes),
            staging: Some(staging),
            ..Default::default()
        };
        let codec = Codec::with_config(&ctx.device, cfg).unwrap();
        let data: Vec<Vec<u8>> = (0..3).map(|i| cpu::synthetic_relu2(20 * 4096, 0.5, dtype, i)).collect();
        let n = 20 * 4096u64;
        let bytes = n * dtype.bytes();
        let what = format!("{dtype} {staging:?} chunked={chunked}");
        let ins: Vec<wgpu::Buffer> = data.iter().map(|d| buf(&ctx, d)).collect();
        // Room for two compressed tensors but not three (a chunked compress leaves gaps between
        // chunks, so measure the extent the arena's own accounting gives).
        let probe = arena(&ctx, &codec, 8 << 20);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let s0 = probe.push(&mut enc, BufferRange::new(&ins[0], 0, bytes), dtype, n, Options::default()).unwrap();
        submit(&ctx, enc);
        let one = probe.read_slot(&ctx.queue, &s0).unwrap().1.next_multiple_of(16);
        let a = arena(&ctx, &codec, ((2 * one + one / 2) / 16 + 1) * 16);
        let outs: Vec<wgpu::Buffer> = (0..3).map(|_| canary(&ctx, bytes)).collect();
        let w0: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let w = buf(&ctx, bytemuck::cast_slice(&w0));
        let g = buf(&ctx, bytemuck::cast_slice(&vec![1.0f32; 1000]));
        let sgd = GatedSgd::new(&ctx.device).unwrap();

        let mut enc = ctx.device.create_command_encoder(&Default::default());
        a.reset(&mut enc);
        let slots: Vec<Slot> = (0..3)
            .map(|i| a.push(&mut enc, BufferRange::new(&ins[i], 0, bytes), dtype, n, Options::default()).unwrap())
            .collect();
        for i in 0..3 {
            a.decompress(&mut enc, &slots[i], BufferRange::new(&outs[i], 0, bytes)).unwrap();
        }
        let gate = a.gate(&mut enc, GatedSgd::grid(1000)).unwrap();
        sgd.record(&mut enc, &gate, BufferRange::new(&w, 0, 4000), BufferRange::new(&g, 0, 4000), 1000, 0.5).unwrap();
        submit(&ctx, enc);

        let st = a.read_status(&ctx.queue).unwrap();
        match st.check() {
            Err(Error::ArenaOverflow { capacity, .. }) => assert_eq!(capacity, a.capacity_bytes()),
            other => panic!("{what}: expected ArenaOverflow, got {other:?} ({st:?})"),
        }
        assert!(read(&ctx, &outs[0], bytes) == data[0], "{what}: tensor 0 damaged");
        assert!(read(&ctx, &outs[1], bytes) == data[1], "{what}: tensor 1 damaged");
        assert_eq!(read(&ctx, &outs[2], bytes), vec![0xA5u8; bytes as usize], "{what}: overflowed decompress wrote");
        let (s2, _) = a.read_slot(&ctx.queue, &slots[2]).unwrap();
        assert_eq!(s2 & 2, 2, "overflow bit on the slot");
        assert_eq!(s2 & 4, 4, "skipped bit on the slot");
        let w1: Vec<f32> = bytemuck::pod_collect_to_vec(&read(&ctx, &w, 4000));
        assert_eq!(w1, w0, "{what}: a failed step must not change weights");

        // Recovery: grow as the sizer says and re-run: the step succeeds and the update applies.
        let mut sizer = ArenaSizer::default();
        sizer.observe(&st);
        let a2 = arena(&ctx, &codec, sizer.recommended_bytes());
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let slots: Vec<Slot> = (0..3)
            .map(|i| a2.push(&mut enc, BufferRange::new(&ins[i], 0, bytes), dtype, n, Options::default()).unwrap())
            .collect();
        a2.decompress(&mut enc, &slots[2], BufferRange::new(&outs[2], 0, bytes)).unwrap();
        let gate = a2.gate(&mut enc, GatedSgd::grid(1000)).unwrap();
        sgd.record(&mut enc, &gate, BufferRange::new(&w, 0, 4000), BufferRange::new(&g, 0, 4000), 1000, 0.5).unwrap();
        submit(&ctx, enc);
        a2.read_status(&ctx.queue).unwrap().check().unwrap();
        assert!(read(&ctx, &outs[2], bytes) == data[2]);
        let w2: Vec<f32> = bytemuck::pod_collect_to_vec(&read(&ctx, &w, 4000));
        assert!(w2.iter().zip(&w0).all(|(a, b)| *a == b - 0.5), "the gated update must apply on a good step");
    }
}

/// Overflow found at reservation (not even the mask fits): nothing is written at all.
fn arena_overflow_at_reservation(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let a = arena(&ctx, &codec, 256);
    let d = cpu::synthetic_relu2(50_000, 0.1, DType::Bf16, 9);
    let bytes = d.len() as u64;
    let (ib, ob) = (buf(&ctx, &d), canary(&ctx, bytes));
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let s = a.push(&mut enc, BufferRange::new(&ib, 0, bytes), DType::Bf16, 50_000, Options::default()).unwrap();
    a.decompress(&mut enc, &s, BufferRange::new(&ob, 0, bytes)).unwrap();
    submit(&ctx, enc);
    assert!(matches!(a.read_status(&ctx.queue).unwrap().check(), Err(Error::ArenaOverflow { .. })));
    assert_eq!(read(&ctx, &ob, bytes), vec![0xA5u8; bytes as usize]);
    assert_eq!(read(&ctx, a.buffer(), 256), vec![0u8; 256], "nothing may be written into a too-small arena");
}

/// L = 4 layers forward (fused, into the arena) and backward in reverse (fused, popping), with a gated
/// update: the library performs no host synchronisation while the step is recorded, and the results
/// equal the CPU reference.
fn no_host_sync_training_step(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let a = arena(&ctx, &codec, 16 << 20);
    let sgd = GatedSgd::new(&ctx.device).unwrap();
    let layers = 4;
    let n = 3 * 4096 + 123;
    let bytes = (n * 2) as u64;
    let zs: Vec<Vec<u8>> = (0..layers).map(|l| preact(n, 100 + l as u64)).collect();
    let gs: Vec<Vec<u8>> = (0..layers).map(|l| preact(n, 200 + l as u64)).collect();
    let zb: Vec<wgpu::Buffer> = zs.iter().map(|z| buf(&ctx, z)).collect();
    let gb: Vec<wgpu::Buffer> = gs.iter().map(|g| buf(&ctx, g)).collect();
    let ab: Vec<wgpu::Buffer> = (0..layers).map(|_| canary(&ctx, bytes)).collect();
    let dzb: Vec<wgpu::Buffer> = (0..layers).map(|_| canary(&ctx, bytes)).collect();
    let a2b: Vec<wgpu::Buffer> = (0..layers).map(|_| canary(&ctx, bytes)).collect();
    let w = buf(&ctx, bytemuck::cast_slice(&vec![1.0f32; 256]));
    let gw = buf(&ctx, bytemuck::cast_slice(&vec![2.0f32; 256]));

    let before = sync::thread_host_syncs();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    a.reset(&mut enc);
    let mut slots = Vec::new();
    for l in 0..layers {
        let act = if l % 2 == 0 { Activation::Relu2 } else { Activation::Relu };
        slots.push(
            a.fused_forward(
                &mut enc,
                BufferRange::new(&zb[l], 0, bytes),
                n as u64,
                act,
                Options::default(),
                BufferRange::new(&ab[l], 0, bytes),
            )
            .unwrap(),
        );
    }
    let status = a.request_status(&mut enc); // asynchronous: read whenever the caller likes
    for l in (0..layers).rev() {
        let act = if l % 2 == 0 { Activation::Relu2 } else { Activation::Relu };
        let s = slots.pop().unwrap();
        a.fused_backward(
            &mut enc,
            &s,
            act,
            BufferRange::new(&gb[l], 0, bytes),
            BufferRange::new(&dzb[l], 0, bytes),
            Some(BufferRange::new(&a2b[l], 0, bytes)),
        )
        .unwrap();
        a.pop(&mut enc, s).unwrap();
    }
    let gate = a.gate(&mut enc, GatedSgd::grid(256)).unwrap();
    sgd.record(&mut enc, &gate, BufferRange::new(&w, 0, 1024), BufferRange::new(&gw, 0, 1024), 256, 0.25).unwrap();
    let cmd = enc.finish();
    assert_eq!(sync::thread_host_syncs(), before, "the library synchronised with the host during the step");
    ctx.queue.submit([cmd]); // the caller's own submit, outside the library

    // After the step, at a point of the test's choosing: collect the status and check the results.
    status.start();
    sync::wait_idle(&ctx.device).unwrap();
    let st = status.try_take().expect("status mapped").unwrap();
    st.check().unwrap();
    assert!(st.used_bytes > 0, "status read after the forward must show the cache in use");
    assert_eq!(a.read_status(&ctx.queue).unwrap().used_bytes, 0, "backward popped everything");
    for l in 0..layers {
        let act = if l % 2 == 0 { Activation::Relu2 } else { Activation::Relu };
        let (r, a_ref) = act::forward(&zs[l], act);
        let (dz, a2) = act::backward(&r, &gs[l], act);
        assert!(read(&ctx, &ab[l], bytes) == a_ref, "layer {l}: forward a");
        assert!(read(&ctx, &dzb[l], bytes) == dz, "layer {l}: dL/dz");
        assert!(read(&ctx, &a2b[l], bytes) == a2, "layer {l}: backward a");
    }
    let w1: Vec<f32> = bytemuck::pod_collect_to_vec(&read(&ctx, &w, 1024));
    assert!(w1.iter().all(|&x| x == 0.5), "gated update applied on a good step");
}

fn arena_refuses_bad_configuration(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    for cap in [0, 100, u64::MAX / 2] {
        assert!(matches!(Arena::new(&codec, ArenaConfig::new(cap)), Err(Error::InvalidArgument(_))), "capacity {cap}");
    }
    let a = arena(&ctx, &codec, 1 << 16);
    let d = buf(&ctx, &[0u8; 64]);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    // The input may not live in the arena itself.
    let r = a.push(&mut enc, BufferRange::new(a.buffer(), 0, 64), DType::Bf16, 32, Options::default());
    assert!(r.is_err());
    let s = a.push(&mut enc, BufferRange::new(&d, 0, 64), DType::E4m3, 64, Options::default()).unwrap();
    // The fused backward takes BF16, F16 or F32 slots (FP8 only as FP8 storage of BF16).
    let out = canary(&ctx, 64);
    let g = canary(&ctx, 64);
    assert!(matches!(
        a.fused_backward(
            &mut enc,
            &s,
            Activation::Relu,
            BufferRange::new(&g, 0, 64),
            BufferRange::new(&out, 0, 64),
            None
        ),
        Err(Error::InvalidArgument(_))
    ));
}

/// Regression: the look-back fallback of the fused forward must count relu(z)'s nonzeros (what the
/// tile stores), not z's; otherwise the published tile sizes are too large and the stream has gaps.
fn fused_forward_fallback_counts_relu_output(ctx: GpuContext) {
    let n = 61 * 4096 + 9;
    // Half the values negative (finite), the rest positive: relu(z) has ~half the nonzeros of z.
    let mut s = 0x1234_5678_9abc_def1u64;
    let z: Vec<u8> = (0..n)
        .flat_map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let sign = (s & 1) as u16;
            let v = sign << 15 | (110 + ((s >> 8) % 30) as u16) << 7 | ((s >> 20) & 0x7f) as u16;
            v.to_le_bytes()
        })
        .collect();
    let (r_ref, _) = act::forward(&z, Activation::Relu);
    let expect = cpu::compress(&r_ref, DType::Bf16, Options::default()).unwrap();
    let bytes = z.len() as u64;
    let mk = |d: &[u8]| {
        ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: d,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
    };
    let mut bad = 0;
    for spin in [None, Some(1)] {
        for portable in [false, true] {
            let codec = Codec::with_config(
                &ctx.device,
                CodecConfig { spin_limit: spin, force_portable: portable, ..Default::default() },
            )
            .unwrap();
            // The look-back's fallback is the ordered placement's: that arena.
            let config = ArenaConfig { tile_order: bitsparse::TileOrder::Ordered, ..ArenaConfig::new(8 << 20) };
            let arena = Arena::new(&codec, config).unwrap();
            for rep in 0..3 {
                let zb = mk(&z);
                let ab = mk(&vec![0u8; z.len()]);
                let rb = mk(&vec![0u8; z.len()]);
                let mut enc = ctx.device.create_command_encoder(&Default::default());
                arena.reset(&mut enc);
                let slot = arena
                    .fused_forward(
                        &mut enc,
                        BufferRange::new(&zb, 0, bytes),
                        n as u64,
                        Activation::Relu,
                        Options::default(),
                        BufferRange::new(&ab, 0, bytes),
                    )
                    .unwrap();
                arena.decompress(&mut enc, &slot, BufferRange::new(&rb, 0, bytes)).unwrap();
                sync::submit(&ctx.queue, [enc.finish()]);
                let st = arena.read_status(&ctx.queue).unwrap();
                let r = sync::read_buffer(&ctx.device, &ctx.queue, &rb, 0, bytes).unwrap();
                let (_, used) = arena.read_slot(&ctx.queue, &slot).unwrap();
                let stream = sync::read_buffer(&ctx.device, &ctx.queue, arena.buffer(), 0, used).unwrap();
                let ok_r = r == r_ref;
                let ok_s = stream == expect;
                eprintln!("spin={spin:?} portable={portable} rep={rep}: status {:?} decoded ok {ok_r}, stream == cpu {ok_s} (used {used} vs {})", st.check().is_ok(), expect.len());
                if !ok_r || !ok_s {
                    bad += 1;
                }
            }
        }
    }
    assert_eq!(bad, 0);
}

/// FIFO use across micro-batches: the arena as a ring. Tensors are released oldest first and new ones
/// wrap to the start once their worst case no longer fits before the end; every tensor round-trips and
/// the wrap really happens.
fn arena_ring_fifo_across_micro_batches(ctx: GpuContext) {
    let codec = Codec::new(&ctx.device).unwrap();
    let n = 6 * 4096u64;
    let bytes = n * 2;
    let worst = bitsparse::Layout::new(DType::Bf16, n, Options::default()).unwrap().capacity_bytes();
    // Room for the worst case plus a little: sparse tensors (~1/4 of the worst case) fit several at a
    // time, so the ring has to wrap to keep going.
    let a = arena(&ctx, &codec, (worst + worst / 2).next_multiple_of(16));
    let mut live: std::collections::VecDeque<(Slot, Vec<u8>)> = Default::default();
    let mut wrapped = false;
    let mut last_base = 0u32;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    a.reset(&mut enc);
    submit(&ctx, enc);
    for step in 0..12u64 {
        let d = cpu::synthetic_relu2(n as usize, 0.176, DType::Bf16, 1000 + step);
        let ib = buf(&ctx, &d);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let s = a.push(&mut enc, BufferRange::new(&ib, 0, bytes), DType::Bf16, n, Options::default()).unwrap();
        submit(&ctx, enc);
        let w: Vec<u32> = bytemuck::pod_collect_to_vec(&read(&ctx, a.ctrl_buffer(), 4096));
        a.read_status(&ctx.queue).unwrap().check().unwrap_or_else(|e| panic!("step {step}: {e}"));
        // The new slot's base (ids are reused; find it by scanning the descriptors for the newest head).
        let base = w[0] as i64; // head after the push
        if (base as u32) < last_base {
            wrapped = true;
        }
        last_base = base as u32;
        live.push_back((s, d));
        // Keep at most three micro-batches alive: release the oldest, after checking it round-trips.
        if live.len() == 3 {
            let (old, data) = live.pop_front().unwrap();
            let out = canary(&ctx, bytes);
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            a.decompress(&mut enc, &old, BufferRange::new(&out, 0, bytes)).unwrap();
            a.release_front(&mut enc, old).unwrap();
            submit(&ctx, enc);
            assert!(read(&ctx, &out, bytes) == data, "step {step}: the oldest micro-batch did not round-trip");
        }
    }
    assert!(wrapped, "the ring never wrapped: the test did not exercise what it is for");
    // LIFO order is refused by release_front and FIFO order by pop.
    let (newest, _) = live.pop_back().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    assert!(matches!(a.release_front(&mut enc, newest.clone()), Err(Error::InvalidArgument(_))));
    let (oldest, _) = live.pop_front().unwrap();
    assert!(matches!(a.pop(&mut enc, oldest), Err(Error::InvalidArgument(_))));
}

/// A ring whose next tensor wraps to the arena's start and does not fit before the oldest live tensor:
/// the slot's limit then lies inside the buffer, just before live data, so a tile that writes past it
/// (the per-tile `fits` test of compress.wgsl) would damage that tensor. The wrapped push (a plain
/// compress of BF16 through the staging and the direct stores and of F32, and the BF16 fused forward)
/// must be flagged, write nothing at or past its limit, and leave the live tensor decoding bit-exactly.
/// (Where the limit is the buffer's end, as in `arena_overflow_is_detected_and_contained`, a write past
/// it is dropped by the bounds checks and no test could see it.)
fn arena_ring_overflow_spares_the_live_tensor(ctx: GpuContext) {
    let n = 6 * 4096u64;
    let cases = [
        (DType::Bf16, Staging::Auto, false),
        (DType::Bf16, Staging::Auto, true),
        (DType::Bf16, Staging::Direct, false),
        (DType::F32, Staging::Auto, false),
    ];
    for (dtype, staging, fused) in cases {
        let codec =
            Codec::with_config(&ctx.device, CodecConfig { staging: Some(staging), ..Default::default() }).unwrap();
        let bytes = n * dtype.bytes();
        let worst = bitsparse::Layout::new(dtype, n, Options::default()).unwrap().capacity_bytes();
        // A (ρ = 0.7, about 0.7 of the worst case) and B (ρ = 0.05) are pushed; A is released, so the
        // dense C no longer fits after B and goes to the start, limited to just before B.
        let a = arena(&ctx, &codec, (worst + worst / 4).next_multiple_of(16));
        let da = cpu::synthetic_relu2(n as usize, 0.7, dtype, 11);
        let db = cpu::synthetic_relu2(n as usize, 0.05, dtype, 12);
        let dc = cpu::synthetic_relu2(n as usize, 1.0, dtype, 13);
        let (ia, ib, ic) = (buf(&ctx, &da), buf(&ctx, &db), buf(&ctx, &dc));
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        a.reset(&mut enc);
        let sa = a.push(&mut enc, BufferRange::new(&ia, 0, bytes), dtype, n, Options::default()).unwrap();
        let sb = a.push(&mut enc, BufferRange::new(&ib, 0, bytes), dtype, n, Options::default()).unwrap();
        a.release_front(&mut enc, sa).unwrap();
        submit(&ctx, enc);
        a.read_status(&ctx.queue).unwrap().check().unwrap();
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&read(&ctx, a.ctrl_buffer(), 64));
        let (head, tail) = (words[ctrl::HEAD as usize] as u64, words[ctrl::TAIL as usize] as u64);
        let what = format!("{dtype} {staging:?} {}", if fused { "fused forward" } else { "push" });
        assert!(tail > 0 && head > tail, "{what}: A released, B live: head {head}, tail {tail}");
        let before = read(&ctx, a.buffer(), a.capacity_bytes());

        let a_out = canary(&ctx, bytes);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let sc = if fused {
            let c = BufferRange::new(&ic, 0, bytes);
            a.fused_forward(&mut enc, c, n, Activation::Relu, Options::default(), BufferRange::new(&a_out, 0, bytes))
        } else {
            a.push(&mut enc, BufferRange::new(&ic, 0, bytes), dtype, n, Options::default())
        }
        .unwrap();
        let (ob, oc) = (canary(&ctx, bytes), canary(&ctx, bytes));
        a.decompress(&mut enc, &sb, BufferRange::new(&ob, 0, bytes)).unwrap();
        a.decompress(&mut enc, &sc, BufferRange::new(&oc, 0, bytes)).unwrap();
        submit(&ctx, enc);
        let st = a.read_status(&ctx.queue).unwrap();
        assert!(matches!(st.check(), Err(Error::ArenaOverflow { .. })), "{what}: expected ArenaOverflow, got {st:?}");
        let (sc_status, _) = a.read_slot(&ctx.queue, &sc).unwrap();
        assert_eq!(sc_status & status::OVERFLOW, status::OVERFLOW, "{what}: overflow bit on the wrapped slot");
        // The wrapped slot may write below the ring's tail less its gap (arena.wgsl:reserve).
        let limit = ((tail - ctrl::RING_GAP) * 4) as usize;
        let after = read(&ctx, a.buffer(), a.capacity_bytes());
        assert!(after[limit..] == before[limit..], "{what}: the overflowing push wrote at or past its limit");
        assert!(read(&ctx, &ob, bytes) == db, "{what}: the live tensor did not round-trip");
        assert_eq!(read(&ctx, &oc, bytes), vec![0xA5u8; bytes as usize], "{what}: the overflowed decompress wrote");
    }
}
