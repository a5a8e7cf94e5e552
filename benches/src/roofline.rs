//! The adapter's bandwidth split by direction: copy (read + write), fill (write only) and read (read
//! only), each a grid-stride WGSL kernel over the same bytes, timed with timestamp queries.
//!
//! Why: `copy_fraction` compares every op with the copy, which moves equal halves in each direction,
//! while the codec moves very uneven mixes (decompress at low density is almost all writes, compress
//! almost all reads). If one direction alone were slower than the copy's total rate, a kernel of that
//! mix could not reach the copy's rate; these figures say whether it can (docs/PERFORMANCE.md).

use serde::Serialize;

use super::copy::{CopyKernel, Traffic, FILL_SEED};
use super::gpu;
use super::timer::{median, span_ms, StampMode, Timer};
use bitsparse::error::{Error, Result};
use bitsparse::host::sync;

/// Medians over the timed repetitions, in GB/s of bytes moved (copy: read + written).
#[derive(Clone, Debug, Serialize)]
pub struct Roofline {
    /// Bytes each kernel covers.
    pub bytes: u64,
    /// Timed repetitions (after one warm-up round).
    pub reps: u32,
    /// Copy: 2 × `bytes` per run.
    pub copy_gbps: f64,
    /// Fill: `bytes` written per run.
    pub fill_gbps: f64,
    /// Read: `bytes` read per run.
    pub read_gbps: f64,
}

/// Times the three kernels over `bytes` bytes, interleaved in each of `reps` rounds, after `spin_up_s`
/// seconds of copies (clocks ramp up from idle).
pub fn measure(device: &wgpu::Device, queue: &wgpu::Queue, bytes: u64, reps: u32, spin_up_s: f64) -> Result<Roofline> {
    let kernel = CopyKernel::new(device)?;
    let src = gpu::buffer(device, "bitsparse.roofline.src", bytes)?;
    let dst = gpu::buffer(device, "bitsparse.roofline.dst", bytes)?;
    let prepared = kernel.prepare(device, &src, &dst, bytes)?;
    let encoder =
        || device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.roofline") });
    gpu::spin_up(device, queue, spin_up_s, |enc| {
        kernel.record(enc, &prepared);
        Ok(())
    })?;
    let kinds = [Traffic::Copy, Traffic::Fill, Traffic::Read];
    let reps = reps.max(1);
    let mut timer = Timer::new(device, (reps + 1) * 2 * kinds.len() as u32, StampMode::for_device(device)?)?;
    let mut spans = Vec::new();
    for _ in 0..=reps {
        let mut enc = encoder();
        for k in kinds {
            // The fence keeps each kernel from overlapping its neighbours (see `gpu::fence`).
            gpu::fence(&mut enc, &[&src, &dst]);
            let a = timer.stamp(&mut enc)?;
            kernel.record_traffic(&mut enc, &prepared, k);
            let b = timer.stamp(&mut enc)?;
            spans.push((k, a, b));
        }
        sync::submit(queue, [enc.finish()]);
    }
    let ns = timer.read_ns(device, queue)?;
    // Each round ends with the read, after the fill: `dst` holds the fill's pattern, or it did not run.
    let head = sync::read_buffer(device, queue, &dst, 0, 16)?;
    if head != bytemuck::cast_slice::<u32, u8>(&[0, FILL_SEED, FILL_SEED, FILL_SEED]) {
        return Err(Error::Wgpu("roofline: the fill kernel's output is not its pattern".into()));
    }
    let rate = |kind: Traffic, moved: f64| {
        // The first round is the warm-up.
        let ms: Vec<f64> = spans.iter().filter(|s| s.0 == kind).skip(1).map(|&(_, a, b)| span_ms(&ns, a, b)).collect();
        moved / (median(&ms) * 1e-3) / 1e9
    };
    let b = prepared.bytes as f64;
    Ok(Roofline {
        bytes: prepared.bytes,
        reps,
        copy_gbps: rate(Traffic::Copy, 2.0 * b),
        fill_gbps: rate(Traffic::Fill, b),
        read_gbps: rate(Traffic::Read, b),
    })
}
