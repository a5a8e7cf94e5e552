//! The four training modes and what one step of each does, times and measures.

use std::time::{Duration, Instant};

use bitsparse_burn::{BitSparse, Error as BsError, StepReport};
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor};

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
    pub fn new(mode: Mode, base: &Device, initial: &Gpt, lr: f64, ctx: &BitSparse) -> Trainer {
        let device = mode.device(base);
        let ctx = mode.is_bitsparse().then(|| ctx.clone());
        let model = initial.copy_to(&device).with_bitsparse(ctx.as_ref());
        let optim = adamw(&model);
        Trainer { mode, device, model, optim, lr, ctx, overflows: 0 }
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
        let grads = loss.backward();
        // The status read starts now and is collected after the optimizer step has been recorded and
        // flushed, so the GPU never idles for it; on an overflow the recorded update is dropped (the
        // model and optimizer from before it are kept) and the step re-runs.
        if let Some(ctx) = &self.ctx {
            ctx.request_status(&self.device)?;
        }
        let grads = GradientsParams::from_grads(grads, &self.model);
        let before = self.ctx.is_some().then(|| self.optim.clone());
        let candidate = self.optim.step(self.lr, self.model.clone(), grads);
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
        self.model = candidate;
        let loss = read_scalar(loss);
        self.device.sync().map_err(|e| BsError::Burn(format!("sync: {e:?}")))?;
        Ok(StepOutcome { loss, elapsed: start.elapsed(), report })
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
            optim: adamw(&self.model),
            lr: self.lr,
            ctx: self.ctx.clone(),
            overflows: 0,
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

/// The value of a one-element loss (a host read: it waits for the step).
/// AdamW for `model`: epsilon 1e-4 where it trains in F16 (the default, 1e-5, is below F16's smallest
/// normal number, which a GPU may flush to zero; a weight whose gradient stayed zero would then be
/// updated by 0/0).
fn adamw(model: &Gpt) -> ModuleOptimizer {
    let config = AdamWConfig::new();
    if model.is_f16() {
        config.with_epsilon(1e-4).init()
    } else {
        config.init()
    }
}

pub fn read_scalar(loss: Tensor<1>) -> f32 {
    // Read in whatever float type the model trains in (`--dtype`), widened to F32.
    loss.into_data().iter::<f32>().next().unwrap_or(f32::NAN)
}
