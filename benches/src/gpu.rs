//! Device-side helpers of the harness: buffers with a guard word, and the fence that keeps timed ops
//! from overlapping.
//!
//! Why a fence: two dispatches that share no written buffer get no barrier between them, and a GPU may
//! then run the second while the first drains, so a timestamp between them would cut the overlap out of
//! both measurements. Every benchmark buffer has a guard word past its used bytes; clearing the guard words
//! of all the batch's buffers between two timed ops makes wgpu insert a barrier (storage use → copy
//! destination → storage use), which on Vulkan is an execution dependency on all earlier compute work.

use std::time::Instant;

use bitsparse::error::{Error, Result};
use bitsparse::host::sync;

/// Bytes after the used part of every benchmark buffer: the guard word, kept 16-byte aligned so vec4
/// shaders can cover the used part.
pub const GUARD: u64 = 16;

/// Usage of every benchmark storage buffer.
pub fn usage() -> wgpu::BufferUsages {
    wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC
}

/// A zeroed buffer of `used` bytes plus the guard.
pub fn buffer(device: &wgpu::Device, label: &str, used: u64) -> Result<wgpu::Buffer> {
    let size = used.div_ceil(16) * 16 + GUARD;
    check_size(device, label, size)?;
    Ok(device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: usage(),
        mapped_at_creation: false,
    }))
}

/// A buffer holding `data`, plus the guard (written through a mapping at creation, so a 400 MB
/// tensor is not copied once more on the host).
pub fn buffer_with(device: &wgpu::Device, label: &str, data: &[u8]) -> Result<wgpu::Buffer> {
    let size = (data.len() as u64).div_ceil(16) * 16 + GUARD;
    check_size(device, label, size)?;
    let buf = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: usage(),
        mapped_at_creation: true,
    });
    if !data.is_empty() {
        let mapped = (data.len() as u64).div_ceil(4) * 4;
        let mut view = buf.slice(..mapped).get_mapped_range_mut().map_err(|e| Error::Wgpu(format!("{e:?}")))?;
        view.slice(..data.len()).copy_from_slice(data);
    }
    buf.unmap();
    Ok(buf)
}

/// Refuses a buffer larger than the device allows (the runner skips such sizes before getting here).
pub fn check_size(device: &wgpu::Device, label: &str, size: u64) -> Result<()> {
    let max = device.limits().max_buffer_size;
    if size > max {
        return Err(Error::Unsupported(format!("{label}: {size} bytes exceed max_buffer_size {max}")));
    }
    Ok(())
}

/// Records the fence: clears the guard word of each buffer. On Vulkan the barrier wgpu inserts is an
/// execution dependency on all earlier compute work, so fencing the buffers an op reads or writes is
/// enough even where the op also writes buffers without a guard (an arena).
pub fn fence(encoder: &mut wgpu::CommandEncoder, buffers: &[&wgpu::Buffer]) {
    for b in buffers {
        encoder.clear_buffer(b, b.size() - 4, Some(4));
    }
}

/// Brings the clocks up before timing: a GPU idles at a fraction of its clock and takes a while to
/// ramp. Submits what `record` records and waits for it, again and again, for `seconds` (not at all
/// for 0).
pub fn spin_up(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    seconds: f64,
    mut record: impl FnMut(&mut wgpu::CommandEncoder) -> Result<()>,
) -> Result<()> {
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < seconds {
        let mut enc =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench.spin_up") });
        record(&mut enc)?;
        sync::submit(queue, [enc.finish()]);
        sync::wait_idle(device)?;
    }
    Ok(())
}
