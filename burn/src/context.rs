//! [`BitSparse`]: the codec and arena of each Burn device, and the step protocol around them.

use std::sync::{Arc, Mutex, MutexGuard};

use bitsparse::arena::{Arena, ArenaConfig, ArenaSizer, StatusRequest};
use bitsparse::host::sync;
use bitsparse::{Activation, Codec, DType, TileOrder};
use burn::backend::DispatchDevice;
use burn::tensor::Device;
use burn_cubecl::cubecl::device_handle::DeviceHandle;
use burn_cubecl::cubecl::wgpu::{AutoCompiler, WgpuServer};
use burn_cubecl::CubeDevice;

use crate::error::{Error, Result};

/// How a [`BitSparse`] context is set up.
#[derive(Copy, Clone, Debug)]
pub struct BitSparseConfig {
    /// Arena capacity in bytes per device (a multiple of 16, at most one storage binding).
    /// [`BitSparse::grow`] replaces it after an overflow.
    pub arena_bytes: u64,
    /// Live compressed tensors per step and device (one per MLP block per micro-batch).
    pub max_slots: u32,
    /// Store values without their sign bit (relu(z) has none): 31-bit F32 / 15-bit F16 values.
    pub sign_pack: bool,
    /// How the fused forward's tiles claim their place in the arena: unordered (one atomic per tile,
    /// no chain; the default) or ordered (deterministic stream bytes; the decoded activations and so
    /// every gradient are the same either way).
    pub tile_order: TileOrder,
}

impl Default for BitSparseConfig {
    fn default() -> Self {
        BitSparseConfig { arena_bytes: 64 << 20, max_slots: 1024, sign_pack: true, tile_order: TileOrder::Unordered }
    }
}

impl BitSparseConfig {
    /// The default configuration with an arena of `bytes` (rounded up to a multiple of 16).
    pub fn with_arena_bytes(bytes: u64) -> Self {
        BitSparseConfig { arena_bytes: bytes.max(16).next_multiple_of(16), ..Default::default() }
    }
}

/// What one step used on one device, from its status read ([`BitSparse::finish_step`]).
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
    /// Wall-clock time the step's BitSparse ops spent on the host (flushing Burn's stream, looking up the
    /// buffers behind tensors, recording and submitting), in nanoseconds: what the ops add to a step that
    /// waits on its host side.
    pub op_host_ns: u64,
    /// Time the step's BitSparse ops spent on CubeCL's server thread of the device (flushing Burn's
    /// stream, buffer lookups, recording and submitting), in nanoseconds. That thread also records
    /// Burn's own kernels, so this is added to its work, not to the training thread's.
    pub op_server_ns: u64,
}

/// CubeCL's server of a Burn wgpu device: the one thread that records and submits its work.
pub(crate) type Server = WgpuServer<AutoCompiler>;

/// The state of one device: its wgpu handles, codec, arena, and what its ops met this step.
pub(crate) struct DeviceCtx {
    pub(crate) cube: CubeDevice,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) codec: Codec,
    /// The device's CubeCL server thread: the ops run there, in order with Burn's work, unwaited.
    pub(crate) server: DeviceHandle<Server>,
    pub(crate) arena: Mutex<Arena>,
    pub(crate) config: BitSparseConfig,
    /// Whether Burn's fused F16 backward on this device rounds g·r to F16 before doubling it
    /// ([`f16_product_rounded`]): then the F16 ReLU² backward runs as `Activation::Relu2Stepwise`.
    pub(crate) f16_stepwise: bool,
    state: Mutex<StepState>,
}

#[derive(Default)]
struct StepState {
    /// The first error an op met since the step began (ops cannot return errors through Burn).
    error: Option<Error>,
    sizer: ArenaSizer,
    /// The step's status read, started by [`BitSparse::request_status`] and collected by
    /// [`BitSparse::finish_step`].
    pending: Option<StatusRequest>,
    tensors: u64,
    dense_bytes: u64,
    host_ns: u64,
    server_ns: u64,
}

impl DeviceCtx {
    /// The activation the fused backward of a `dtype` tensor runs: ReLU² in F16 rounded as Burn's dense
    /// backward rounds it on this device (docs/FUSED.md), everything else as given.
    pub(crate) fn backward_activation(&self, act: Activation, dtype: DType) -> Activation {
        if act.squares() && dtype == DType::F16 && self.f16_stepwise {
            Activation::Relu2Stepwise
        } else {
            act
        }
    }

    fn state(&self) -> MutexGuard<'_, StepState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn arena(&self) -> MutexGuard<'_, Arena> {
        self.arena.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records an op's error; the step then fails at [`BitSparse::finish_step`].
    pub(crate) fn fail(&self, e: Error) {
        let mut st = self.state();
        if st.error.is_none() {
            st.error = Some(e);
        }
    }

    pub(crate) fn count_host_time(&self, d: std::time::Duration) {
        self.state().host_ns += d.as_nanos() as u64;
    }

    /// Queues `task` on the device's CubeCL server thread, after every task queued there before it,
    /// without waiting. CubeCL's `DeviceHandle::submit` hands a closure to that thread; it is not a GPU
    /// queue submission (the tasks' own GPU submits go through `bitsparse::host::sync::enqueue`, counted).
    pub(crate) fn on_server_thread(&self, task: impl FnOnce(&mut Server) + Send + 'static) {
        DeviceHandle::submit(&self.server, task)
    }

    pub(crate) fn count_server_time(&self, d: std::time::Duration) {
        self.state().server_ns += d.as_nanos() as u64;
    }

    pub(crate) fn count_push(&self, dense_bytes: u64) {
        let mut st = self.state();
        st.tensors += 1;
        st.dense_bytes += dense_bytes;
    }
}

/// The BitSparse state of the Burn wgpu devices a model trains on: per device a codec, an arena and the
/// errors its ops met. Cheap to clone (shared), so a module keeps one and its replicas on other devices
/// (Burn's data-parallel `fork`) find their own device's state through it. Nothing is process-global.
///
/// The step protocol, per device: [`BitSparse::begin_step`] before the forward (empties that device's
/// arena, no wait); forward and backward record and submit without waiting;
/// [`BitSparse::request_status`] right after the backward starts the step's one status read; the
/// optimizer step is recorded on copies of the model and optimizer; [`BitSparse::finish_step`] collects
/// the read and returns [`Error::ArenaOverflow`] (or an op's error) before that update is kept; after an
/// overflow, drop it, [`BitSparse::grow`] and re-run the step.
#[derive(Clone)]
pub struct BitSparse {
    devices: Arc<Mutex<Vec<Arc<DeviceCtx>>>>,
    config: BitSparseConfig,
}

impl std::fmt::Debug for BitSparse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.devices.lock().map(|d| d.len()).unwrap_or(0);
        f.debug_struct("BitSparse").field("config", &self.config).field("devices", &n).finish()
    }
}

/// How Burn's fused backward rounds F16 ReLU² on `device`, asked of Burn itself: for a = r * r it computes
/// t = g * r, dr = t + t in one fused element-wise kernel, and whether t is rounded to F16 before the sum
/// depends on the device's F16 arithmetic (lavapipe: not rounded, one rounding of 2·g·r; the H200, native
/// F16: rounded, as IEEE F16 arithmetic is). The two differ only where g·r is an F16 subnormal, so one
/// element decides: r = 2⁻¹², g = 1.375·2⁻¹², g·r = 1.375·2⁻²⁴ gives 3·2⁻²⁴ with one rounding and
/// 2·2⁻²⁴ with t rounded first (Burn's answer is compared with the CPU port of both). Runs once per device
/// when the context is made (one small autodiff step of Burn's and its read-back); anything but those two
/// answers is `Error::Unsupported`, since neither variant would then be Burn's arithmetic.
fn f16_product_rounded(device: &Device) -> Result<bool> {
    use bitsparse::cpu::act::grad_bits_f16;
    use burn::tensor::{f16, FloatDType, Tensor, TensorData};
    const R: u16 = 0x0c00;
    const G: u16 = 0x0d80;
    let dev = device.clone().autodiff();
    let one = |bits: u16| {
        Tensor::<1>::from_data(TensorData::new(vec![f16::from_bits(bits)], [1]), &dev).cast(FloatDType::F16)
    };
    let r = one(R).require_grad();
    let a = r.clone() * r.clone();
    let grads = (a * one(G)).sum().backward();
    let dr = r.grad(&grads).ok_or_else(|| Error::Unsupported("Burn gave the F16 probe no gradient".into()))?;
    let data = dr.into_data();
    let got = match data.as_bytes() {
        &[lo, hi] => u16::from_le_bytes([lo, hi]),
        other => return Err(Error::Unsupported(format!("Burn's F16 probe gradient is {} bytes, not 2", other.len()))),
    };
    if got == grad_bits_f16(R, G, Activation::Relu2) {
        Ok(false)
    } else if got == grad_bits_f16(R, G, Activation::Relu2Stepwise) {
        Ok(true)
    } else {
        Err(Error::Unsupported(format!(
            "Burn's F16 ReLU² backward on this device is neither of the roundings BitSparse knows (probe: {got:#06x})"
        )))
    }
}

fn cube_device(device: &Device) -> Result<CubeDevice> {
    match device.clone().inner().as_dispatch() {
        DispatchDevice::Cube(d) => Ok(d.clone()),
        #[allow(unreachable_patterns)]
        other => Err(Error::Unsupported(format!("BitSparse runs on Burn's wgpu devices, not {other:?}"))),
    }
}

impl BitSparse {
    /// A context for `device`, a Burn wgpu device, on the wgpu device and queue Burn opened it with
    /// (`Device::wgpu_options().init_with_setup()` returns them). Builds the codec, the arena and the F32
    /// and F16 fused kernels now, so a step builds no pipeline. More devices: [`BitSparse::add_device`].
    pub fn new(
        device: &Device,
        wgpu_device: &wgpu::Device,
        queue: &wgpu::Queue,
        config: BitSparseConfig,
    ) -> Result<Self> {
        let ctx = BitSparse { devices: Arc::new(Mutex::new(Vec::new())), config };
        ctx.add_device(device, wgpu_device, queue)?;
        Ok(ctx)
    }

    /// Adds another Burn wgpu device (data-parallel training), with its own codec and arena.
    pub fn add_device(&self, device: &Device, wgpu_device: &wgpu::Device, queue: &wgpu::Queue) -> Result<()> {
        let cube = cube_device(device)?;
        if self.lookup(&cube).is_ok() {
            return Err(Error::Unsupported(format!("{cube:?} already has a BitSparse context")));
        }
        let server = server_of(&cube)?;
        let codec = Codec::new(wgpu_device)?;
        let arena = make_arena(&codec, &self.config, self.config.arena_bytes)?;
        arena.prepare_fused(DType::F32)?;
        // F16 needs SHADER_F16; a device without it reports that when F16 is used.
        let f16_stepwise = arena.prepare_fused(DType::F16).is_ok() && f16_product_rounded(device)?;
        let ctx = DeviceCtx {
            cube,
            device: wgpu_device.clone(),
            queue: queue.clone(),
            codec,
            server,
            arena: Mutex::new(arena),
            config: self.config,
            f16_stepwise,
            state: Mutex::new(StepState::default()),
        };
        self.devices.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::new(ctx));
        Ok(())
    }

    /// The state of the device a tensor lives on.
    pub(crate) fn lookup(&self, cube: &CubeDevice) -> Result<Arc<DeviceCtx>> {
        let devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        devices.iter().find(|d| d.cube == *cube).cloned().ok_or_else(|| {
            Error::Unsupported(format!("{cube:?} has no BitSparse context (BitSparse::add_device registers one)"))
        })
    }

    /// An op's error where it cannot be tied to a device: every device's step fails.
    pub(crate) fn fail_all(&self, e: Error) {
        for d in self.devices.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            d.fail(e.clone());
        }
    }

    fn of(&self, device: &Device) -> Result<Arc<DeviceCtx>> {
        self.lookup(&cube_device(device)?)
    }

    /// The configuration.
    pub fn config(&self) -> BitSparseConfig {
        self.config
    }

    /// The codec of `device` (its path: subgroup or portable).
    pub fn codec(&self, device: &Device) -> Result<Codec> {
        Ok(self.of(device)?.codec.clone())
    }

    /// The capacity of `device`'s arena now.
    pub fn arena_capacity_bytes(&self, device: &Device) -> Result<u64> {
        Ok(self.of(device)?.arena().capacity_bytes())
    }

    /// Starts a step on `device`: releases every compressed tensor of its previous step and clears its
    /// failure bits (recorded and submitted on the shared queue, no wait). Slots still held by a graph
    /// that was never run backward become invalid.
    pub fn begin_step(&self, device: &Device) -> Result<()> {
        let d = self.of(device)?;
        // On the server thread, like the ops: after the previous step's ops however far behind they
        // are, before this step's.
        let c = d.clone();
        d.on_server_thread(move |_: &mut Server| {
            let arena = c.arena();
            let mut enc = c
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.burn.begin_step") });
            arena.reset(&mut enc);
            sync::enqueue(&c.queue, [enc.finish()]);
            drop(arena);
            let mut st = c.state();
            st.error = None;
            st.tensors = 0;
            st.dense_bytes = 0;
            st.host_ns = 0;
            st.server_ns = 0;
            st.pending = None;
        });
        Ok(())
    }

    /// Starts the step's status read on `device` right after the backward, without waiting: Burn's
    /// pending work is submitted, then a copy of the arena's status words and its map (the step's one
    /// counted host synchronisation) are queued behind it. Record the optimizer step next (on a copy of
    /// the model and optimizer, which Burn's immutable tensors make cheap), then
    /// [`BitSparse::finish_step`] collects the status and says whether to keep that update.
    ///
    /// Why: a blocking read between the backward and the optimizer drains the GPU, which then idles
    /// while the host records the optimizer. Measured on the H200 (GPT d = 768, 12 layers, 4,096
    /// tokens, `demos/burn_gpt/results/`): a dense step with such a wait took 164.9 ms instead of
    /// 149.6; the BitSparse step without it 150.6 ms against dense 149.6.
    pub fn request_status(&self, device: &Device) -> Result<()> {
        let d = self.of(device)?;
        device.flush().map_err(|e| Error::Burn(format!("flushing the device: {e:?}")))?;
        let c = d.clone();
        d.on_server_thread(move |_: &mut Server| {
            let mut enc = c
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.burn.status") });
            let request = c.arena().request_status(&mut enc);
            sync::enqueue(&c.queue, [enc.finish()]);
            request.start();
            c.state().pending = Some(request);
        });
        Ok(())
    }

    /// Ends a step on `device`: reads the arena's status (the one started by
    /// [`BitSparse::request_status`], or now, blocking, if none was) and returns the step's use, or the
    /// first error: [`Error::ArenaOverflow`] when a compressed tensor did not fit — that step's
    /// gradients are wrong: an update recorded from them must be dropped (keep the model and optimizer
    /// from before it); [`BitSparse::grow`], then re-run the step.
    ///
    /// Without `request_status`, call it between the backward and the optimizer step: it flushes
    /// Burn's work and waits for it (as reading the loss would), which on the H200 cost a GPT step
    /// 15 ms (+10%) of GPU idle time.
    pub fn finish_step(&self, device: &Device) -> Result<StepReport> {
        let d = self.of(device)?;
        device.flush().map_err(|e| Error::Burn(format!("flushing the device: {e:?}")))?;
        let pending = d.state().pending.take();
        let status = match pending {
            Some(request) => request.wait(&d.device)?,
            None => d.arena().read_status(&d.queue)?,
        };
        let mut st = d.state();
        st.sizer.observe(&status);
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        status.check()?;
        Ok(StepReport {
            used_bytes: status.used_bytes,
            capacity_bytes: status.capacity_bytes,
            high_water_bytes: status.high_water_bytes,
            tensors: st.tensors,
            dense_bytes: st.dense_bytes,
            op_host_ns: st.host_ns,
            op_server_ns: st.server_ns,
        })
    }

    /// Replaces `device`'s arena by one of the capacity [`ArenaSizer`] recommends from what its steps so
    /// far used (at least double after an overflow); returns the new capacity. Call between steps.
    pub fn grow(&self, device: &Device) -> Result<u64> {
        let d = self.of(device)?;
        // Every queued op has run (and used the old arena) before it is replaced.
        device.flush().map_err(|e| Error::Burn(format!("flushing the device: {e:?}")))?;
        let want = d.state().sizer.recommended_bytes();
        let limits = d.device.limits();
        let max = (limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 16) * 16;
        let mut arena = d.arena();
        let bytes = want.min(max).max(arena.capacity_bytes());
        if bytes == arena.capacity_bytes() {
            return Err(Error::ArenaAtLimit { capacity: bytes });
        }
        *arena = make_arena(&d.codec, &d.config, bytes)?;
        Ok(bytes)
    }
}

/// The CubeCL server behind a Burn wgpu device (the one Burn's tensors on it use).
fn server_of(cube: &CubeDevice) -> Result<DeviceHandle<Server>> {
    use burn::backend::Device as _;
    match cube {
        CubeDevice::Wgpu(w) => Ok(DeviceHandle::<Server>::new(w.to_id())),
        #[allow(unreachable_patterns)]
        other => Err(Error::Unsupported(format!("BitSparse runs on Burn's wgpu devices, not {other:?}"))),
    }
}

fn make_arena(codec: &Codec, config: &BitSparseConfig, bytes: u64) -> Result<Arena> {
    let cfg = ArenaConfig {
        max_slots: config.max_slots,
        max_gates: 1,
        tile_order: config.tile_order,
        ..ArenaConfig::new(bytes)
    };
    Ok(Arena::new(codec, cfg)?)
}
