//! [`BitSparse`]: the codec and arena of one Burn device, and the step protocol around them.

use std::sync::{Arc, Mutex, MutexGuard};

use bitsparse::arena::{Arena, ArenaConfig, ArenaSizer, ArenaStatus};
use bitsparse::host::sync;
use bitsparse::{Codec, DType};

use crate::error::{Error, Result};

/// How a [`BitSparse`] context is set up.
#[derive(Copy, Clone, Debug)]
pub struct BitSparseConfig {
    /// Arena capacity in bytes (a multiple of 16, at most one storage binding). [`BitSparse::grow`]
    /// replaces it after an overflow.
    pub arena_bytes: u64,
    /// Live compressed tensors per step (one per MLP block per micro-batch).
    pub max_slots: u32,
    /// Store values without their sign bit (relu(z) has none): 31-bit F32 / 15-bit F16 values.
    pub sign_pack: bool,
}

impl Default for BitSparseConfig {
    fn default() -> Self {
        BitSparseConfig { arena_bytes: 64 << 20, max_slots: 1024, sign_pack: true }
    }
}

impl BitSparseConfig {
    /// The default configuration with an arena of `bytes` (rounded up to a multiple of 16).
    pub fn with_arena_bytes(bytes: u64) -> Self {
        BitSparseConfig { arena_bytes: bytes.max(16).next_multiple_of(16), ..Default::default() }
    }
}

/// What one step used, from its status read ([`BitSparse::finish_step`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Arena bytes the step's compressed activations took.
    pub used_bytes: u64,
    /// The arena's capacity.
    pub capacity_bytes: u64,
    /// The largest use seen since the arena was made.
    pub high_water_bytes: u64,
    /// Compressed tensors the step pushed.
    pub tensors: u64,
    /// Dense bytes those tensors would have taken.
    pub dense_bytes: u64,
}

pub(crate) struct Inner {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) codec: Codec,
    pub(crate) arena: Mutex<Arena>,
    pub(crate) config: BitSparseConfig,
    state: Mutex<StepState>,
}

#[derive(Default)]
struct StepState {
    /// The first error an op met since the step began (ops cannot return errors through Burn).
    error: Option<Error>,
    sizer: ArenaSizer,
    tensors: u64,
    dense_bytes: u64,
}

/// The BitSparse state of one Burn wgpu device: its codec, its arena, and the errors its ops met.
/// Cheap to clone (shared). Nothing is process-global: make one per device, from the handles Burn
/// opened the device with.
///
/// The step protocol: [`BitSparse::begin_step`] before the forward (empties the arena, no wait);
/// forward and backward record and submit without waiting; [`BitSparse::finish_step`] between the
/// backward and the optimizer step does the step's one status read and returns
/// [`Error::ArenaOverflow`] (or an op's error) before any gradient is applied; after an overflow,
/// [`BitSparse::grow`] and re-run the step.
#[derive(Clone)]
pub struct BitSparse {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for BitSparse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BitSparse").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl BitSparse {
    /// A context on the wgpu device and queue Burn runs on (`Device::wgpu_options().init_with_setup()`
    /// returns them). Builds the codec, the arena and the F32 and F16 fused kernels now, so a step
    /// builds no pipeline.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, config: BitSparseConfig) -> Result<BitSparse> {
        let codec = Codec::new(device)?;
        let arena = Self::make_arena(&codec, &config, config.arena_bytes)?;
        for dtype in [DType::F32, DType::F16] {
            // F16 needs SHADER_F16; a device without it reports that when F16 is used.
            if let Err(e) = arena.prepare_fused(dtype) {
                if dtype == DType::F32 {
                    return Err(e.into());
                }
            }
        }
        Ok(BitSparse {
            inner: Arc::new(Inner {
                device: device.clone(),
                queue: queue.clone(),
                codec,
                arena: Mutex::new(arena),
                config,
                state: Mutex::new(StepState::default()),
            }),
        })
    }

    fn make_arena(codec: &Codec, config: &BitSparseConfig, bytes: u64) -> Result<Arena> {
        let cfg = ArenaConfig { capacity_bytes: bytes, max_slots: config.max_slots, max_gates: 1 };
        Ok(Arena::new(codec, cfg)?)
    }

    fn state(&self) -> MutexGuard<'_, StepState> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn arena(&self) -> MutexGuard<'_, Arena> {
        self.inner.arena.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The codec path (subgroup or portable) of this device.
    pub fn codec(&self) -> &Codec {
        &self.inner.codec
    }

    /// The configuration.
    pub fn config(&self) -> BitSparseConfig {
        self.inner.config
    }

    /// The arena's capacity now.
    pub fn arena_capacity_bytes(&self) -> u64 {
        self.arena().capacity_bytes()
    }

    /// Records an op's error; the step then fails at [`BitSparse::finish_step`].
    pub(crate) fn fail(&self, e: Error) {
        let mut st = self.state();
        if st.error.is_none() {
            st.error = Some(e);
        }
    }

    pub(crate) fn count_push(&self, dense_bytes: u64) {
        let mut st = self.state();
        st.tensors += 1;
        st.dense_bytes += dense_bytes;
    }

    /// Starts a step: releases every compressed tensor of the previous one and clears its failure
    /// bits (recorded and submitted on the shared queue, no wait). Slots still held by a graph that
    /// was never run backward become invalid.
    pub fn begin_step(&self) {
        let arena = self.arena();
        let mut enc = self
            .inner
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.burn.begin_step") });
        arena.reset(&mut enc);
        sync::enqueue(&self.inner.queue, [enc.finish()]);
        let mut st = self.state();
        st.error = None;
        st.tensors = 0;
        st.dense_bytes = 0;
    }

    /// Ends a step between the backward and the optimizer step: flushes Burn's pending work on
    /// `device` (so every op of the step has run), reads the arena's status once (the step's one
    /// counted host synchronisation: it waits for the step's GPU work, as reading the loss would), and
    /// returns the step's use, or the first error: [`Error::ArenaOverflow`] when a compressed tensor
    /// did not fit — that step's gradients are wrong and must not be applied; [`BitSparse::grow`],
    /// then re-run the step.
    pub fn finish_step(&self, device: &burn::tensor::Device) -> Result<StepReport> {
        device.flush().map_err(|e| Error::Burn(format!("flushing the device: {e:?}")))?;
        let status = self.arena().read_status(&self.inner.queue)?;
        let mut st = self.state();
        st.sizer.observe(&status);
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        check(&status)?;
        Ok(StepReport {
            used_bytes: status.used_bytes,
            capacity_bytes: status.capacity_bytes,
            high_water_bytes: status.high_water_bytes,
            tensors: st.tensors,
            dense_bytes: st.dense_bytes,
        })
    }

    /// Replaces the arena by one of the capacity [`ArenaSizer`] recommends from what the steps so far
    /// used (at least double after an overflow); returns the new capacity. Call between steps.
    pub fn grow(&self) -> Result<u64> {
        let want = self.state().sizer.recommended_bytes();
        let limits = self.inner.device.limits();
        let max = (limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 16) * 16;
        let mut arena = self.arena();
        let bytes = want.min(max).max(arena.capacity_bytes());
        if bytes == arena.capacity_bytes() {
            return Err(Error::ArenaAtLimit { capacity: bytes });
        }
        *arena = Self::make_arena(&self.inner.codec, &self.inner.config, bytes)?;
        Ok(bytes)
    }
}

fn check(status: &ArenaStatus) -> Result<()> {
    status.check().map_err(Error::from)
}
