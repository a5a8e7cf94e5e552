//! GPU timestamps around recorded work.
//!
//! Why timestamps and not wall-clock time: a submit-and-wait round trip costs tens of microseconds, as much
//! as a whole compress of a small tensor on a fast GPU. Timestamps measure only the device's work.
//!
//! Two ways to write one, whichever the device has: `CommandEncoder::write_timestamp`
//! (`TIMESTAMP_QUERY_INSIDE_ENCODERS`), or an empty compute pass whose beginning-of-pass timestamp is
//! written (`TIMESTAMP_QUERY` alone). On Vulkan both become `vkCmdWriteTimestamp` at bottom-of-pipe: the
//! value is taken once every earlier command has finished.

use bitsparse::error::{Error, Result};
use bitsparse::host::sync;

/// How timestamps are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StampMode {
    /// `CommandEncoder::write_timestamp`.
    Encoder,
    /// An empty compute pass with a beginning-of-pass timestamp.
    EmptyPass,
}

impl StampMode {
    /// The mode a device supports, or `Error::Unsupported` without timestamp queries.
    pub fn for_device(device: &wgpu::Device) -> Result<StampMode> {
        let f = device.features();
        if f.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS) {
            Ok(StampMode::Encoder)
        } else if f.contains(wgpu::Features::TIMESTAMP_QUERY) {
            Ok(StampMode::EmptyPass)
        } else {
            Err(Error::Unsupported(
                "the adapter has no timestamp queries (Features::TIMESTAMP_QUERY): GPU times cannot be measured".into(),
            ))
        }
    }
}

/// A set of timestamp slots, written in recording order and read back once.
pub struct Timer {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    capacity: u32,
    next: u32,
    mode: StampMode,
}

impl Timer {
    /// A timer of `capacity` slots (at most `wgpu::QUERY_SET_MAX_QUERIES`).
    pub fn new(device: &wgpu::Device, capacity: u32, mode: StampMode) -> Result<Timer> {
        if capacity == 0 || capacity > wgpu::QUERY_SET_MAX_QUERIES {
            return Err(Error::InvalidArgument(format!("timer of {capacity} timestamps")));
        }
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("bitsparse.bench.timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: capacity,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.bench.timestamps"),
            size: capacity as u64 * wgpu::QUERY_SIZE as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Ok(Timer { set, resolve, capacity, next: 0, mode })
    }

    /// Slots still free.
    pub fn remaining(&self) -> u32 {
        self.capacity - self.next
    }

    /// Records a timestamp; returns its slot.
    pub fn stamp(&mut self, encoder: &mut wgpu::CommandEncoder) -> Result<u32> {
        if self.next >= self.capacity {
            return Err(Error::InvalidArgument("timer out of timestamp slots".into()));
        }
        let i = self.next;
        self.next += 1;
        match self.mode {
            StampMode::Encoder => encoder.write_timestamp(&self.set, i),
            StampMode::EmptyPass => {
                let pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("bitsparse.bench.stamp"),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &self.set,
                        beginning_of_pass_write_index: Some(i),
                        end_of_pass_write_index: None,
                    }),
                });
                drop(pass);
            }
        }
        Ok(i)
    }

    /// Resolves and reads every slot written so far, in nanoseconds (submits and waits: call it after
    /// the timed work, never inside it).
    pub fn read_ns(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Vec<f64>> {
        if self.next == 0 {
            return Ok(Vec::new());
        }
        let mut enc =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench.resolve") });
        enc.resolve_query_set(&self.set, 0..self.next, &self.resolve, 0);
        sync::submit(queue, [enc.finish()]);
        let bytes = sync::read_buffer(device, queue, &self.resolve, 0, self.next as u64 * wgpu::QUERY_SIZE as u64)?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes);
        let period = queue.get_timestamp_period() as f64;
        Ok(ticks.into_iter().map(|t| t as f64 * period).collect())
    }
}

/// The duration between two slots in milliseconds (0 if the clock went backwards, which some drivers do
/// across a clock change).
pub fn span_ms(ns: &[f64], start: u32, end: u32) -> f64 {
    let (a, b) = (ns[start as usize], ns[end as usize]);
    ((b - a) / 1e6).max(0.0)
}

/// The median of `xs` (mean of the middle two for an even count); NaN for an empty slice.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
