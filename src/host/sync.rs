//! The one place where the library synchronises with the device: `submit`, `poll`, `map_async` and
//! `map_buffer_on_submit` go through here and are counted.
//!
//! Why: the training path must never wait on the GPU. Counting every host synchronisation in one module
//! makes that property testable (`no_host_sync_*` tests read [`host_syncs`] before and after a step), and a
//! source scan (`tests/gpu/no_host_sync.rs`) proves no other module calls these wgpu methods directly.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

static HOST_SYNCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD_SYNCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many host synchronisations the library has performed in this process.
pub fn host_syncs() -> u64 {
    HOST_SYNCS.load(Ordering::SeqCst)
}

/// How many host synchronisations the library has performed on the calling thread. A training step
/// is recorded on one thread, so this is the count to compare before and after it (other threads,
/// e.g. concurrently running tests, do not disturb it).
pub fn thread_host_syncs() -> u64 {
    THREAD_SYNCS.with(|c| c.get())
}

fn count() {
    HOST_SYNCS.fetch_add(1, Ordering::SeqCst);
    THREAD_SYNCS.with(|c| c.set(c.get() + 1));
}

/// Submits command buffers (counted).
pub fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(queue: &wgpu::Queue, cmds: I) -> wgpu::SubmissionIndex {
    count();
    queue.submit(cmds)
}

static ENQUEUES: AtomicU64 = AtomicU64::new(0);

/// How many [`enqueue`] calls the library has made in this process.
pub fn enqueues() -> u64 {
    ENQUEUES.load(Ordering::SeqCst)
}

/// Submits command buffers that must run in queue order between another library's submissions (the
/// Burn integration: Burn flushes its work, then ours follows on the same queue). Counted by
/// [`enqueues`], not as a host synchronisation: nothing here waits, and a step records one per op, so the
/// `no_host_sync_burn_*` tests count waits ([`thread_host_syncs`]) and report these separately.
pub fn enqueue<I: IntoIterator<Item = wgpu::CommandBuffer>>(queue: &wgpu::Queue, cmds: I) -> wgpu::SubmissionIndex {
    ENQUEUES.fetch_add(1, Ordering::SeqCst);
    queue.submit(cmds)
}

/// Blocks until all submitted work is done (counted).
pub fn wait_idle(device: &wgpu::Device) -> Result<()> {
    count();
    device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| Error::Sync(e.to_string()))
}

/// Polls without blocking (counted): drives pending `map_async` callbacks.
pub fn poll_nonblocking(device: &wgpu::Device) -> Result<()> {
    count();
    device.poll(wgpu::PollType::Poll).map(|_| ()).map_err(|e| Error::Sync(e.to_string()))
}

/// Starts an asynchronous map of `slice` for reading (counted). The callback runs during a later poll.
pub fn map_read_async(
    slice: &wgpu::BufferSlice<'_>,
    callback: impl FnOnce(std::result::Result<(), wgpu::BufferAsyncError>) + wgpu::WasmNotSend + 'static,
) {
    count();
    slice.map_async(wgpu::MapMode::Read, callback);
}

/// Waits for the device's submitted work so that reads started with [`map_read_async`] complete and
/// their callbacks run. Not counted again: it collects a read already counted when it was started
/// (`docs/CONVENTIONS.md`: an asynchronous status read, issued and collected later, counts as one). Call
/// it only to collect such a read.
pub fn wait_mapped(device: &wgpu::Device) -> Result<()> {
    device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| Error::Sync(e.to_string()))
}

/// Reads `size` bytes at `offset` of a buffer with `COPY_SRC` usage: copies them into a staging buffer,
/// submits, waits, maps. For tests, the CLI and tools, never for the training path.
pub fn read_buffer(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    offset: u64,
    size: u64,
) -> Result<Vec<u8>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let padded = size.div_ceil(4) * 4;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bitsparse.readback"),
        size: padded,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.readback") });
    enc.copy_buffer_to_buffer(buffer, offset, &staging, 0, padded);
    submit(queue, [enc.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    map_read_async(&slice, move |r| {
        let _ = tx.send(r);
    });
    wait_idle(device)?;
    rx.recv().map_err(|e| Error::Sync(e.to_string()))?.map_err(|e| Error::Sync(e.to_string()))?;
    let data = slice.get_mapped_range().map_err(|e| Error::Sync(format!("{e:?}")))?;
    let mut out = data[..size as usize].to_vec();
    out.truncate(size as usize);
    drop(data);
    staging.unmap();
    Ok(out)
}
