//! The adapter's bandwidth by direction: copy (read + write), fill (write only), read (read only),
//! as one JSON line. What `docs/PERFORMANCE.md` uses to say which kernels are bound by which direction.
//!
//! `cargo run --release --example roofline -- [MiB] [reps]` (default 384 MiB = 201M BF16 elements, 20
//! repetitions); the adapter follows `WGPU_ADAPTER_NAME` / `WGPU_BACKEND` like the CLI.

use bitsparse::host::context::{AdapterChoice, GpuContext};
use bitsparse_bench::roofline;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mib: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(384);
    let reps: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let ctx = GpuContext::new(&AdapterChoice::default())?;
    let r = roofline::measure(&ctx.device, &ctx.queue, mib << 20, reps, 0.3)?;
    let mut line = serde_json::to_value(&r)?;
    line["adapter"] = serde_json::Value::String(ctx.describe());
    println!("{line}");
    Ok(())
}
