//! Activation-cache bytes per token of one ReLU² FFN block (d = 768, hidden 3072), dense vs BitSparse,
//! from the arena's own accounting: the fused forward pushes relu(z) of `tokens × 3072` pre-activations
//! at density ρ into the arena, and the arena's head (header, tile table, mask, values, padding, slack
//! between tensors) divided by the tokens is what BitSparse keeps, next to the dense baselines.
//!
//! `cargo run --release --example ffn_cache_bytes [-- --tokens N --density RHO --d D]`

use bitsparse::arena::{Arena, ArenaConfig};
use bitsparse::host::context::{AdapterChoice, GpuContext};
use bitsparse::Activation;
use bitsparse::{cpu, BufferRange, Codec, DType, Options};
use wgpu::util::DeviceExt;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut tokens = 4096usize;
    let mut density = 0.176f64;
    let mut d = 768usize;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        match k.as_str() {
            "--tokens" => tokens = v.parse()?,
            "--density" => density = v.parse()?,
            "--d" => d = v.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let hidden = 4 * d;
    let n = tokens * hidden;
    let ctx = GpuContext::new(&AdapterChoice::default())?;
    let codec = Codec::new(&ctx.device)?;
    // z: the positive part is a synthetic relu(z) at the wanted density, the rest is negative.
    let r = cpu::synthetic_relu2(n, density, DType::Bf16, 7);
    let z: Vec<u8> = r
        .chunks_exact(2)
        .enumerate()
        .flat_map(|(i, c)| {
            let v = u16::from_le_bytes([c[0], c[1]]);
            let v = if v == 0 { 0xbf80u16 ^ ((i as u16) & 0x7f) } else { v }; // about -1.0
            v.to_le_bytes()
        })
        .collect();
    let bytes = z.len() as u64;
    let zb = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("z"),
        contents: &z,
        usage: wgpu::BufferUsages::STORAGE,
    });
    let ab = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("a"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let cap = codec.output_capacity(DType::Bf16, n as u64, Options::default())?.next_multiple_of(16);
    let arena =
        Arena::new(&codec, ArenaConfig::new(cap.min(ctx.device.limits().max_storage_buffer_binding_size / 16 * 16)))?;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    arena.reset(&mut enc);
    let slot = arena.fused_forward(
        &mut enc,
        BufferRange::new(&zb, 0, bytes),
        n as u64,
        Activation::Relu2,
        Options::default(),
        BufferRange::new(&ab, 0, bytes),
    )?;
    bitsparse::host::sync::submit(&ctx.queue, [enc.finish()]);
    let status = arena.read_status(&ctx.queue)?;
    status.check()?;
    let (_, slot_bytes) = arena.read_slot(&ctx.queue, &slot)?;
    let measured = cpu::count_nonzeros(&r, DType::Bf16) as f64 / n as f64;

    let x = 2 * d; // the block input, BF16
    let dense_baseline = x + 2 * hidden + 2 * hidden; // x, r, a (what autograd keeps)
    let dense_minimal = x + 2 * hidden; // x, r
    let bitsparse = x as f64 + status.used_bytes as f64 / tokens as f64;
    println!("adapter: {} ({} path)", ctx.describe(), codec.path().name());
    println!("FFN block d = {d}, hidden = {hidden}, ReLU², {tokens} tokens, relu(z) density {measured:.4}");
    println!("dense baseline (x + r + a): {dense_baseline} B/token");
    println!("dense minimal  (x + r)    : {dense_minimal} B/token");
    println!(
        "BitSparse (x + arena)     : {bitsparse:.1} B/token (arena head {} B for {tokens} tokens; slot {} B)",
        status.used_bytes, slot_bytes
    );
    println!(
        "saving: {:.1}% of the dense baseline, {:.1}% of the minimal dense cache",
        100.0 * (1.0 - bitsparse / dense_baseline as f64),
        100.0 * (1.0 - bitsparse / dense_minimal as f64)
    );
    Ok(())
}
