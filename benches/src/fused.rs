//! Rows for the fused training kernels (issue 3: [`bitsparse::arena::Arena::fused_forward`] /
//! [`bitsparse::arena::Arena::fused_backward`]) and the plain dense ReLU² kernels they are compared with
//! ([`bitsparse::dense_act::DenseAct`]).
//!
//! Each op is one function returning its [`Case`] for a batch, or `None` where it does not apply: the
//! kernels take BF16, F16 and F32 (an FP8 batch has no such rows), the dense kernels whole 16-byte ranges,
//! and the arena one storage binding. Inputs: the pre-activation `z` has exactly the batch's nonzero
//! pattern after the ReLU ([`super::data::pre_activation`]), so the measured density and the stream sizes
//! are those of the batch; `g` reuses `z`'s bits. The activation is ReLU².
//!
//! Bytes that must move (docs/CONVENTIONS.md, issue 4):
//! - fused forward: read z; write a, mask, values;
//! - fused backward: read mask, values, g; write dL/dz (the dense a is not asked for);
//! - plain forward: read z, write a;
//! - plain backward: read r and g, write dL/dz.

use bitsparse::arena::{Arena, ArenaConfig, Slot};
use bitsparse::cpu::act::{self, Activation};
use bitsparse::dense_act::DenseAct;
use bitsparse::error::{Error, Result};
use bitsparse::format::{DType, Layout, Options};
use bitsparse::host::sync;
use bitsparse::{BufferRange, TileOrder};

use super::case::{codec_check, BatchCtx, Case, Check};
use super::data::pre_activation;
use super::gpu;
use super::op::Op;

const ACT: Activation = Activation::Relu2;

/// Whether `op`'s case exists.
pub fn implemented(op: Op) -> bool {
    matches!(op, Op::FusedForward | Op::FusedBackward | Op::PlainForward | Op::PlainBackward)
}

/// The batch's inputs for these kernels, on the host and the device.
pub struct FusedInputs {
    /// Pre-activation z (BF16 bytes).
    z: Vec<u8>,
    /// r = relu(z).
    r: Vec<u8>,
    z_buf: wgpu::Buffer,
    r_buf: wgpu::Buffer,
}

/// `z`, `r` and their buffers, made on first use in a batch; `None` for batches these kernels do not take.
fn inputs<'c>(ctx: &'c BatchCtx<'_>) -> Result<Option<&'c FusedInputs>> {
    if !matches!(ctx.dtype, DType::Bf16 | DType::F16 | DType::F32) || ctx.n() % 8 != 0 {
        return Ok(None);
    }
    if ctx.fused.get().is_none() {
        let z = pre_activation(ctx.data, ctx.dtype);
        let (r, _) = act::forward_dtype(&z, ctx.dtype, ACT)?;
        let z_buf = gpu::buffer_with(ctx.device, "bitsparse.bench.z", &z)?;
        let r_buf = gpu::buffer_with(ctx.device, "bitsparse.bench.r", &r)?;
        let _ = ctx.fused.set(FusedInputs { z, r, z_buf, r_buf });
    }
    Ok(ctx.fused.get())
}

fn dense(ctx: &BatchCtx<'_>) -> Result<DenseAct> {
    if ctx.dense.get().is_none() {
        let _ = ctx.dense.set(DenseAct::with_kernel_constants(ctx.device, ctx.kernel_constants)?);
    }
    ctx.dense.get().cloned().ok_or_else(|| Error::InvalidArgument("dense kernels missing".into()))
}

/// An arena holding one tensor of the batch in `options`, its tiles placed in `order`, or `None` where
/// it exceeds one binding.
fn arena(ctx: &BatchCtx<'_>, options: Options, order: TileOrder) -> Result<Option<Arena>> {
    let limits = ctx.device.limits();
    let max = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 16 * 16;
    let cap = Layout::new(ctx.dtype, ctx.n(), options)?.capacity_bytes().div_ceil(16) * 16;
    if cap > max {
        return Ok(None);
    }
    Ok(Some(Arena::new(
        ctx.codec,
        ArenaConfig { max_slots: 4, max_gates: 1, tile_order: order, ..ArenaConfig::new(cap) },
    )?))
}

fn range(b: &wgpu::Buffer, bytes: u64) -> BufferRange<'_> {
    BufferRange::new(b, 0, bytes)
}

/// A note when a read-back output differs from the CPU reference.
fn compare(ctx: &BatchCtx<'_>, what: &str, buf: &wgpu::Buffer, want: &[u8]) -> Result<Option<String>> {
    if !ctx.verify {
        return Ok(None);
    }
    let got = sync::read_buffer(ctx.device, ctx.queue, buf, 0, want.len() as u64)?;
    Ok((got != want)
        .then(|| format!("{what} ρ={} n={}: NOT bit-exact against the CPU reference", ctx.density, ctx.n())))
}

/// The arena slot's stream size as a [`Check`], with a note for a failed slot.
fn slot_check(ctx: &BatchCtx<'_>, arena: &Arena, slot: &Slot, note: Option<String>) -> Result<Check> {
    let (status, bytes) = arena.read_slot(ctx.queue, slot)?;
    if status != 0 {
        return Ok(Check {
            note: Some(format!("arena slot status {status:#x} at ρ={} n={}", ctx.density, ctx.n())),
            ..Default::default()
        });
    }
    let words = (bytes / 4).saturating_sub(slot.layout.values_offset);
    let expected = ctx.stats.value_words(slot.layout.dtype, slot.layout.options);
    let note = note.or_else(|| {
        (words != expected).then(|| {
            format!("arena stream of {words} value words, the data need {expected} (ρ={} n={})", ctx.density, ctx.n())
        })
    });
    Ok(codec_check(ctx, &slot.layout, words, note))
}

/// Fused forward: z → (a, compressed relu(z) pushed into an arena reset before each repetition).
pub fn fused_forward<'a>(ctx: &BatchCtx<'a>, sign_pack: bool, order: TileOrder) -> Result<Option<Box<dyn Case + 'a>>> {
    let Some(inp) = inputs(ctx)? else { return Ok(None) };
    let options = Options { sign_pack };
    let Some(arena) = arena(ctx, options, order)? else { return Ok(None) };
    let layout = Layout::new(ctx.dtype, ctx.n(), options)?;
    let bytes = 2 * ctx.dense_bytes() + ctx.stats.mask_and_values_bytes(&layout);
    let a = gpu::buffer(ctx.device, "bitsparse.bench.a", ctx.dense_bytes())?;
    Ok(Some(Box::new(FusedForward {
        arena,
        z: inp.z_buf.clone(),
        a,
        dtype: ctx.dtype,
        n: ctx.n(),
        options,
        order,
        bytes,
        last: Default::default(),
    })))
}

struct FusedForward {
    arena: Arena,
    order: TileOrder,
    z: wgpu::Buffer,
    a: wgpu::Buffer,
    dtype: DType,
    n: u64,
    options: Options,
    bytes: u64,
    last: std::cell::RefCell<Option<Slot>>,
}

impl Case for FusedForward {
    fn op(&self) -> Op {
        Op::FusedForward
    }
    fn sign_pack(&self) -> bool {
        self.options.sign_pack
    }
    fn tile_order(&self) -> Option<TileOrder> {
        Some(self.order)
    }
    fn bytes_moved(&self) -> u64 {
        self.bytes
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        // Not the arena buffer: it has no guard word (nor COPY_DST); fencing z and a orders the work.
        vec![&self.z, &self.a]
    }
    fn before(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        self.arena.reset(encoder);
        Ok(())
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let b = self.n * self.dtype.bytes();
        let slot = self.arena.fused_forward_dtype(
            encoder,
            range(&self.z, b),
            self.dtype,
            self.n,
            ACT,
            self.options,
            range(&self.a, b),
        )?;
        *self.last.borrow_mut() = Some(slot);
        Ok(())
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let slot = self
            .last
            .borrow()
            .clone()
            .ok_or_else(|| Error::InvalidArgument("fused forward checked before it ran".into()))?;
        let note = match inputs(ctx)? {
            Some(inp) => compare(ctx, "fused forward a", &self.a, &act::forward_dtype(&inp.z, self.dtype, ACT)?.1)?,
            None => None,
        };
        slot_check(ctx, &self.arena, &slot, note)
    }
}

/// Fused backward: (compressed r pushed once when the case is made, g) → dL/dz, and with `with_a` also
/// the dense a = act(r) that dW₂ needs (what a training step runs: its bytes count the extra write).
pub fn fused_backward<'a>(ctx: &BatchCtx<'a>, sign_pack: bool, with_a: bool) -> Result<Option<Box<dyn Case + 'a>>> {
    let Some(inp) = inputs(ctx)? else { return Ok(None) };
    let options = Options { sign_pack };
    let Some(arena) = arena(ctx, options, TileOrder::Unordered)? else { return Ok(None) };
    let b = ctx.dense_bytes();
    let scratch = gpu::buffer(ctx.device, "bitsparse.bench.a", b)?;
    let mut enc =
        ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench.setup") });
    arena.reset(&mut enc);
    let slot = arena.fused_forward_dtype(
        &mut enc,
        range(&inp.z_buf, b),
        ctx.dtype,
        ctx.n(),
        ACT,
        options,
        range(&scratch, b),
    )?;
    sync::submit(ctx.queue, [enc.finish()]);
    let bytes = (2 + with_a as u64) * b + ctx.stats.mask_and_values_bytes(&slot.layout);
    let dz = gpu::buffer(ctx.device, "bitsparse.bench.dz", b)?;
    let a = with_a.then(|| gpu::buffer(ctx.device, "bitsparse.bench.a_out", b)).transpose()?;
    Ok(Some(Box::new(FusedBackward { arena, slot, g: inp.z_buf.clone(), dz, a, n: ctx.n(), bytes })))
}

struct FusedBackward {
    arena: Arena,
    slot: Slot,
    g: wgpu::Buffer,
    dz: wgpu::Buffer,
    a: Option<wgpu::Buffer>,
    n: u64,
    bytes: u64,
}

impl Case for FusedBackward {
    fn op(&self) -> Op {
        Op::FusedBackward
    }
    fn sign_pack(&self) -> bool {
        self.slot.layout.options.sign_pack
    }
    fn with_a(&self) -> Option<bool> {
        Some(self.a.is_some())
    }
    fn bytes_moved(&self) -> u64 {
        self.bytes
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        [&self.g, &self.dz].into_iter().chain(self.a.as_ref()).collect()
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let b = self.n * self.slot.layout.dtype.bytes();
        let a = self.a.as_ref().map(|a| range(a, b));
        self.arena.fused_backward(encoder, &self.slot, ACT, range(&self.g, b), range(&self.dz, b), a)
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let note = match inputs(ctx)? {
            Some(inp) => {
                let (dz, a) = act::backward_dtype(&inp.r, &inp.z, self.slot.layout.dtype, ACT)?;
                let note = compare(ctx, "fused backward dL/dz", &self.dz, &dz)?;
                match (note, &self.a) {
                    (None, Some(buf)) => compare(ctx, "fused backward a", buf, &a)?,
                    (note, _) => note,
                }
            }
            None => None,
        };
        slot_check(ctx, &self.arena, &self.slot, note)
    }
}

/// Plain dense forward: z → a = relu(z)².
pub fn plain_forward<'a>(ctx: &BatchCtx<'a>) -> Result<Option<Box<dyn Case + 'a>>> {
    let Some(inp) = inputs(ctx)? else { return Ok(None) };
    let a = gpu::buffer(ctx.device, "bitsparse.bench.a", ctx.dense_bytes())?;
    Ok(Some(Box::new(Plain {
        kernels: dense(ctx)?,
        op: Op::PlainForward,
        ins: vec![inp.z_buf.clone()],
        out: a,
        dtype: ctx.dtype,
        n: ctx.n(),
    })))
}

/// Plain dense backward: (r, g) → dL/dz = 2·r·g.
pub fn plain_backward<'a>(ctx: &BatchCtx<'a>) -> Result<Option<Box<dyn Case + 'a>>> {
    let Some(inp) = inputs(ctx)? else { return Ok(None) };
    let dz = gpu::buffer(ctx.device, "bitsparse.bench.dz", ctx.dense_bytes())?;
    Ok(Some(Box::new(Plain {
        kernels: dense(ctx)?,
        op: Op::PlainBackward,
        ins: vec![inp.r_buf.clone(), inp.z_buf.clone()],
        out: dz,
        dtype: ctx.dtype,
        n: ctx.n(),
    })))
}

struct Plain {
    kernels: DenseAct,
    op: Op,
    ins: Vec<wgpu::Buffer>,
    out: wgpu::Buffer,
    dtype: DType,
    n: u64,
}

impl Case for Plain {
    fn op(&self) -> Op {
        self.op
    }
    fn sign_pack(&self) -> bool {
        false
    }
    fn bytes_moved(&self) -> u64 {
        (self.ins.len() as u64 + 1) * self.n * self.dtype.bytes()
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        self.ins.iter().chain([&self.out]).collect()
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let b = self.n * self.dtype.bytes();
        match self.op {
            Op::PlainForward => self.kernels.forward_dtype(
                encoder,
                self.dtype,
                range(&self.ins[0], b),
                range(&self.out, b),
                self.n,
                ACT,
            ),
            _ => self.kernels.backward_dtype(
                encoder,
                self.dtype,
                range(&self.ins[0], b),
                range(&self.ins[1], b),
                range(&self.out, b),
                self.n,
                ACT,
            ),
        }
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let Some(inp) = inputs(ctx)? else { return Ok(Check::default()) };
        let note = match self.op {
            Op::PlainForward => {
                compare(ctx, "plain forward a", &self.out, &act::forward_dtype(&inp.z, self.dtype, ACT)?.1)?
            }
            _ => compare(
                ctx,
                "plain backward dL/dz",
                &self.out,
                &act::backward_dtype(&inp.r, &inp.z, self.dtype, ACT)?.0,
            )?,
        };
        Ok(Check { note, ..Default::default() })
    }
}
