//! The four training modes and what one step of each does, times and measures.

use std::time::{Duration, Instant};

use bitsparse_burn::{BitSparse, Error as BsError, StepReport};
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{DType, Device, FloatDType, Int, Tensor};

use crate::data::Batch;
use crate::model::Gpt;

/// A way of training the same model.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Burn's autodiff, dense MLP blocks.
    Dense,
    /// Burn's autodiff, BitSparse MLP blocks.
    BitSparse,
    /// Burn's balanced gradient checkpointing, dense MLP blocks.
    CkptDense,
    /// Burn's balanced gradient checkpointing, BitSparse MLP blocks.
    CkptBitSparse,
}

impl Mode {
    /// All modes, in reporting order.
    pub const ALL: [Mode; 4] = [Mode::Dense, Mode::BitSparse, Mode::CkptDense, Mode::CkptBitSparse];

    /// The name used on the command line and in the JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Dense => "dense",
            Mode::BitSparse => "bitsparse",
            Mode::CkptDense => "ckpt_dense",
            Mode::CkptBitSparse => "ckpt_bitsparse",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| format!("unknown mode '{s}' (expected dense, bitsparse, ckpt_dense, ckpt_bitsparse)"))
    }

    /// Position in [`Mode::ALL`] (the plot's colour).
    pub fn index(self) -> usize {
        Mode::ALL.iter().position(|&m| m == self).expect("every mode is in ALL")
    }

    /// Whether the MLP blocks run BitSparse.
    pub fn is_bitsparse(self) -> bool {
        matches!(self, Mode::BitSparse | Mode::CkptBitSparse)
    }

    /// Whether the autodiff device checkpoints.
    pub fn is_checkpointed(self) -> bool {
        matches!(self, Mode::CkptDense | Mode::CkptBitSparse)
    }

    /// The dense mode a BitSparse mode must match bit for bit.
    pub fn dense_partner(self) -> Option<Mode> {
        match self {
            Mode::BitSparse => Some(Mode::Dense),
            Mode::CkptBitSparse => Some(Mode::CkptDense),
            _ => None,
        }
    }

    /// The autodiff device this mode trains on.
    pub fn device(self, base: &Device) -> Device {
        let ad = base.clone().autodiff();
        if self.is_checkpointed() {
            ad.gradient_checkpointing()
        } else {
            ad
        }
    }
}

/// Errors of a step; a BitSparse overflow is recoverable (grow and re-run).
pub type StepResult<T> = Result<T, BsError>;

/// One mode's model, optimizer and device.
pub struct Trainer {
    /// The mode.
    pub mode: Mode,
    /// Its autodiff device.
    pub device: Device,
    /// The model (replaced by every optimizer step).
    pub model: Gpt,
    optim: ModuleOptimizer,
    lr: f64,
    ctx: Option<BitSparse>,
    /// Arena overflows met (each one grew the arena and re-ran the step).
    pub overflows: u32,
    /// F32 master weights and the loss scale, where the model computes in F16.
    mixed: Option<MixedPrecision>,
}

/// Mixed precision for a model that computes in F16: the weights AdamW updates are an F32 copy (the
/// master weights, with the same parameter ids, on the same device), its moments F32 too, and the F16
/// model the step runs is that copy rounded after every update; the loss is multiplied by `scale`
/// before the backward and the gradients divided by it in F32 (dynamic loss scaling: a step whose
/// gradients hold an infinity or a NaN is skipped and the scale halved, and it doubles after
/// [`LossScale::GROWTH_INTERVAL`] steps in a row without one).
///
/// Why: pure F16 (weights, gradients and AdamW's moments all F16) broke the pre-trained H200 model at
/// its first update, every mode NaN from the second step, dense included (twenty-third session); on
/// lavapipe (d = 128, 4 layers, lr 5e-4, 100 F32 pre-training steps) its loss rose from 2.35 to 2.87 in
/// two steps where F32 went to 2.27 and 2.33 (twenty-fourth session, `demos/burn_gpt/README.md`).
#[derive(Clone)]
struct MixedPrecision {
    master: Gpt,
    scale: LossScale,
}

/// Dynamic loss scaling: the factor the loss is multiplied by before the backward.
#[derive(Copy, Clone, Debug, PartialEq)]
struct LossScale {
    scale: f32,
    good_steps: u32,
}

impl LossScale {
    /// The scale at the start. It must itself be an F16 number (at most 65504: 2^16 and above round to
    /// infinity, and every update is skipped until the scale is halved below it), and the backward
    /// starts from it (the scaled loss's own value is never used), so the logits' gradients, each at most
    /// 1/tokens of the step, times it stay far inside F16's range.
    const INITIAL: f32 = 4096.0;
    /// Steps without a non-finite gradient after which the scale doubles (PyTorch's `GradScaler`
    /// default).
    const GROWTH_INTERVAL: u32 = 2000;

    fn new(scale: f32) -> LossScale {
        LossScale { scale, good_steps: 0 }
    }

    /// After a step whose gradients were all finite (`true`) or not.
    fn record(&mut self, finite: bool) {
        if finite {
            self.good_steps += 1;
            if self.good_steps == Self::GROWTH_INTERVAL {
                self.scale *= 2.0;
                self.good_steps = 0;
            }
        } else {
            self.scale /= 2.0;
            self.good_steps = 0;
        }
    }
}

impl MixedPrecision {
    /// F16 gradients of the model (same parameter ids as the master) as unscaled F32 gradients of the
    /// master, and the sum of all their elements: finite exactly when every gradient is (a sum of F32
    /// values that are F16-finite cannot overflow at this model's sizes).
    fn unscale(&self, mut grads16: GradientsParams) -> (GradientsParams, Option<Tensor<1>>) {
        struct Unscale<'a> {
            grads16: &'a mut GradientsParams,
            grads32: GradientsParams,
            inv_scale: f64,
            check: Option<Tensor<1>>,
        }
        impl ModuleVisitor for Unscale<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                if let Some(g) = self.grads16.remove::<D>(param.id) {
                    let g = g.cast(FloatDType::F32).mul_scalar(self.inv_scale);
                    let s = g.clone().sum();
                    self.check = Some(match self.check.take() {
                        Some(c) => c + s,
                        None => s,
                    });
                    self.grads32.register(param.id, g);
                }
            }
        }
        let mut v = Unscale {
            grads16: &mut grads16,
            grads32: GradientsParams::new(),
            inv_scale: 1.0 / f64::from(self.scale.scale),
            check: None,
        };
        self.master.visit(&mut v);
        (v.grads32, v.check)
    }

    /// The F16 model of `master`'s weights: each parameter rounded to F16 as a new leaf that requires
    /// gradients, with its id and its autodiff strategy (gradient checkpointing) kept; the other fields
    /// (the BitSparse context) taken from `model`.
    fn rounded(master: &Gpt, model: &Gpt) -> Gpt {
        struct Round;
        impl ModuleMapper for Round {
            fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
                param.map(|t| {
                    let strategy = t.gradient_checkpointing_strategy();
                    let mut r = Tensor::from_inner(t.inner().cast(FloatDType::F16));
                    if let Some(s) = strategy {
                        r = r.with_gradient_checkpointing_strategy(s);
                    }
                    r.require_grad()
                })
            }
        }
        let ctx = model.blocks.first().and_then(|b| b.mlp.ctx.clone());
        master.clone().map(&mut Round).with_bitsparse(ctx.as_ref())
    }
}

/// What one applied step gave.
#[derive(Copy, Clone, Debug)]
pub struct StepOutcome {
    /// The loss of the step's forward (the weights before the update).
    pub loss: f32,
    /// Wall clock of the step: forward, backward, status read (BitSparse), optimizer, loss read.
    pub elapsed: Duration,
    /// The arena's report (BitSparse modes).
    pub report: Option<StepReport>,
    /// Whether the update was skipped (mixed precision: a gradient was not finite at this loss scale).
    pub skipped: bool,
}

/// Bytes a forward left in use, from the measuring step.
#[derive(Copy, Clone, Debug, Default, serde::Serialize)]
pub struct MemoryMeasure {
    /// Burn pool bytes in use after the forward minus before it.
    pub pool_bytes: i64,
    /// BitSparse arena bytes the forward used.
    pub arena_bytes: u64,
    /// Tokens of the forward.
    pub tokens: usize,
}

impl MemoryMeasure {
    /// (pool + arena) ÷ tokens.
    pub fn per_token(&self) -> f64 {
        (self.pool_bytes as f64 + self.arena_bytes as f64) / self.tokens as f64
    }

    /// The mean of `per_token` over `measures` (layers, devices); `None` when there are none.
    pub fn mean_per_token(measures: &[MemoryMeasure]) -> Option<f64> {
        (!measures.is_empty())
            .then(|| measures.iter().map(MemoryMeasure::per_token).sum::<f64>() / measures.len() as f64)
    }
}

impl Trainer {
    /// A trainer of `mode` starting from (a bit-exact copy of) `initial`.
    ///
    /// A model whose weights land in F16 (`base` configured so, `--dtype f16`) trains in mixed
    /// precision: AdamW updates F32 master weights copied from `initial` (see [`MixedPrecision`]).
    pub fn new(mode: Mode, base: &Device, initial: &Gpt, lr: f64, ctx: &BitSparse) -> Trainer {
        let device = mode.device(base);
        let ctx = mode.is_bitsparse().then(|| ctx.clone());
        let model = initial.copy_to(&device).with_bitsparse(ctx.as_ref());
        let mixed = model.is_f16().then(|| MixedPrecision {
            master: initial.copy_to_dtype(&device, DType::F32),
            scale: LossScale::new(LossScale::INITIAL),
        });
        Trainer { mode, device, model, optim: adamw(), lr, ctx, overflows: 0, mixed }
    }

    /// The same trainer with its mixed precision's loss scale starting at `scale` (a test knob: a
    /// scale past F16's range forces skipped steps); no effect on an F32 trainer.
    pub fn with_loss_scale(mut self, scale: Option<f32>) -> Trainer {
        if let (Some(m), Some(s)) = (&mut self.mixed, scale) {
            m.scale = LossScale::new(s);
        }
        self
    }

    /// The loss scale of a mixed-precision trainer.
    pub fn loss_scale(&self) -> Option<f32> {
        self.mixed.as_ref().map(|m| m.scale.scale)
    }

    /// One training step on `batch`, timed from the start of the forward to the loss read. On an arena
    /// overflow no update is applied: the arena grows and the step re-runs (logged to stderr); only
    /// the successful attempt is timed.
    pub fn step(&mut self, batch: &Batch) -> StepResult<StepOutcome> {
        loop {
            let inputs = batch.inputs(&self.device);
            let targets = batch.targets(&self.device);
            let start = Instant::now();
            match self.try_step(inputs, targets, start) {
                Err(BsError::ArenaOverflow { needed, capacity }) => self.grow(needed, capacity)?,
                other => return other,
            }
        }
    }

    fn try_step(&mut self, inputs: Tensor<2, Int>, targets: Tensor<1, Int>, start: Instant) -> StepResult<StepOutcome> {
        if let Some(ctx) = &self.ctx {
            ctx.begin_step(&self.device)?;
        }
        let loss = self.model.loss(inputs, targets);
        let grads = match &self.mixed {
            Some(m) => loss.clone().mul_scalar(m.scale.scale).backward(),
            None => loss.backward(),
        };
        // The status read starts now and is collected after the optimizer step has been recorded and
        // flushed, so the GPU never idles for it; on an overflow the recorded update is dropped (the
        // model and optimizer from before it are kept) and the step re-runs. A mixed-precision step's
        // finiteness check is read with the loss, after the update is recorded, and a non-finite one
        // drops the update the same way.
        if let Some(ctx) = &self.ctx {
            ctx.request_status(&self.device)?;
        }
        let grads = GradientsParams::from_grads(grads, &self.model);
        let before = (self.ctx.is_some() || self.mixed.is_some()).then(|| self.optim.clone());
        let (candidate, master, check) = match &self.mixed {
            None => (self.optim.step(self.lr, self.model.clone(), grads), None, None),
            Some(m) => {
                let (grads, check) = m.unscale(grads);
                let master = self.optim.step(self.lr, m.master.clone(), grads);
                (MixedPrecision::rounded(&master, &self.model), Some(master), check)
            }
        };
        let report = match &self.ctx {
            Some(ctx) => match ctx.finish_step(&self.device) {
                Ok(r) => Some(r),
                Err(e) => {
                    if let Some(o) = before {
                        self.optim = o;
                    }
                    return Err(e);
                }
            },
            None => None,
        };
        let (loss, finite) = match check {
            Some(c) => {
                let v = read_floats(Tensor::cat(vec![loss.cast(FloatDType::F32), c], 0));
                (v.first().copied().unwrap_or(f32::NAN), v.get(1).is_some_and(|c| c.is_finite()))
            }
            None => (read_scalar(loss), true),
        };
        self.device.sync().map_err(|e| BsError::Burn(format!("sync: {e:?}")))?;
        if let Some(m) = &mut self.mixed {
            m.scale.record(finite);
        }
        if finite {
            self.model = candidate;
            if let (Some(m), Some(master)) = (&mut self.mixed, master) {
                m.master = master;
            }
        } else if let Some(o) = before {
            self.optim = o;
        }
        Ok(StepOutcome { loss, elapsed: start.elapsed(), report, skipped: !finite })
    }

    fn grow(&mut self, needed: u64, capacity: u64) -> StepResult<()> {
        let ctx = self.ctx.as_ref().expect("only BitSparse steps overflow");
        let new = ctx.grow(&self.device)?;
        self.overflows += 1;
        eprintln!(
            "{}: arena overflow ({needed} bytes needed, {capacity} available): grew it to {new} bytes, re-running the step",
            self.mode.name()
        );
        Ok(())
    }

    /// Runs `steps` steps on a throwaway copy (same weights, fresh optimizer) so that Burn's autotune
    /// has picked every kernel this mode uses before anything is timed or compared.
    pub fn warm_up(&self, batches: impl Iterator<Item = Batch>, base: &Device) -> StepResult<()> {
        let mut scratch = Trainer {
            mode: self.mode,
            device: self.device.clone(),
            model: self.model.copy_to(&self.device).with_bitsparse(self.ctx.as_ref()),
            optim: adamw(),
            lr: self.lr,
            ctx: self.ctx.clone(),
            overflows: 0,
            mixed: self
                .mixed
                .as_ref()
                .map(|m| MixedPrecision { master: m.master.copy_to_dtype(&self.device, DType::F32), scale: m.scale }),
        };
        for batch in batches {
            scratch.step(&batch)?;
        }
        base.sync().map_err(|e| BsError::Burn(format!("sync: {e:?}")))
    }

    /// The whole model's activation bytes on `batch`: an untimed forward + loss on the current model,
    /// pool bytes in use after it minus before it, plus the arena bytes the step used; the backward
    /// then releases the graph, and no update is applied.
    pub fn measure_model(&mut self, batch: &Batch, base: &Device) -> StepResult<MemoryMeasure> {
        let inputs = batch.inputs(&self.device);
        let targets = batch.targets(&self.device);
        let model = self.model.clone();
        self.measure(base, batch.tokens(), || model.loss(inputs.clone(), targets.clone()))
    }

    /// One MLP block's activation bytes: the block's forward on `x` (its real input, made a leaf that
    /// requires gradients as it would be inside the model), measured like [`Trainer::measure_model`].
    /// The figure includes the block's output (d floats per token) besides what its graph keeps.
    pub fn measure_mlp(&mut self, layer: usize, x: &Tensor<3>, base: &Device) -> StepResult<MemoryMeasure> {
        let x = Tensor::<3>::from_data(x.to_data(), &self.device).require_grad();
        let [b, t, _] = x.dims();
        let mlp = self.model.blocks[layer].mlp.clone();
        self.measure(base, b * t, || mlp.forward(x.clone()).sum())
    }

    /// Pool usage around `forward` (flushed and synced on both sides, so Burn's lazy fusion has really
    /// run it), then a backward to release the graph, and the arena's report; an overflow grows the
    /// arena and measures again.
    fn measure<const D: usize>(
        &mut self,
        base: &Device,
        tokens: usize,
        forward: impl Fn() -> Tensor<D>,
    ) -> StepResult<MemoryMeasure> {
        loop {
            settle(base)?;
            let before = pool_bytes(base)?;
            if let Some(ctx) = &self.ctx {
                ctx.begin_step(&self.device)?;
            }
            let out = forward();
            settle(base)?;
            let after = pool_bytes(base)?;
            let grads = out.backward();
            let arena = match &self.ctx {
                Some(ctx) => ctx.finish_step(&self.device).map(|r| r.used_bytes),
                None => Ok(0),
            };
            drop(grads);
            match arena {
                Ok(arena_bytes) => {
                    return Ok(MemoryMeasure { pool_bytes: after as i64 - before as i64, arena_bytes, tokens })
                }
                Err(BsError::ArenaOverflow { needed, capacity }) => self.grow(needed, capacity)?,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Submits Burn's pending work and waits for it, so that pool usage reflects everything recorded.
fn settle(base: &Device) -> StepResult<()> {
    base.flush().map_err(|e| BsError::Burn(format!("flush: {e:?}")))?;
    base.sync().map_err(|e| BsError::Burn(format!("sync: {e:?}")))
}

/// Bytes Burn's pools hold in live allocations (a blocking call: never inside a timed region).
fn pool_bytes(base: &Device) -> StepResult<u64> {
    base.memory_pool_usage()
        .map(|u| u.bytes_in_use)
        .ok_or_else(|| BsError::Burn("this device reports no memory pool usage".into()))
}

/// AdamW with Burn's defaults. (Its moments are F32 in every mode: a model that computes in F16 keeps
/// F32 master weights, and AdamW updates those.)
fn adamw() -> ModuleOptimizer {
    AdamWConfig::new().init()
}

/// The value of a one-element loss (a host read: it waits for the step).
pub fn read_scalar(loss: Tensor<1>) -> f32 {
    read_floats(loss).first().copied().unwrap_or(f32::NAN)
}

/// A tensor's elements, in whatever float type it holds (`--dtype`), widened to F32 (a host read).
fn read_floats(t: Tensor<1>) -> Vec<f32> {
    t.into_data().iter::<f32>().collect()
}

#[cfg(test)]
mod tests {
    use super::LossScale;

    #[test]
    fn loss_scale_halves_on_overflow_and_doubles_after_the_growth_interval() {
        let mut s = LossScale::new(LossScale::INITIAL);
        for _ in 1..LossScale::GROWTH_INTERVAL {
            s.record(true);
        }
        assert_eq!(s.scale, LossScale::INITIAL);
        s.record(false);
        assert_eq!(s, LossScale { scale: LossScale::INITIAL / 2.0, good_steps: 0 });
        for _ in 0..LossScale::GROWTH_INTERVAL {
            s.record(true);
        }
        assert_eq!(s, LossScale { scale: LossScale::INITIAL, good_steps: 0 });
    }
}
