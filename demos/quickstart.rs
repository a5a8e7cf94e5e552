//! The main job: compress a synthetic ReLU² activation tensor on the default adapter, decompress it,
//! check the round trip is bit-exact, and report the ratio against the entropy bound and the throughput.
//!
//! `cargo run --release --example quickstart [-- --elements N --density RHO --dtype bf16|f16|e4m3|e5m2 --sign-pack]`

use std::time::Instant;

use bitsparse::format::entropy_bound_bits;
use bitsparse::host::context::{AdapterChoice, GpuContext};
use bitsparse::host::sync;
use bitsparse::{cpu, BufferRange, Codec, DType, Options};
use wgpu::util::DeviceExt;

struct Args {
    elements: usize,
    density: f64,
    dtype: DType,
    sign_pack: bool,
    reps: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { elements: 3072 * 4096, density: 0.176, dtype: DType::Bf16, sign_pack: false, reps: 5 };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--elements" => a.elements = val()?.parse().map_err(|e| format!("--elements: {e}"))?,
            "--density" => a.density = val()?.parse().map_err(|e| format!("--density: {e}"))?,
            "--dtype" => a.dtype = val()?.parse()?,
            "--reps" => a.reps = val()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--sign-pack" => a.sign_pack = true,
            "-h" | "--help" => {
                println!(
                    "quickstart: a synthetic ReLU² tensor compressed and decompressed on the default adapter, \
                     checked bit-exact\n\nOptions: --elements N (default 12582912), --density F (0.176), \
                     --dtype {{bf16,f16,e4m3,e5m2}} (bf16), --sign-pack, --reps N (5)"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other} (see --help)")),
        }
    }
    Ok(a)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let ctx = GpuContext::new(&AdapterChoice::default())?;
    let codec = Codec::new(&ctx.device)?;
    let (device, queue) = (&ctx.device, &ctx.queue);
    println!("adapter   : {} — {} path", ctx.describe(), codec.path().name());

    let n = args.elements as u64;
    let dtype = args.dtype;
    let options = Options { sign_pack: args.sign_pack };
    let data = cpu::synthetic_relu2(args.elements, args.density, dtype, 42);
    let nonzeros = cpu::count_nonzeros(&data, dtype);
    let density = nonzeros as f64 / n.max(1) as f64;
    println!(
        "tensor    : {n} {dtype} elements of relu(z)², {:.1}% nonzero ({:.1} MB dense)",
        density * 100.0,
        data.len() as f64 / 1e6
    );

    // GPU-resident buffers, as in a trainer: the codec only records into our encoder.
    let mut padded = data.clone();
    padded.resize(data.len().div_ceil(4) * 4, 0);
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("quickstart.input"),
        contents: &padded,
        usage: wgpu::BufferUsages::STORAGE,
    });
    let cap = codec.output_capacity(dtype, n, options)?;
    let stream = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("quickstart.stream"),
        size: cap.div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("quickstart.output"),
        size: padded.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });

    let time = |f: &dyn Fn(&mut wgpu::CommandEncoder)| -> Result<f64, bitsparse::Error> {
        let mut best = f64::INFINITY;
        for _ in 0..args.reps.max(1) {
            let mut enc = device.create_command_encoder(&Default::default());
            f(&mut enc);
            let t = Instant::now();
            sync::submit(queue, [enc.finish()]);
            sync::wait_idle(device)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let in_range = BufferRange::new(&input, 0, data.len() as u64);
    let out_range = BufferRange::new(&stream, 0, cap);
    let mut enc = device.create_command_encoder(&Default::default());
    let compressed = codec.compress(&mut enc, in_range, dtype, n, options, out_range)?;
    sync::submit(queue, [enc.finish()]);
    let t_c = time(&|enc| {
        let _ = codec.compress(enc, in_range, dtype, n, options, out_range);
    })?;
    let t_d = time(&|enc| {
        let _ = codec.decompress(enc, &compressed, BufferRange::new(&output, 0, data.len() as u64));
    })?;

    let header = bitsparse::host::read_header(device, queue, &compressed)?;
    bitsparse::host::check_status(&header, &compressed.layout)?;
    let back = sync::read_buffer(device, queue, &output, 0, data.len() as u64)?;
    let exact = back == data;
    // The GPU stream must also be what the CPU reference writes, byte for byte.
    let gpu_stream = bitsparse::host::read_compressed(device, queue, &compressed)?;
    let same_bytes = gpu_stream == cpu::compress(&data, dtype, options)?;

    let stored = compressed.layout.compact_bytes(header.value_words as u64);
    let ratio = data.len() as f64 / stored as f64;
    let achieved_bits = stored as f64 * 8.0 / n as f64;
    let bound_bits = entropy_bound_bits(density, dtype, args.sign_pack);
    let dense_bits = dtype.bits() as f64;
    let moved = data.len() as f64 + (compressed.layout.mask_words * 4 + header.value_words as u64 * 4) as f64;
    println!("stored    : {stored} bytes — ratio {ratio:.3}× ({achieved_bits:.3} bits/element)");
    println!(
        "bound     : {bound_bits:.3} bits/element (H(ρ) + {}·ρ) = ratio {:.3}× — {:.1}% of the bound reached",
        dtype.value_width(args.sign_pack),
        dense_bits / bound_bits,
        100.0 * bound_bits / achieved_bits
    );
    println!(
        "compress  : {:.3} ms, {:.2} GB/s (bytes that must move, wall clock incl. submit)",
        t_c * 1e3,
        moved / t_c / 1e9
    );
    println!("decompress: {:.3} ms, {:.2} GB/s", t_d * 1e3, moved / t_d / 1e9);
    println!(
        "round trip: {}",
        if exact && same_bytes { "bit-exact (and GPU bytes == CPU reference bytes)" } else { "MISMATCH" }
    );
    if !(exact && same_bytes) {
        return Err("round trip was not bit-exact".into());
    }
    Ok(())
}
