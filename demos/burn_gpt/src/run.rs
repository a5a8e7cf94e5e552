//! The run: one device, one BitSparse context, one initial model, every mode trained on the same
//! batches step by step (interleaved, so each step's comparison happens while both models are at hand),
//! then the untimed memory measurements.

use std::collections::BTreeMap;

use bitsparse_burn::{BitSparse, BitSparseConfig};
use burn::module::Module;
use burn::tensor::wgpu::wgpu;
use burn::tensor::{Device, FloatDType};

use crate::data::{Corpus, Sampler, CORPUS};
use crate::model::{Gpt, GptShape};
use crate::train::{MemoryMeasure, Mode, StepOutcome, Trainer};
use crate::Args;

/// Batch indices of the warm-up steps start here, away from the measured ones (0..steps).
const WARMUP_BATCHES: u64 = 1 << 40;
/// Batch indices of the pre-training steps start here.
const PRETRAIN_BATCHES: u64 = 1 << 41;

/// The wgpu adapter the run used.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AdapterInfo {
    /// Adapter name.
    pub name: String,
    /// Graphics backend (vulkan, gl, ...).
    pub backend: String,
    /// Driver and its version.
    pub driver: String,
}

/// Everything one mode produced.
#[derive(Clone, Debug, Default)]
pub struct ModeResult {
    /// Loss of every measured step.
    pub losses: Vec<f32>,
    /// Wall clock of every measured step, ms.
    pub step_ms: Vec<f64>,
    /// The whole model's activation bytes (measuring step after training).
    pub model_memory: Option<MemoryMeasure>,
    /// Each MLP block alone.
    pub mlp_memory: Vec<MemoryMeasure>,
    /// Arena bytes used by the last measured step (BitSparse modes).
    pub arena_used_bytes: Option<u64>,
    /// Arena capacity after the run.
    pub arena_capacity_bytes: Option<u64>,
    /// Arena overflows (each grew the arena and re-ran its step).
    pub overflows: u32,
    /// Host time the BitSparse ops took in each measured step, ms (`StepReport::op_host_ns`).
    pub op_host_ms: Vec<f64>,
    /// Time the BitSparse ops took on CubeCL's server thread in each measured step, ms
    /// (`StepReport::op_server_ns`).
    pub op_server_ms: Vec<f64>,
    /// Measured steps whose update was skipped (mixed precision: a gradient not finite at the loss
    /// scale, which was then halved).
    pub skipped_steps: u64,
    /// The loss scale after the last measured step (mixed precision, `--dtype f16`).
    pub loss_scale: Option<f32>,
}

impl ModeResult {
    /// Median step time over the measured steps.
    pub fn median_ms(&self) -> Option<f64> {
        let mut v = self.step_ms.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
    }

    /// Activation bytes per token of the whole model.
    pub fn bytes_per_token(&self) -> Option<f64> {
        self.model_memory.map(|m| m.per_token())
    }

    /// Activation bytes per token of one MLP block (mean over the layers).
    pub fn mlp_bytes_per_token(&self) -> Option<f64> {
        MemoryMeasure::mean_per_token(&self.mlp_memory)
    }
}

/// A BitSparse mode against its dense partner.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Identity {
    /// The BitSparse mode.
    pub mode: &'static str,
    /// Its dense partner.
    pub partner: &'static str,
    /// Steps whose loss bits were compared / equal.
    pub loss_steps_compared: u64,
    /// Steps whose loss bits were equal.
    pub loss_steps_equal: u64,
    /// Steps after which every weight was compared.
    pub weight_steps_compared: u64,
    /// Steps after which every weight was bit-equal.
    pub weight_steps_equal: u64,
    /// The first step that differed (loss or weights), if any.
    pub first_mismatch_step: Option<u64>,
    /// The parameters that differed after the first step whose weights differed.
    pub first_mismatch_params: Vec<String>,
    /// The largest distance in units in the last place between two corresponding weights then.
    pub first_mismatch_max_ulp: Option<u64>,
    /// The same after the last compared step (the trajectories drift apart once they differ).
    pub last_step_max_ulp: Option<u64>,
}

impl Identity {
    fn new(mode: Mode, partner: Mode) -> Identity {
        Identity {
            mode: mode.name(),
            partner: partner.name(),
            loss_steps_compared: 0,
            loss_steps_equal: 0,
            weight_steps_compared: 0,
            weight_steps_equal: 0,
            first_mismatch_step: None,
            first_mismatch_params: Vec::new(),
            first_mismatch_max_ulp: None,
            last_step_max_ulp: None,
        }
    }

    /// Every comparison made was equal (and at least one was made).
    pub fn identical(&self) -> bool {
        self.loss_steps_compared > 0
            && self.loss_steps_equal == self.loss_steps_compared
            && self.weight_steps_equal == self.weight_steps_compared
    }

    fn record(&mut self, step: u64, loss_equal: bool, weights: Option<WeightDiff>) {
        self.loss_steps_compared += 1;
        self.loss_steps_equal += u64::from(loss_equal);
        let weights_equal = weights.as_ref().map(|w| w.differing.is_empty());
        if let Some(w) = weights {
            self.weight_steps_compared += 1;
            self.weight_steps_equal += u64::from(w.differing.is_empty());
            if !w.differing.is_empty() && self.first_mismatch_params.is_empty() {
                self.first_mismatch_params = w.differing;
                self.first_mismatch_max_ulp = Some(w.max_ulp);
            }
            self.last_step_max_ulp = Some(w.max_ulp);
        }
        if (!loss_equal || weights_equal == Some(false)) && self.first_mismatch_step.is_none() {
            self.first_mismatch_step = Some(step);
        }
    }
}

/// How the parameters of two models of the same architecture differ.
struct WeightDiff {
    /// Paths of the parameters whose bytes differ.
    differing: Vec<String>,
    /// Largest distance between two corresponding weights (F32 or F16), in units in the last place.
    max_ulp: u64,
}

impl WeightDiff {
    fn between(a: &[(String, Vec<u8>)], b: &[(String, Vec<u8>)], elem_bytes: usize) -> Result<WeightDiff, String> {
        if a.is_empty() || a.len() != b.len() {
            return Err(format!("cannot compare the weights: {} and {} parameters", a.len(), b.len()));
        }
        let mut differing = Vec::new();
        let mut max_ulp = 0;
        for ((name, x), (_, y)) in a.iter().zip(b) {
            if x != y {
                differing.push(name.clone());
                max_ulp = max_ulp.max(max_ulp_bytes(x, y, elem_bytes));
            }
        }
        Ok(WeightDiff { differing, max_ulp })
    }
}

/// Largest ULP distance between corresponding little-endian floats of `elem_bytes` bytes (4: F32, 2:
/// F16) of `x` and `y`.
fn max_ulp_bytes(x: &[u8], y: &[u8], elem_bytes: usize) -> u64 {
    // Sign-magnitude bits mapped onto a line where adjacent floats are adjacent integers.
    let line = |c: &[u8]| {
        let b = c.iter().rev().fold(0u64, |acc, &v| acc << 8 | u64::from(v));
        let sign = 1u64 << (8 * c.len() - 1);
        if b & sign != 0 {
            -((b & (sign - 1)) as i64)
        } else {
            b as i64
        }
    };
    x.chunks_exact(elem_bytes)
        .zip(y.chunks_exact(elem_bytes))
        .map(|(p, q)| line(p).abs_diff(line(q)))
        .max()
        .unwrap_or(0)
}

/// The outcome of a whole run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The adapter.
    pub adapter: AdapterInfo,
    /// Model shape.
    pub shape: GptShape,
    /// Per mode, for the modes run.
    pub modes: BTreeMap<Mode, ModeResult>,
    /// Per BitSparse mode whose partner ran.
    pub identity: Vec<Identity>,
    /// Nonzero share of relu(z) per layer at the last step.
    pub final_density: Vec<f64>,
    /// Tokens per step.
    pub tokens_per_step: usize,
    /// Wall clock of the whole run (device set-up to the last measurement), seconds.
    pub run_seconds: f64,
    /// Loss of the last pre-training step (`--pretrain`).
    pub pretrain_loss: Option<f32>,
}

impl RunResult {
    /// Whether every BitSparse mode matched its dense partner bit for bit; `None` when no pair ran.
    pub fn bit_identical(&self) -> Option<bool> {
        (!self.identity.is_empty()).then(|| self.identity.iter().all(Identity::identical))
    }

    /// Steps whose losses are reported (every `log_every`-th and the last).
    pub fn logged_steps(&self, args: &Args) -> Vec<u64> {
        (0..args.steps).filter(|s| s % args.log_every == 0 || *s + 1 == args.steps).collect()
    }
}

/// A second device on `setup`'s adapter (requested as CubeCL requests its own), registered with Burn,
/// whose default float type is `dtype`; its wgpu device and queue.
fn typed_device(
    setup: &burn::tensor::wgpu::WgpuSetup,
    dtype: FloatDType,
) -> Result<(Device, wgpu::Device, wgpu::Queue), String> {
    let name = crate::dtype_name(dtype);
    if dtype == FloatDType::F16 && !setup.adapter.features().contains(wgpu::Features::SHADER_F16) {
        return Err(format!("--dtype {name}: the adapter has no SHADER_F16"));
    }
    let (device, queue) = crate::parallel::request_device_as_cubecl(&setup.adapter, "burn-gpt measured device")
        .map_err(|e| format!("--dtype {name}: opening a second device: {e}"))?;
    let opened = burn::tensor::wgpu::WgpuSetup {
        instance: setup.instance.clone(),
        adapter: setup.adapter.clone(),
        device: device.clone(),
        queue: queue.clone(),
        backend: setup.backend,
    };
    let mut base = Device::wgpu_options()
        .setup(opened)
        .init()
        .map_err(|e| format!("--dtype {name}: Burn refused the device: {e:?}"))?;
    base.configure(dtype).map_err(|e| format!("--dtype {name}: {e:?}"))?;
    Ok((base, device, queue))
}

/// Trains every chosen mode and measures it.
pub fn run(args: &Args) -> Result<RunResult, String> {
    let started = std::time::Instant::now();
    let modes = args.modes();
    let (base, setup) =
        Device::wgpu_options().init_with_setup().map_err(|e| format!("no wgpu adapter could be opened: {e}"))?;
    // `--dtype f16`: the modes train on a second device of the adapter whose default float type is F16
    // (set before any tensor exists on it), from the model pre-trained on the first in F32, so the modes
    // start from the densities F32 training gives, in mixed precision (`train::MixedPrecision`: F32
    // master weights and AdamW, dynamic loss scaling). (Pure F16 pre-training went NaN by step 100 on
    // the H200, d = 768, 12 layers, and pure F16 modes there went NaN at their second step, dense too.
    // Casting the parameters on an F32 device instead leaves tensors Burn creates in F32: a dtype
    // mismatch at the memory measurement.)
    let measured = match args.dtype {
        FloatDType::F32 => None,
        dtype => Some(typed_device(&setup, dtype)?),
    };
    let (mbase, mdevice, mqueue) = match &measured {
        Some((b, d, q)) => (b.clone(), d, q),
        None => (base.clone(), &setup.device, &setup.queue),
    };
    let info = setup.adapter.get_info();
    let adapter = AdapterInfo {
        name: info.name.clone(),
        backend: info.backend.to_str().to_string(),
        driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
    };
    eprintln!("adapter: {} ({})", adapter.name, adapter.backend);
    let config =
        BitSparseConfig { tile_order: args.tile_order, ..BitSparseConfig::with_arena_bytes(args.arena_bytes()) };
    let ctx = BitSparse::new(&mbase, mdevice, mqueue, config).map_err(|e| format!("bitsparse context: {e}"))?;

    let corpus = Corpus::new(CORPUS);
    let sampler = Sampler::new(&corpus, args.seed, args.batch, args.context);
    let shape = GptShape {
        vocab: corpus.vocab_size(),
        d_model: args.d_model,
        n_layer: args.n_layer,
        n_head: args.n_head,
        context: args.context,
    };
    base.seed(args.seed);
    let initial = Gpt::new(&shape, &base, &ctx);
    initial.materialize_params();
    let (initial, pretrain_loss) = pretrain(args, initial, &base, &ctx, &sampler)?;
    // From here on the modes' device (the parameters are converted to its default type when they are
    // copied to it).
    let base = mbase;
    let mut trainers: Vec<Trainer> = modes
        .iter()
        .map(|&m| Trainer::new(m, &base, &initial, args.lr, &ctx).with_loss_scale(args.loss_scale))
        .collect();
    drop(initial);

    for t in &trainers {
        eprintln!("{}: {} warm-up step(s)", t.mode.name(), args.warmup);
        t.warm_up((0..args.warmup).map(|i| sampler.batch(WARMUP_BATCHES + i)), &base).map_err(|e| step_err(t, &e))?;
    }

    let mut results: BTreeMap<Mode, ModeResult> = modes.iter().map(|&m| (m, ModeResult::default())).collect();
    let mut identity: Vec<Identity> = modes
        .iter()
        .filter_map(|&m| m.dense_partner().filter(|p| modes.contains(p)).map(|p| Identity::new(m, p)))
        .collect();
    let mut last_model = None;
    for step in 0..args.steps {
        let batch = sampler.batch(step);
        let last = step + 1 == args.steps;
        if last {
            // The weights the last step's forward uses, for the density of relu(z) it saw.
            last_model = Some(trainers[0].model.clone());
        }
        let mut outcomes: BTreeMap<Mode, StepOutcome> = BTreeMap::new();
        for t in &mut trainers {
            let out = t.step(&batch).map_err(|e| step_err(t, &e))?;
            let r = results.get_mut(&t.mode).expect("mode result");
            r.losses.push(out.loss);
            r.step_ms.push(out.elapsed.as_secs_f64() * 1e3);
            r.skipped_steps += u64::from(out.skipped);
            r.loss_scale = t.loss_scale();
            if let Some(rep) = out.report {
                r.arena_used_bytes = Some(rep.used_bytes);
                r.arena_capacity_bytes = Some(rep.capacity_bytes);
                r.op_host_ms.push(rep.op_host_ns as f64 / 1e6);
                r.op_server_ms.push(rep.op_server_ns as f64 / 1e6);
            }
            outcomes.insert(t.mode, out);
        }
        let compare_weights = step % args.compare_every == 0 || last;
        for id in &mut identity {
            compare(
                id,
                step,
                &outcomes,
                &trainers,
                compare_weights,
                if args.dtype == FloatDType::F16 { 2 } else { 4 },
            )?;
        }
        if step % args.log_every == 0 || last {
            log_step(step, &outcomes, &identity);
        }
    }

    let last_batch = sampler.batch(args.steps - 1);
    let last_model = last_model.expect("at least one step");
    let mlp_inputs = mlp_inputs(&last_model, &last_batch, &base);
    let final_density = mlp_inputs.iter().zip(&last_model.blocks).map(|(x, b)| density(b, x)).collect();
    for t in &mut trainers {
        let model_memory = t.measure_model(&last_batch, &base).map_err(|e| step_err(t, &e))?;
        let mut mlp_memory = Vec::new();
        for (layer, x) in mlp_inputs.iter().enumerate() {
            mlp_memory.push(t.measure_mlp(layer, x, &base).map_err(|e| step_err(t, &e))?);
        }
        let r = results.get_mut(&t.mode).expect("mode result");
        r.model_memory = Some(model_memory);
        r.mlp_memory = mlp_memory;
        r.overflows = t.overflows;
        if t.mode.is_bitsparse() {
            r.arena_capacity_bytes = Some(ctx.arena_capacity_bytes(&base).map_err(|e| step_err(t, &e))?);
        }
    }
    Ok(RunResult {
        adapter,
        shape,
        modes: results,
        identity,
        final_density,
        tokens_per_step: args.batch * args.context,
        run_seconds: started.elapsed().as_secs_f64(),
        pretrain_loss,
    })
}

/// `--pretrain` steps of dense training from `initial`; the trained weights, bit-exact, on `base`.
pub(crate) fn pretrain(
    args: &Args,
    initial: Gpt,
    base: &Device,
    ctx: &BitSparse,
    sampler: &Sampler,
) -> Result<(Gpt, Option<f32>), String> {
    if args.pretrain == 0 {
        return Ok((initial, None));
    }
    let mut t = Trainer::new(Mode::Dense, base, &initial, args.lr, ctx);
    let mut loss = None;
    for i in 0..args.pretrain {
        let out = t.step(&sampler.batch(PRETRAIN_BATCHES + i)).map_err(|e| format!("pre-training step: {e}"))?;
        loss = Some(out.loss);
        if i % 100 == 0 || i + 1 == args.pretrain {
            eprintln!("pre-training step {i}: loss {:.4} ({:.0} ms)", out.loss, out.elapsed.as_secs_f64() * 1e3);
        }
    }
    let trained = t.model.valid();
    trained.materialize_params();
    Ok((trained, loss))
}

fn step_err(t: &Trainer, e: &bitsparse_burn::Error) -> String {
    format!("{} step: {e}", t.mode.name())
}

/// Compares one BitSparse mode with its partner after `step`: the loss bits always, every weight's
/// bytes when `weights` (a host read of all parameters of both models, outside any timed region).
fn compare(
    id: &mut Identity,
    step: u64,
    outcomes: &BTreeMap<Mode, StepOutcome>,
    trainers: &[Trainer],
    weights: bool,
    elem_bytes: usize,
) -> Result<(), String> {
    let find = |name: &str| Mode::ALL.into_iter().find(|m| m.name() == name).expect("mode");
    let (mode, partner) = (find(id.mode), find(id.partner));
    let loss_equal = outcomes[&mode].loss.to_bits() == outcomes[&partner].loss.to_bits();
    let model = |m: Mode| &trainers.iter().find(|t| t.mode == m).expect("trainer").model;
    let diff = match weights {
        true => Some(WeightDiff::between(&model(mode).param_bytes(), &model(partner).param_bytes(), elem_bytes)?),
        false => None,
    };
    id.record(step, loss_equal, diff);
    Ok(())
}

fn log_step(step: u64, outcomes: &BTreeMap<Mode, StepOutcome>, identity: &[Identity]) {
    let parts: Vec<String> = outcomes
        .iter()
        .map(|(m, o)| {
            let skipped = if o.skipped { ", update skipped: loss scale halved" } else { "" };
            format!("{} {:.4} ({:.0} ms{skipped})", m.name(), o.loss, o.elapsed.as_secs_f64() * 1e3)
        })
        .collect();
    let same = if identity.is_empty() {
        String::new()
    } else if identity.iter().all(|i| i.first_mismatch_step.is_none()) {
        " — bit-identical so far".into()
    } else {
        " — MISMATCH".into()
    };
    eprintln!("step {step}: {}{same}", parts.join(", "));
}

/// Each block's MLP input on `batch`, from a forward of `model` without autodiff.
fn mlp_inputs(model: &Gpt, batch: &crate::data::Batch, base: &Device) -> Vec<burn::tensor::Tensor<3>> {
    model.valid().forward_traced(batch.inputs(base)).1
}

/// Nonzero share of relu(fc1(x)): Burn's dense fc1 on the block's input, counted on the host.
fn density(block: &crate::model::Block, x: &burn::tensor::Tensor<3>) -> f64 {
    let fc1 = block.mlp.fc1.valid();
    let z = fc1.forward(x.clone()).into_data();
    let n = z.num_elements();
    z.iter::<f32>().filter(|&v| v > 0.0).count() as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::max_ulp_bytes;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn f16s(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn ulp_distance_f32_and_f16() {
        let one = 1.0f32;
        let next = f32::from_bits(one.to_bits() + 3);
        assert_eq!(max_ulp_bytes(&f32s(&[0.5, one]), &f32s(&[0.5, next]), 4), 3);
        // Across zero: +0 and the smallest negative subnormal are one step apart, as are -0 and +0 (0).
        assert_eq!(max_ulp_bytes(&f32s(&[0.0]), &f32s(&[-f32::from_bits(1)]), 4), 1);
        assert_eq!(max_ulp_bytes(&f32s(&[0.0]), &f32s(&[-0.0]), 4), 0);
        // F16 1.0 (0x3c00) against 0x3c05, and +1.0 against -1.0: 2 · 0x3c00.
        assert_eq!(max_ulp_bytes(&f16s(&[0x3c00, 0]), &f16s(&[0x3c05, 0]), 2), 5);
        assert_eq!(max_ulp_bytes(&f16s(&[0x3c00]), &f16s(&[0xbc00]), 2), 2 * 0x3c00);
    }
}
