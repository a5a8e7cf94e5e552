//! The GPU-resident arena: where a training step keeps its compressed activations.
//!
//! Why on the GPU: a compressed tensor's size is known only after the GPU has counted its nonzeros.
//! A host-side allocator would have to read that size back and stall the step. Here a one-thread
//! `reserve` kernel hands the next tensor the current head, the compress writes at that base, and the
//! compress's own `finish` moves the head past what it used. The host only records commands.
//!
//! Overflow is never silent: a tensor that does not fit writes nothing past the end, is marked in its
//! slot descriptor and in the step's `failed` word; its decompress and fused backward write nothing (and
//! mark the slot `SKIPPED`); [`Arena::gate`] turns the caller's weight-update dispatch into a zero-size
//! one, so a failed step changes no weights. The host learns it from [`ArenaStatus`], read whenever it
//! chooses (blocking with [`Arena::read_status`], or asynchronously with [`Arena::request_status`]), as
//! [`Error::ArenaOverflow`]; the documented recovery is to grow the arena (see [`ArenaSizer`]) and re-run
//! the step. Sizing policy and the control-word layout: `docs/ARENA.md`.
//!
//! Order of use: release in LIFO order ([`Arena::pop`], backward pops what forward pushed) or all at once
//! ([`Arena::reset`], whole step). The host-side bookkeeping follows recording order, so encoders must be
//! submitted in the order they were recorded.

use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use crate::activation::Activation;
use crate::codec::{BufferRange, Codec, Fp8Format, FusedBackward, Placement, Source, Target};
use crate::cpu::fp8;
use crate::dispatch::{begin_pass, Kernel, KernelDispatch, Program, Trust};
use crate::error::{Error, Result};
use crate::format::{status, DType, Layout, Options};
use crate::host::sync;
use crate::kernels::TileOrder;

/// Control-buffer word indices (mirrors `shaders/lib/arena_ctrl.wgsl`).
pub mod ctrl {
    /// Next free arena word.
    pub const HEAD: u64 = 0;
    /// Status bits of every failure since the last reset.
    pub const FAILED: u64 = 1;
    /// High-water mark in words.
    pub const HIGH: u64 = 2;
    /// Capacity in words.
    pub const CAP: u64 = 3;
    /// Oldest live word of a ring (FIFO release); 0 otherwise.
    pub const TAIL: u64 = 4;
    /// Words kept free before a wrapped ring's tail: a slot placed before the tail may write below
    /// `TAIL - RING_GAP` only.
    pub const RING_GAP: u64 = 4;
    /// First slot descriptor.
    pub const SLOTS: u64 = 8;
    /// Words per slot descriptor: base, status, value words, limit, amax_accum, scale_used, head before
    /// the reservation, spare.
    pub const SLOT_STRIDE: u64 = 8;
    /// Slot word: the arena word where the slot's stream starts.
    pub const SLOT_BASE: u64 = 0;
    /// Slot word: its status bits (`format::status`), 0 for a valid stream.
    pub const SLOT_STATUS: u64 = 1;
    /// Slot word: the value words its last compress wrote.
    pub const SLOT_WORDS: u64 = 2;
    /// Slot word: the slot may write below this arena word only.
    pub const SLOT_LIMIT: u64 = 3;
    /// Slot word: FP8 storage, the amax (f32 bits) of the source seen by the slot's last FP8 compress.
    pub const SLOT_AMAX: u64 = 4;
    /// Slot word: FP8 storage, the scale (f32 bits) its last FP8 compress used.
    pub const SLOT_SCALE: u64 = 5;
    /// Slot word: the head before the slot's reservation (a LIFO pop restores it).
    pub const SLOT_PREV_HEAD: u64 = 6;
    /// Words per gate's indirect arguments after the slots (x, y, z, pad).
    pub const GATE_STRIDE: u64 = 4;
}

/// The per-tensor scale of FP8 storage ([`Arena::fused_forward_fp8`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Fp8Scale {
    /// FP8_MAX / the amax recorded by the previous FP8 compress of the same slot (1.0 when there is
    /// none, or when it is 0, not finite or too small for a finite scale): the forward stays one pass.
    Delayed,
    /// A caller-given scale: a positive, normal, finite f32.
    Fixed(f32),
}

/// How many tensors may be live at once, and how many gates a step may record.
#[derive(Copy, Clone, Debug)]
pub struct ArenaConfig {
    /// Capacity in bytes (a multiple of 16, at most the device's storage-binding size).
    pub capacity_bytes: u64,
    /// Live slots.
    pub max_slots: u32,
    /// Gates per step.
    pub max_gates: u32,
    /// How a push's tiles claim their place in its values section. [`TileOrder::Unordered`] (the
    /// default): a training step needs the tensor back, not reproducible stream bytes, and the ordered
    /// compress spends most of its time in the chain that orders the tiles.
    pub tile_order: TileOrder,
}

impl ArenaConfig {
    /// `capacity_bytes` with 1024 slots, 64 gates and unordered tiles.
    pub fn new(capacity_bytes: u64) -> Self {
        ArenaConfig { capacity_bytes, max_slots: 1024, max_gates: 64, tile_order: TileOrder::Unordered }
    }
}

/// A compressed tensor in the arena.
#[derive(Clone, Debug)]
pub struct Slot {
    id: u32,
    /// Element type, count and options.
    pub layout: Layout,
    placement: Placement,
    /// FP8 storage format when the slot holds FP8 codes of a BF16 activation.
    fp8: Option<Fp8Format>,
}

impl Slot {
    /// Word index of this slot's descriptor in the control buffer.
    fn word(&self) -> u32 {
        (ctrl::SLOTS + ctrl::SLOT_STRIDE * self.id as u64) as u32
    }

    /// Whether the slot holds FP8 codes of a BF16 activation ([`Arena::fused_forward_fp8`]).
    pub fn is_fp8(&self) -> bool {
        self.fp8.is_some()
    }
}

/// Indirect dispatch arguments written by [`Arena::gate`]: pass to `dispatch_workgroups_indirect`.
#[derive(Clone, Debug)]
pub struct GateArgs {
    /// The buffer (the arena's control buffer, with `INDIRECT` usage).
    pub buffer: wgpu::Buffer,
    /// Byte offset of the `(x, y, z)` arguments.
    pub offset: u64,
}

/// What the arena's control words said when read.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ArenaStatus {
    /// Bytes in use (the head).
    pub used_bytes: u64,
    /// Largest head (or need, after an overflow) seen since creation, in bytes.
    pub high_water_bytes: u64,
    /// Capacity in bytes.
    pub capacity_bytes: u64,
    /// Status bits of the failures since the last reset (`format::status`).
    pub failed: u32,
}

impl ArenaStatus {
    fn from_words(w: &[u32]) -> ArenaStatus {
        ArenaStatus {
            used_bytes: w[ctrl::HEAD as usize] as u64 * 4,
            failed: w[ctrl::FAILED as usize],
            high_water_bytes: w[ctrl::HIGH as usize] as u64 * 4,
            capacity_bytes: w[ctrl::CAP as usize] as u64 * 4,
        }
    }

    /// The failure as a typed error, if any.
    pub fn check(&self) -> Result<()> {
        if self.failed & status::OVERFLOW != 0 {
            return Err(Error::ArenaOverflow { needed: self.high_water_bytes, capacity: self.capacity_bytes });
        }
        if self.failed & status::SIGN_BIT_SET != 0 {
            return Err(Error::SignBitSet { index: None });
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct HostState {
    live: Vec<u32>,
    free: Vec<u32>,
    next: u32,
    gates: u32,
}

crate::shader_params! {
    /// The uniform of `arena.wgsl`'s one-thread setup kernels.
    struct SetupParams: "arena.wgsl" Params {
        slot: u32,
        values_offset: u32,
        gx: u32,
        gy: u32,
        gz: u32,
        gate_idx: u32,
        /// reserve: 0 not FP8, 1 delayed e4m3, 2 delayed e5m2, 3 fixed scale.
        fp8: u32,
        /// reserve, fixed scale: its f32 bits.
        fp8_scale: u32,
        /// reserve: words of the tensor's worst case (decides whether a ring wraps to the start).
        worst: u32,
        /// release_front: word index of the next live slot, `u32::MAX` if none.
        next: u32,
        _pad0: u32,
        _pad1: u32,
    }
}

/// The setup kernels (one program, `arena.wgsl`).
#[derive(Debug)]
struct Setup {
    reserve: Kernel,
    pop: Kernel,
    release_front: Kernel,
    gate: Kernel,
}

/// The arena. Cheap to clone (shared state).
#[derive(Clone, Debug)]
pub struct Arena {
    codec: Codec,
    buffer: wgpu::Buffer,
    ctrl: wgpu::Buffer,
    config: ArenaConfig,
    setup: Arc<Setup>,
    state: Arc<Mutex<HostState>>,
}

impl Arena {
    /// A new arena of `config.capacity_bytes` on the codec's device.
    pub fn new(codec: &Codec, config: ArenaConfig) -> Result<Arena> {
        let device = codec.device();
        let limits = device.limits();
        let max = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        if config.capacity_bytes == 0 || config.capacity_bytes % 16 != 0 || config.capacity_bytes > max {
            return Err(Error::InvalidArgument(format!(
                "arena capacity {} must be a nonzero multiple of 16 bytes of at most {max} (one storage binding)",
                config.capacity_bytes
            )));
        }
        if config.max_slots == 0 || config.max_gates == 0 {
            return Err(Error::InvalidArgument("an arena needs at least one slot and one gate".into()));
        }
        codec.warm_arena_variants(config.tile_order)?;
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.arena"),
            size: config.capacity_bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let words =
            ctrl::SLOTS + ctrl::SLOT_STRIDE * config.max_slots as u64 + ctrl::GATE_STRIDE * config.max_gates as u64;
        let mut init = vec![0u32; words as usize];
        init[ctrl::CAP as usize] = (config.capacity_bytes / 4) as u32;
        let ctrl = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bitsparse.arena.ctrl"),
            contents: bytemuck::cast_slice(&init),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::INDIRECT
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        });
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let program = Program::new(device, "arena.wgsl", &[], Trust::Checked);
        let setup = Setup {
            reserve: program.kernel(device, "reserve", &[]),
            pop: program.kernel(device, "pop", &[]),
            release_front: program.kernel(device, "release_front", &[]),
            gate: program.kernel(device, "gate", &[]),
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building the arena pipelines failed: {e}")));
        }
        Ok(Arena {
            codec: codec.clone(),
            buffer,
            ctrl,
            config,
            setup: Arc::new(setup),
            state: Arc::new(Mutex::new(HostState::default())),
        })
    }

    /// Builds now the kernels that [`Arena::fused_forward_dtype`] and [`Arena::fused_backward`] use for
    /// `dtype` (BF16's are built with the arena; F16's and F32's on first use otherwise), so that a
    /// training step does not build pipelines. Pipelines are built per mode ([`crate::kernels::Modes`]):
    /// these are the ones of unpacked streams of whole tiles (tensors of a multiple of 4,096 elements),
    /// for each activation; sign-packed streams and tensors with a partial tile build theirs on first use.
    pub fn prepare_fused(&self, dtype: DType) -> Result<()> {
        Self::fused_dtype(dtype)?;
        self.codec.warm_fused_variants(dtype, self.config.tile_order)
    }

    /// The arena's storage buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// The control buffer (head, failed, high-water, capacity, slot descriptors, gate arguments).
    pub fn ctrl_buffer(&self) -> &wgpu::Buffer {
        &self.ctrl
    }

    /// Capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.config.capacity_bytes
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records one of the one-thread setup kernels.
    fn setup_pass(&self, encoder: &mut wgpu::CommandEncoder, kernel: &Kernel, p: SetupParams) {
        let mut pass = begin_pass(encoder, "bitsparse.arena.setup");
        KernelDispatch::new(self.codec.device(), &mut pass, kernel)
            .bind([("ctrl", self.ctrl.as_entire_buffer_binding())])
            .params(&p)
            .dispatch([1, 1, 1]);
    }

    fn new_slot(&self, layout: Layout) -> Result<Slot> {
        let mut st = self.state();
        let id = match st.free.pop() {
            Some(id) => id,
            None if st.next < self.config.max_slots => {
                st.next += 1;
                st.next - 1
            }
            None => {
                return Err(Error::InvalidArgument(format!("more than {} live arena slots", self.config.max_slots)))
            }
        };
        st.live.push(id);
        Ok(Slot { id, layout, placement: Placement::Compact, fp8: None })
    }

    /// `fp8` and `fp8_scale` of `reserve`'s uniform: the FP8 choice stays typed until it is written there.
    fn fp8_mode(fp8: Option<(Fp8Format, Fp8Scale)>) -> Result<(u32, u32)> {
        match fp8 {
            None => Ok((0, 0)),
            Some((fmt, Fp8Scale::Delayed)) => Ok((1 + fmt.code(), 0)),
            Some((_, Fp8Scale::Fixed(s))) if fp8::valid_scale(s) => Ok((3, s.to_bits())),
            Some((_, Fp8Scale::Fixed(s))) => {
                Err(Error::InvalidArgument(format!("an FP8 scale must be a positive, normal, finite f32, not {s}")))
            }
        }
    }

    fn push_with(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: BufferRange<'_>,
        layout: Layout,
        fused: Option<(Activation, BufferRange<'_>)>,
        fp8: Option<(Fp8Format, Fp8Scale)>,
    ) -> Result<Slot> {
        if input.buffer == &self.buffer || fused.as_ref().is_some_and(|(_, a)| a.buffer == &self.buffer) {
            return Err(Error::InvalidArgument("inputs and outputs must not live in the arena buffer".into()));
        }
        let (fp8_mode, fp8_scale) = Self::fp8_mode(fp8)?;
        let mut slot = self.new_slot(layout)?;
        slot.fp8 = fp8.map(|(fmt, _)| fmt);
        let worst = (layout.capacity_bytes() / 4).min(u32::MAX as u64) as u32;
        let p = SetupParams {
            slot: slot.word(),
            values_offset: layout.values_offset as u32,
            fp8: fp8_mode,
            fp8_scale,
            worst,
            ..Default::default()
        };
        let target =
            Target::Arena { arena: &self.buffer, ctrl: &self.ctrl, slot_word: slot.word(), fused, fp8: slot.fp8 };
        // The ranges are checked (overlap included) before the reserve is recorded.
        let recorded = self.codec.check_compress(&input, &layout, &target).and_then(|_| {
            self.setup_pass(encoder, &self.setup.reserve, p);
            self.codec.record_compress(encoder, input, &layout, target, self.config.tile_order)
        });
        match recorded {
            Ok(placement) => {
                slot.placement = placement;
                Ok(slot)
            }
            Err(e) => {
                // Nothing that depends on the slot was recorded: give it back. A reserve already
                // recorded (a pipeline that failed to build) is harmless (the head only moves in a
                // compress's finish).
                let mut st = self.state();
                st.live.retain(|&s| s != slot.id);
                st.free.push(slot.id);
                Err(e)
            }
        }
    }

    /// Records the compression of `n` elements of `dtype` from `input` into the arena.
    pub fn push(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: BufferRange<'_>,
        dtype: DType,
        n: u64,
        options: Options,
    ) -> Result<Slot> {
        self.push_with(encoder, input, Layout::new(dtype, n, options)?, None, None)
    }

    /// Fused forward: from the BF16 pre-activation `z`, writes the dense activation `a` (relu(z) or
    /// relu(z)²) to `a_out` and pushes the compressed r = relu(z), all in one pass over `z`.
    ///
    /// `z` and `a_out` may be ranges of one pool buffer (as Burn / CubeCL allocate tensors) if they do not
    /// overlap (`Error::OverlappingRanges`: the kernel would read what it writes); neither may lie in the
    /// arena's buffer.
    pub fn fused_forward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        z: BufferRange<'_>,
        n: u64,
        act: Activation,
        options: Options,
        a_out: BufferRange<'_>,
    ) -> Result<Slot> {
        self.fused_forward_dtype(encoder, z, DType::Bf16, n, act, options, a_out)
    }

    /// [`Arena::fused_forward`] for a pre-activation of `dtype`: BF16, F16 or F32 (FP8 is
    /// `Error::InvalidArgument`; FP8 *storage* is [`Arena::fused_forward_fp8`], of BF16). F32 and F16 compute
    /// a = r * r rounded once in the dtype, bit-identical to the dense op (docs/FUSED.md).
    #[allow(clippy::too_many_arguments)] // fused_forward's arguments plus the dtype
    pub fn fused_forward_dtype(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        z: BufferRange<'_>,
        dtype: DType,
        n: u64,
        act: Activation,
        options: Options,
        a_out: BufferRange<'_>,
    ) -> Result<Slot> {
        Self::fused_dtype(dtype)?;
        self.push_with(encoder, z, Layout::new(dtype, n, options)?, Some((act, a_out)), None)
    }

    /// The dtypes of the fused math: BF16, F16, F32.
    fn fused_dtype(dtype: DType) -> Result<()> {
        match dtype {
            DType::Bf16 | DType::F16 | DType::F32 => Ok(()),
            _ => Err(Error::InvalidArgument(format!(
                "the fused activation kernels take BF16, F16 or F32 activations, not {dtype} (FP8 storage is of BF16)"
            ))),
        }
    }

    /// Fused forward with **FP8 storage (lossy)**: writes the dense `a` exactly as
    /// [`Arena::fused_forward`] does (BF16, bit-exact), but stores q = fp8(relu(z) · scale) as a
    /// `format` (E4m3 or E5m2) tensor: the exact product rounded to nearest even, saturating to the
    /// largest finite value; the mask is q's, so an r that rounds to zero is a zero. The stream's header
    /// carries `AMAX` (amax of relu(z), NaNs excluded) and `SCALE` (the scale used), as f32 bits.
    /// [`Arena::fused_backward`] dequantizes r' = bf16(q / scale); [`Arena::decompress`] gives q.
    /// Rules and error bounds: `docs/FUSED.md`, "FP8 storage (lossy)".
    #[allow(clippy::too_many_arguments)] // fused_forward's arguments plus the two FP8 choices
    pub fn fused_forward_fp8(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        z: BufferRange<'_>,
        n: u64,
        act: Activation,
        format: DType,
        scale: Fp8Scale,
        options: Options,
        a_out: BufferRange<'_>,
    ) -> Result<Slot> {
        let Some(fmt) = Fp8Format::of(format) else {
            return Err(Error::InvalidArgument(format!("FP8 storage is e4m3 or e5m2, not {format}")));
        };
        self.push_with(encoder, z, Layout::new(format, n, options)?, Some((act, a_out)), Some((fmt, scale)))
    }

    /// Records the decompression of `slot` into `output`. An invalid slot (overflowed) writes nothing.
    pub fn decompress(&self, encoder: &mut wgpu::CommandEncoder, slot: &Slot, output: BufferRange<'_>) -> Result<()> {
        self.check_live(slot)?;
        let source = Source::Arena { arena: &self.buffer, ctrl: &self.ctrl, slot_word: slot.word() };
        self.codec.record_decompress(encoder, source, &slot.layout, slot.placement, output, None)
    }

    /// Fused backward: from the compressed r in `slot` and g = dL/da, writes dL/dz to `dz_out` and, when
    /// given, the dense a (r or r²) the dW₂ GEMM needs to `a_out`, all of the slot's dtype (BF16, F16 or
    /// F32; BF16 under FP8 storage). An invalid slot writes nothing. F32 and F16: t = g * r, dr = t + t,
    /// dL/dz = dr where r > 0, else +0, each rounded once in the dtype (docs/FUSED.md).
    ///
    /// `g`, `dz_out` and `a_out` may be ranges of one pool buffer if `dz_out` and `a_out` overlap neither
    /// each other nor `g` (`Error::OverlappingRanges`); none may lie in the arena's buffer.
    pub fn fused_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        slot: &Slot,
        act: Activation,
        g: BufferRange<'_>,
        dz_out: BufferRange<'_>,
        a_out: Option<BufferRange<'_>>,
    ) -> Result<()> {
        self.check_live(slot)?;
        if slot.fp8.is_none() {
            Self::fused_dtype(slot.layout.dtype)?;
        }
        let source = Source::Arena { arena: &self.buffer, ctrl: &self.ctrl, slot_word: slot.word() };
        let fused = FusedBackward { act, g, a_out, fp8: slot.fp8 };
        self.codec.record_decompress(encoder, source, &slot.layout, slot.placement, dz_out, Some(fused))
    }

    fn check_live(&self, slot: &Slot) -> Result<()> {
        if self.state().live.contains(&slot.id) {
            Ok(())
        } else {
            Err(Error::InvalidArgument("arena slot was already released".into()))
        }
    }

    /// LIFO release of the most recently pushed live slot.
    pub fn pop(&self, encoder: &mut wgpu::CommandEncoder, slot: Slot) -> Result<()> {
        {
            let mut st = self.state();
            if st.live.last() != Some(&slot.id) {
                return Err(Error::InvalidArgument(
                    "arena slots are released in LIFO order: this one is not the last pushed".into(),
                ));
            }
            st.live.pop();
            st.free.push(slot.id);
        }
        let p = SetupParams { slot: slot.word(), ..Default::default() };
        self.setup_pass(encoder, &self.setup.pop, p);
        Ok(())
    }

    /// FIFO release of the oldest live slot: the arena is then a ring (micro-batches whose activations
    /// are released in the order they were pushed). A push whose worst case no longer fits before the
    /// arena's end wraps to the start when it fits before the oldest live tensor (`docs/ARENA.md`).
    pub fn release_front(&self, encoder: &mut wgpu::CommandEncoder, slot: Slot) -> Result<()> {
        let next = {
            let mut st = self.state();
            if st.live.first() != Some(&slot.id) {
                return Err(Error::InvalidArgument("release_front takes the oldest live slot (FIFO order)".into()));
            }
            st.live.remove(0);
            st.free.push(slot.id);
            st.live.first().map(|&id| (ctrl::SLOTS + ctrl::SLOT_STRIDE * id as u64) as u32).unwrap_or(u32::MAX)
        };
        let p = SetupParams { slot: slot.word(), next, ..Default::default() };
        self.setup_pass(encoder, &self.setup.release_front, p);
        Ok(())
    }

    /// Releases everything and clears the step's failure bits (start of a step). Outstanding [`Slot`]s
    /// become invalid.
    pub fn reset(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut st = self.state();
        st.live.clear();
        st.free.clear();
        st.next = 0;
        st.gates = 0;
        encoder.clear_buffer(&self.ctrl, 0, Some(8)); // head, failed
        encoder.clear_buffer(&self.ctrl, ctrl::TAIL * 4, Some(4));
    }

    /// Records a gate: indirect arguments equal to `grid` when nothing failed since the last reset,
    /// `(0, 0, 0)` otherwise. Record it after the step's last push and use it for the weight update.
    pub fn gate(&self, encoder: &mut wgpu::CommandEncoder, grid: [u32; 3]) -> Result<GateArgs> {
        let idx = {
            let mut st = self.state();
            if st.gates >= self.config.max_gates {
                return Err(Error::InvalidArgument(format!("more than {} gates in one step", self.config.max_gates)));
            }
            st.gates += 1;
            ctrl::SLOTS + ctrl::SLOT_STRIDE * self.config.max_slots as u64 + ctrl::GATE_STRIDE * (st.gates as u64 - 1)
        };
        let p = SetupParams { gx: grid[0], gy: grid[1], gz: grid[2], gate_idx: idx as u32, ..Default::default() };
        self.setup_pass(encoder, &self.setup.gate, p);
        Ok(GateArgs { buffer: self.ctrl.clone(), offset: idx * 4 })
    }

    /// Reads the status now (blocking: submits a copy and waits). For tools and tests; a trainer uses
    /// [`Arena::request_status`].
    pub fn read_status(&self, queue: &wgpu::Queue) -> Result<ArenaStatus> {
        let b = sync::read_buffer(self.codec.device(), queue, &self.ctrl, 0, 16)?;
        Ok(ArenaStatus::from_words(&bytemuck::pod_collect_to_vec::<u8, u32>(&b)))
    }

    /// Records a copy of the status words into a new readback buffer; call [`StatusRequest::start`]
    /// after submitting, and [`StatusRequest::try_take`] once the device has been polled (e.g. next step).
    pub fn request_status(&self, encoder: &mut wgpu::CommandEncoder) -> StatusRequest {
        let staging = self.codec.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.arena.status"),
            size: 16,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        encoder.copy_buffer_to_buffer(&self.ctrl, 0, &staging, 0, 16);
        StatusRequest { staging, done: Arc::new(Mutex::new(None)) }
    }

    /// Reads one slot's status bits and compact byte size (blocking; tools and tests).
    pub fn read_slot(&self, queue: &wgpu::Queue, slot: &Slot) -> Result<(u32, u64)> {
        let b = sync::read_buffer(self.codec.device(), queue, &self.ctrl, slot.word() as u64 * 4, 16)?;
        let w: Vec<u32> = bytemuck::pod_collect_to_vec(&b);
        let (status, words) = (w[ctrl::SLOT_STATUS as usize], w[ctrl::SLOT_WORDS as usize]);
        Ok((status, slot.layout.compact_bytes(words as u64)))
    }

    /// Reads one slot's stream as it lies in the arena (blocking; tools and tests): header, table, mask
    /// and values, tiles in the order the push placed them.
    pub fn read_slot_stream(&self, queue: &wgpu::Queue, slot: &Slot) -> Result<Vec<u8>> {
        let d = sync::read_buffer(self.codec.device(), queue, &self.ctrl, slot.word() as u64 * 4, 16)?;
        let w: Vec<u32> = bytemuck::pod_collect_to_vec(&d);
        let status = w[ctrl::SLOT_STATUS as usize];
        if status != 0 {
            return Err(Error::InvalidArgument(format!("the slot holds no stream (status {status:#x})")));
        }
        let bytes = slot.layout.compact_bytes(w[ctrl::SLOT_WORDS as usize] as u64);
        let base = w[ctrl::SLOT_BASE as usize] as u64 * 4;
        sync::read_buffer(self.codec.device(), queue, &self.buffer, base, bytes)
    }

    /// Reads one slot's FP8 words (blocking; tools and tests): `(amax, scale)` of its last FP8
    /// compress, as f32 (what the header's `AMAX` / `SCALE` carry).
    pub fn read_fp8(&self, queue: &wgpu::Queue, slot: &Slot) -> Result<(f32, f32)> {
        let off = (slot.word() as u64 + ctrl::SLOT_AMAX) * 4;
        let b = sync::read_buffer(self.codec.device(), queue, &self.ctrl, off, 8)?;
        let w: Vec<u32> = bytemuck::pod_collect_to_vec(&b);
        Ok((f32::from_bits(w[0]), f32::from_bits(w[1])))
    }
}

/// An asynchronous status read (see [`Arena::request_status`]).
#[derive(Debug)]
pub struct StatusRequest {
    staging: wgpu::Buffer,
    done: Arc<Mutex<Option<std::result::Result<(), wgpu::BufferAsyncError>>>>,
}

impl StatusRequest {
    /// Starts mapping (counted as one host synchronisation). Call after the copy was submitted.
    pub fn start(&self) {
        let done = self.done.clone();
        sync::map_read_async(&self.staging.slice(..), move |r| {
            *done.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        });
    }

    /// Waits for the map to complete (collecting the read [`StatusRequest::start`] counted) and returns
    /// the status.
    pub fn wait(&self, device: &wgpu::Device) -> Result<ArenaStatus> {
        if let Some(s) = self.try_take() {
            return s;
        }
        sync::wait_mapped(device)?;
        self.try_take()
            .unwrap_or_else(|| Err(Error::Sync("the status map did not complete (was the copy submitted?)".into())))
    }

    /// The status, once the map has completed (the caller polls the device when it likes).
    pub fn try_take(&self) -> Option<Result<ArenaStatus>> {
        let r = self.done.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        Some(r.map_err(|e| Error::Sync(e.to_string())).and_then(|()| {
            let view = self.staging.slice(..).get_mapped_range().map_err(|e| Error::Sync(format!("{e:?}")))?;
            let w: Vec<u32> = bytemuck::pod_collect_to_vec(&view);
            drop(view);
            self.staging.unmap();
            Ok(ArenaStatus::from_words(&w))
        }))
    }
}

/// The sizing policy: keep the largest use seen, add headroom for density drift, and at least double
/// after an overflow (an overflowed tensor's need is only partly known).
#[derive(Copy, Clone, Debug, Default)]
pub struct ArenaSizer {
    high: u64,
    overflowed_at: Option<u64>,
}

impl ArenaSizer {
    /// Headroom over the high-water mark: 1/8.
    pub const HEADROOM: f64 = 0.125;

    /// Takes a status reading into account.
    pub fn observe(&mut self, s: &ArenaStatus) {
        self.high = self.high.max(s.high_water_bytes);
        if s.failed & status::OVERFLOW != 0 {
            self.overflowed_at = Some(self.overflowed_at.unwrap_or(0).max(s.capacity_bytes));
        }
    }

    /// The capacity to allocate next, rounded up to 1 MiB.
    pub fn recommended_bytes(&self) -> u64 {
        let mut want = (self.high as f64 * (1.0 + Self::HEADROOM)).ceil() as u64;
        if let Some(c) = self.overflowed_at {
            want = want.max(2 * c);
        }
        want.max(1).next_multiple_of(1 << 20)
    }
}

#[cfg(test)]
mod tests {
    use super::ctrl;
    use crate::format::status;
    use std::collections::BTreeMap;

    /// The `const NAME: u32 = Nu;` declarations of `shaders/lib/arena_ctrl.wgsl`.
    fn wgsl_consts() -> BTreeMap<String, u64> {
        let src = crate::shaders::raw("lib/arena_ctrl.wgsl").expect("arena_ctrl.wgsl is embedded");
        let mut out = BTreeMap::new();
        for line in src.lines().map(str::trim).filter(|l| l.starts_with("const ")) {
            let (name, value) =
                line["const ".len()..].split_once(": u32 =").unwrap_or_else(|| panic!("unparsed: {line}"));
            let value = value.trim().trim_end_matches(';').trim_end_matches('u');
            out.insert(name.trim().to_string(), value.parse().unwrap_or_else(|_| panic!("unparsed: {line}")));
        }
        out
    }

    /// The host reads and writes the control buffer through `ctrl` and `format::status`; the kernels
    /// through arena_ctrl.wgsl. Every constant of the shader's layout must have its mirror here with
    /// the same value, so a layout change on one side fails this test instead of a decode.
    #[test]
    fn ctrl_mirror_matches_arena_ctrl_wgsl() {
        let mirror = [
            ("CTRL_HEAD", ctrl::HEAD),
            ("CTRL_FAILED", ctrl::FAILED),
            ("CTRL_HIGH", ctrl::HIGH),
            ("CTRL_CAP", ctrl::CAP),
            ("CTRL_TAIL", ctrl::TAIL),
            ("CTRL_SLOTS", ctrl::SLOTS),
            ("SLOT_STRIDE", ctrl::SLOT_STRIDE),
            ("SLOT_BASE", ctrl::SLOT_BASE),
            ("SLOT_STATUS", ctrl::SLOT_STATUS),
            ("SLOT_WORDS", ctrl::SLOT_WORDS),
            ("SLOT_LIMIT", ctrl::SLOT_LIMIT),
            ("SLOT_AMAX", ctrl::SLOT_AMAX),
            ("SLOT_SCALE", ctrl::SLOT_SCALE),
            ("SLOT_PREV_HEAD", ctrl::SLOT_PREV_HEAD),
            ("RING_GAP", ctrl::RING_GAP),
            ("STATUS_SIGN", status::SIGN_BIT_SET as u64),
            ("STATUS_OVERFLOW", status::OVERFLOW as u64),
            ("STATUS_SKIPPED", status::SKIPPED as u64),
        ];
        let mut wgsl = wgsl_consts();
        for (name, value) in mirror {
            assert_eq!(wgsl.remove(name), Some(value), "{name}: arena_ctrl.wgsl and src/arena.rs differ");
        }
        assert!(wgsl.is_empty(), "arena_ctrl.wgsl constants without a mirror in src/arena.rs: {wgsl:?}");
    }

    // The slot words fit in a slot, and the slots start after the header words.
    const _: () = assert!(ctrl::SLOT_PREV_HEAD < ctrl::SLOT_STRIDE && ctrl::TAIL < ctrl::SLOTS);
}
