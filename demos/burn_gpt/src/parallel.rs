//! `--devices N`: data-parallel training through Burn's own engine — burn-train's `Learner` under
//! `ExecutionStrategy::MultiDevice(devices, MultiDeviceOptim::OptimMainDevice)`: one worker thread per
//! device runs [`TrainStep::step`] on its replica (forked from the main device every step) and its
//! share of the batch (`split_dataloader`), the main device sums the gradients (`GradientsAccumulator`)
//! and applies AdamW. Each device has its own BitSparse codec and arena (one [`BitSparse`] holding
//! every device). Every chosen mode trains from the same initial weights on the same batches.
//!
//! Why not `DistributedDataParallel`: it all-reduces the gradients with CubeCL collectives, which only
//! its CUDA runtime implements (`cubecl-runtime`'s default `all_reduce` answers `NoDeviceTransport`,
//! and the wgpu server keeps that default).
//!
//! The arena's overflow protocol inside the Learner's step: [`TrainStep::step`] returns gradients to
//! the Learner, which applies them; so the step reads the arena status itself after the backward (a
//! blocking, counted read) and, on an overflow, drops the gradients, grows that device's arena and
//! recomputes the forward and backward before returning: an overflowed step's gradients never leave
//! the worker.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bitsparse_burn::{BitSparse, BitSparseConfig, Error as BsError, StepReport};
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::optim::AdamWConfig;
use burn::tensor::wgpu::{wgpu, WgpuSetup};
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_train::logger::{EvaluationProgressLogger, InMemoryMetricLogger, TrainingProgressLogger};
use burn_train::metric::MetricDefinition;
use burn_train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation, MetricsRendererTraining,
};
use burn_train::{
    ExecutionStrategy, InferenceStep, Learner, LearnerSummary, MultiDeviceOptim, SupervisedTraining, TrainOutput,
    TrainStep, TrainingStrategy,
};

use crate::data::{Batch, Corpus, Sampler, CORPUS};
use crate::model::{Gpt, GptShape};
use crate::run::AdapterInfo;
use crate::train::{read_scalar, MemoryMeasure, Mode, Trainer};
use crate::Args;

/// Batch indices of the warm-up steps start here, away from the measured ones (0..steps).
const WARMUP_BATCHES: u64 = 1 << 40;

/// Why the devices could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevicesError {
    /// No adapter of the backend at all.
    NoAdapter(String),
    /// More devices asked for than there are adapters (and `--share-adapter` was not given).
    TooFewAdapters {
        /// `--devices`.
        requested: usize,
        /// Adapters found.
        available: usize,
        /// Their names.
        names: Vec<String>,
        /// The backend searched.
        backend: String,
    },
    /// Opening a device (wgpu or Burn) failed.
    Open(String),
}

impl std::fmt::Display for DevicesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevicesError::NoAdapter(why) => write!(f, "no wgpu adapter could be opened: {why}"),
            DevicesError::TooFewAdapters { requested, available, names, backend } => write!(
                f,
                "--devices {requested}: only {available} {backend} adapter(s) available ({}); \
                 --share-adapter opens every device on the first one",
                names.join(", ")
            ),
            DevicesError::Open(why) => write!(f, "opening a device: {why}"),
        }
    }
}

/// One opened device: Burn's (without autodiff) and the wgpu handles BitSparse needs.
pub struct OpenedDevice {
    /// The Burn device.
    pub base: Device,
    wgpu_device: wgpu::Device,
    queue: wgpu::Queue,
    /// Its adapter.
    pub adapter: AdapterInfo,
}

/// The adapters of the backend (`WGPU_BACKEND`, else Vulkan/Metal/DX12), real GPUs only when there is
/// one (a CPU adapter such as lavapipe next to the GPUs is not a data-parallel device).
fn adapters() -> Result<(wgpu::Instance, Vec<wgpu::Adapter>, String), DevicesError> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let all = pollster::block_on(instance.enumerate_adapters(backends));
    let gpus: Vec<wgpu::Adapter> =
        all.iter().filter(|a| a.get_info().device_type != wgpu::DeviceType::Cpu).cloned().collect();
    let chosen = if gpus.is_empty() { all } else { gpus };
    let backend =
        chosen.first().map(|a| a.get_info().backend.to_str().to_string()).unwrap_or_else(|| format!("{backends:?}"));
    if chosen.is_empty() {
        return Err(DevicesError::NoAdapter(format!("none found for backends {backends:?}")));
    }
    Ok((instance, chosen, backend))
}

/// A device and queue on `adapter` requested as CubeCL requests its own (cubecl-wgpu 0.11.3,
/// `backend/wgsl.rs`): every feature of the adapter but `MAPPABLE_PRIMARY_BUFFERS`, its limits, and
/// wgpu's experimental features enabled. CubeCL sizes its kernels from the adapter's features, so a
/// device opened with fewer is unsafe for Burn; the H200's Vulkan adapter lists experimental ones
/// (mesh shaders, cooperative matrices, ray tracing), which wgpu refuses unless they are enabled.
pub fn request_device_as_cubecl(adapter: &wgpu::Adapter, label: &str) -> Result<(wgpu::Device, wgpu::Queue), String> {
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some(label),
        required_features: adapter.features() - wgpu::Features::MAPPABLE_PRIMARY_BUFFERS,
        required_limits: adapter.limits(),
        // SAFETY: the request CubeCL makes for the devices it opens itself; Burn's kernels are what
        // runs on this device, and they were written against it.
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        ..Default::default()
    }))
    .map_err(|e| e.to_string())
}

/// Opens `n` devices: device i on adapter i, or all on the first adapter with `share` (each its own
/// wgpu device and queue, opened with all of the adapter's features and limits, as CubeCL sizes its
/// kernels from the adapter), each registered with Burn.
pub fn open_devices(n: usize, share: bool) -> Result<Vec<OpenedDevice>, DevicesError> {
    let (instance, adapters, backend) = adapters()?;
    if n > adapters.len() && !share {
        return Err(DevicesError::TooFewAdapters {
            requested: n,
            available: adapters.len(),
            names: adapters.iter().map(|a| a.get_info().name).collect(),
            backend,
        });
    }
    (0..n)
        .map(|i| {
            let adapter = if share { adapters[0].clone() } else { adapters[i].clone() };
            let info = adapter.get_info();
            let (device, queue) = request_device_as_cubecl(&adapter, "burn-gpt data-parallel device")
                .map_err(|e| DevicesError::Open(format!("device {i} on {}: {e}", info.name)))?;
            let setup = WgpuSetup {
                instance: instance.clone(),
                adapter: adapter.clone(),
                device: device.clone(),
                queue: queue.clone(),
                backend: info.backend,
            };
            let base = Device::wgpu_options()
                .setup(setup)
                .init()
                .map_err(|e| DevicesError::Open(format!("Burn refused device {i}: {e:?}")))?;
            let adapter = AdapterInfo {
                name: info.name.clone(),
                backend: info.backend.to_str().to_string(),
                driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
            };
            Ok(OpenedDevice { base, wgpu_device: device, queue, adapter })
        })
        .collect()
}

/// One training sequence: `context` input ids and their next-token targets.
#[derive(Clone, Debug)]
pub struct Window {
    inputs: Vec<i32>,
    targets: Vec<i32>,
}

/// A device's micro-batch, on its device.
#[derive(Clone, Debug)]
pub struct GptBatch {
    /// `[batch, context]` ids.
    pub inputs: Tensor<2, Int>,
    /// `[batch · context]` targets.
    pub targets: Tensor<1, Int>,
}

#[derive(Clone)]
struct WindowBatcher {
    context: usize,
}

impl Batcher<Window, GptBatch> for WindowBatcher {
    fn batch(&self, items: Vec<Window>, device: &Device) -> GptBatch {
        let b = items.len();
        let inputs: Vec<i32> = items.iter().flat_map(|w| w.inputs.iter().copied()).collect();
        let targets: Vec<i32> = items.iter().flat_map(|w| w.targets.iter().copied()).collect();
        GptBatch {
            inputs: Tensor::from_data(TensorData::new(inputs, [b, self.context]), device),
            targets: Tensor::from_data(TensorData::new(targets, [b * self.context]), device),
        }
    }
}

/// What one device's step left for the report.
struct StepRecord {
    device: usize,
    step: u64,
    /// The loss tensor (read after the run: no extra host read inside the step).
    loss: Tensor<1>,
    start: Instant,
    end: Instant,
    report: Option<StepReport>,
    overflows: u32,
}

struct ProbeInner {
    ctx: Option<BitSparse>,
    devices: Vec<Device>,
    records: Mutex<Vec<StepRecord>>,
    error: Mutex<Option<String>>,
}

/// Shared by the replicas of a [`DpGpt`] (a skipped field: forks and optimizer steps keep it): the
/// BitSparse context of the mode (`None` for dense), the devices, and what each step recorded.
#[derive(Clone)]
pub struct Probe(Arc<ProbeInner>);

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("bitsparse", &self.0.ctx.is_some())
            .field("devices", &self.0.devices.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Probe {
    fn new(ctx: Option<BitSparse>, devices: Vec<Device>) -> Probe {
        Probe(Arc::new(ProbeInner { ctx, devices, records: Mutex::new(Vec::new()), error: Mutex::new(None) }))
    }

    fn fail(&self, e: String) {
        lock(&self.0.error).get_or_insert(e);
    }

    fn error(&self) -> Option<String> {
        lock(&self.0.error).clone()
    }

    fn take_records(&self) -> Vec<StepRecord> {
        std::mem::take(&mut *lock(&self.0.records))
    }

    /// One device's training step: forward, backward and — BitSparse — the arena status read; an
    /// overflow drops the gradients, grows the device's arena and recomputes the step.
    fn train_step(&self, model: &DpGpt, batch: GptBatch) -> Result<TrainOutput<()>, String> {
        let device = batch.inputs.device();
        let index = self
            .0
            .devices
            .iter()
            .position(|d| *d == device)
            .ok_or_else(|| format!("a batch arrived on {device:?}, which is not one of the run's devices"))?;
        let start = Instant::now();
        let mut overflows = 0;
        loop {
            if let Some(ctx) = &self.0.ctx {
                ctx.begin_step(&device).map_err(|e| format!("device {index}: {e}"))?;
            }
            let loss = model.gpt.loss(batch.inputs.clone(), batch.targets.clone());
            let grads = loss.backward();
            let report = match &self.0.ctx {
                // The step's one host synchronisation: the status read waits for the backward.
                Some(ctx) => match ctx.finish_step(&device) {
                    Ok(report) => Some(report),
                    Err(BsError::ArenaOverflow { needed, capacity }) => {
                        drop(grads);
                        let new = ctx.grow(&device).map_err(|e| format!("device {index}: {e}"))?;
                        overflows += 1;
                        eprintln!(
                            "device {index}: arena overflow ({needed} bytes needed, {capacity} available): grew it to \
                             {new} bytes, recomputing the step"
                        );
                        continue;
                    }
                    Err(e) => return Err(format!("device {index}: {e}")),
                },
                // Dense: the same one wait, for the same work.
                None => {
                    device.sync().map_err(|e| format!("device {index}: sync: {e:?}"))?;
                    None
                }
            };
            let end = Instant::now();
            let mut records = lock(&self.0.records);
            let step = records.iter().filter(|r| r.device == index).count() as u64;
            records.push(StepRecord { device: index, step, loss, start, end, report, overflows });
            drop(records);
            return Ok(TrainOutput::new(model, grads, ()));
        }
    }
}

/// The panic payload a failed worker step unwinds with (the message is in the [`Probe`]); Burn's
/// worker catches it and ends the training with an error. The process's panic hook lets it pass.
pub struct WorkerAbort;

/// The GPT as a burn-train model: [`TrainStep`] and [`InferenceStep`] around [`Gpt::loss`].
#[derive(Module, Debug)]
pub struct DpGpt {
    /// The model.
    pub gpt: Gpt,
    #[module(skip)]
    probe: Probe,
}

impl TrainStep for DpGpt {
    type Input = GptBatch;
    type Output = ();

    fn step(&self, batch: GptBatch) -> TrainOutput<()> {
        match self.probe.train_step(self, batch) {
            Ok(out) => out,
            Err(e) => {
                self.probe.fail(e);
                std::panic::panic_any(WorkerAbort)
            }
        }
    }
}

impl InferenceStep for DpGpt {
    type Input = GptBatch;
    type Output = ();

    fn step(&self, batch: GptBatch) {
        let _ = self.gpt.loss(batch.inputs, batch.targets);
    }
}

/// A renderer that shows nothing (`--json` keeps stdout for the one document; burn-train's CLI
/// renderer prints there). Progress goes to stderr from the run itself.
struct Quiet;

impl MetricsRendererTraining for Quiet {
    fn update_train(&mut self, _state: MetricState) {}
    fn update_valid(&mut self, _state: MetricState) {}
    fn on_train_end(&mut self, _summary: Option<LearnerSummary>) -> Result<(), Box<dyn std::error::Error>> {
        Ok(())
    }
}

impl MetricsRendererEvaluation for Quiet {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}
    fn on_test_end(&mut self, _summary: Option<LearnerSummary>) -> Result<(), Box<dyn std::error::Error>> {
        Ok(())
    }
}

impl TrainingProgressLogger for Quiet {
    fn start(&mut self, _epochs: usize, _start: usize, _items: Option<usize>, _label: Option<&str>) {}
    fn update_epoch(&mut self, _epoch: usize) {}
    fn start_split(&mut self, _split: &str, _items: usize) {}
    fn update_split(&mut self, _items: usize) {}
    fn end_split(&mut self) {}
    fn end(&mut self) {}
    fn log_event_training(&mut self, _event: String) {}
}

impl EvaluationProgressLogger for Quiet {
    fn start_global_progress(&mut self, _tests: usize) {}
    fn start_test(&mut self, _name: &str, _items: usize) {}
    fn update_test_progress(&mut self, _items: usize) {}
    fn end_test(&mut self) {}
    fn end_global_progress(&mut self) {}
    fn log_event_evaluation(&mut self, _event: String) {}
}

impl MetricsRenderer for Quiet {
    fn manual_close(&mut self) {}
    fn register_metric(&mut self, _definition: MetricDefinition) {}
}

/// The global batches and how they are dealt out: step k's batch is the sampler's batch k of
/// `devices × batch` sequences; device d takes rows `d·batch .. (d+1)·batch`.
struct Deal<'a> {
    sampler: Sampler<'a>,
    devices: usize,
    batch: usize,
}

impl Deal<'_> {
    /// The dataset of `steps` steps from batch index `first`, ordered so that burn-train's
    /// `split_dataloader` (contiguous equal slices, one per device) gives device d its rows of each
    /// step, in step order.
    fn dataset(&self, first: u64, steps: u64) -> InMemDataset<Window> {
        let batches: Vec<Batch> = (0..steps).map(|k| self.sampler.batch(first + k)).collect();
        let mut items = Vec::with_capacity(batches.len() * self.devices * self.batch);
        for d in 0..self.devices {
            for b in &batches {
                let part = b.rows(d * self.batch, self.batch);
                for j in 0..self.batch {
                    let c = part.context;
                    items.push(Window {
                        inputs: part.inputs[j * c..(j + 1) * c].to_vec(),
                        targets: part.targets[j * c..(j + 1) * c].to_vec(),
                    });
                }
            }
        }
        InMemDataset::new(items)
    }

    /// Device d's rows of batch `index`.
    fn part(&self, index: u64, d: usize) -> Batch {
        self.sampler.batch(index).rows(d * self.batch, self.batch)
    }
}

/// What one mode gave across the devices.
#[derive(Clone, Debug, Default)]
pub struct DpModeResult {
    /// Loss per measured step per device: `losses[step][device]`.
    pub losses: Vec<Vec<f32>>,
    /// Per measured step: the latest end of a device's step minus the previous one's (the first:
    /// from the earliest start), ms. From step 1 on each interval holds one optimizer update and one
    /// forward + backward per device.
    pub step_ms: Vec<f64>,
    /// Tokens of all devices per second over the measured steps after the first (see [`DpModeResult::step_ms`]).
    pub tokens_per_s: f64,
    /// Activation bytes per device, measured after training on that device's part of the last batch.
    pub memory: Vec<MemoryMeasure>,
    /// Arena bytes the last measured step used, per device.
    pub arena_used_bytes: Vec<u64>,
    /// Arena capacity per device after the run.
    pub arena_capacity_bytes: Vec<u64>,
    /// Overflows over the warm-up and measured steps (each grew that device's arena and recomputed its step).
    pub overflows: u32,
    /// Blocking status reads inside the steps (warm-up and measured), one per attempt.
    pub status_reads: u64,
    /// Every parameter's bytes after the run.
    weights: Vec<(String, Vec<u8>)>,
}

impl DpModeResult {
    /// Mean over the devices of each step's loss (the global batch's mean loss: equal parts).
    pub fn mean_losses(&self) -> Vec<f64> {
        self.losses.iter().map(|l| l.iter().map(|&v| v as f64).sum::<f64>() / l.len() as f64).collect()
    }

    /// Median of [`DpModeResult::step_ms`] from step 1 on (step 0 alone when it is the only one).
    pub fn median_ms(&self) -> Option<f64> {
        let mut v: Vec<f64> = if self.step_ms.len() > 1 { self.step_ms[1..].to_vec() } else { self.step_ms.clone() };
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
    }

    /// Activation bytes per token per device: the mean over the devices.
    pub fn bytes_per_token_per_device(&self) -> Option<f64> {
        MemoryMeasure::mean_per_token(&self.memory)
    }
}

/// A BitSparse mode against its dense partner across the devices.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DpIdentity {
    /// The BitSparse mode.
    pub mode: &'static str,
    /// Its dense partner.
    pub partner: &'static str,
    /// (step, device) losses compared.
    pub losses_compared: u64,
    /// Of them, bit-equal.
    pub losses_equal: u64,
    /// The first step where a device's loss differed.
    pub first_mismatch_step: Option<u64>,
    /// Every weight bit-equal after the last step.
    pub final_weights_equal: bool,
    /// The parameters that differed then.
    pub final_weights_differing: Vec<String>,
}

impl DpIdentity {
    /// Every loss and the final weights bit-equal.
    pub fn identical(&self) -> bool {
        self.losses_compared > 0 && self.losses_equal == self.losses_compared && self.final_weights_equal
    }
}

/// The outcome of a data-parallel run.
pub struct DpResult {
    /// Per device.
    pub adapters: Vec<AdapterInfo>,
    /// Model shape.
    pub shape: GptShape,
    /// Per mode run.
    pub modes: BTreeMap<Mode, DpModeResult>,
    /// Per BitSparse mode whose partner ran.
    pub identity: Vec<DpIdentity>,
    /// The burn-train strategy that ran.
    pub strategy: &'static str,
    /// Loss of the last pre-training step.
    pub pretrain_loss: Option<f32>,
    /// Wall clock of the whole run, seconds.
    pub run_seconds: f64,
}

impl DpResult {
    /// Whether every BitSparse mode matched its partner; `None` when no pair ran.
    pub fn bit_identical(&self) -> Option<bool> {
        (!self.identity.is_empty()).then(|| self.identity.iter().all(DpIdentity::identical))
    }
}

/// The data-parallel run.
pub fn run(args: &Args) -> Result<DpResult, String> {
    let started = Instant::now();
    let n = args.devices;
    let opened = open_devices(n, args.share_adapter).map_err(|e| e.to_string())?;
    for (i, d) in opened.iter().enumerate() {
        eprintln!("device {i}: {} ({})", d.adapter.name, d.adapter.backend);
    }
    let config =
        BitSparseConfig { tile_order: args.tile_order, ..BitSparseConfig::with_arena_bytes(args.arena_bytes()) };
    let ctx = BitSparse::new(&opened[0].base, &opened[0].wgpu_device, &opened[0].queue, config)
        .map_err(|e| format!("bitsparse context: {e}"))?;
    for d in &opened[1..] {
        ctx.add_device(&d.base, &d.wgpu_device, &d.queue).map_err(|e| format!("bitsparse context: {e}"))?;
    }
    let bases: Vec<Device> = opened.iter().map(|d| d.base.clone()).collect();

    let corpus = Corpus::new(CORPUS);
    let shape = GptShape {
        vocab: corpus.vocab_size(),
        d_model: args.d_model,
        n_layer: args.n_layer,
        n_head: args.n_head,
        context: args.context,
    };
    bases[0].seed(args.seed);
    let initial = Gpt::new(&shape, &bases[0], &ctx);
    initial.materialize_params();
    let pre_sampler = Sampler::new(&corpus, args.seed, args.batch, args.context);
    let (initial, pretrain_loss) = crate::run::pretrain(args, initial, &bases[0], &ctx, &pre_sampler)?;
    let deal =
        Deal { sampler: Sampler::new(&corpus, args.seed, n * args.batch, args.context), devices: n, batch: args.batch };
    let strategy = if n == 1 { "single_device" } else { "multi_device_optim_main_device" };

    let mut modes = BTreeMap::new();
    for mode in args.modes() {
        eprintln!(
            "{}: {} warm-up step(s), then {} step(s) on {n} device(s) ({strategy})",
            mode.name(),
            args.warmup,
            args.steps
        );
        let r = run_mode(args, mode, &bases, &ctx, &initial, &deal).map_err(|e| format!("{}: {e}", mode.name()))?;
        let losses = r.mean_losses();
        eprintln!(
            "{}: loss {:.4} → {:.4}, {:.0} tokens/s, {:.0} activation B/token/device, {} overflow(s)",
            mode.name(),
            losses.first().copied().unwrap_or(f64::NAN),
            losses.last().copied().unwrap_or(f64::NAN),
            r.tokens_per_s,
            r.bytes_per_token_per_device().unwrap_or(f64::NAN),
            r.overflows
        );
        modes.insert(mode, r);
    }
    let identity = modes
        .keys()
        .filter_map(|&m| m.dense_partner().filter(|p| modes.contains_key(p)).map(|p| compare(m, p, &modes)))
        .collect();
    Ok(DpResult {
        adapters: opened.iter().map(|d| d.adapter.clone()).collect(),
        shape,
        modes,
        identity,
        strategy,
        pretrain_loss,
        run_seconds: started.elapsed().as_secs_f64(),
    })
}

fn compare(mode: Mode, partner: Mode, modes: &BTreeMap<Mode, DpModeResult>) -> DpIdentity {
    let (a, b) = (&modes[&mode], &modes[&partner]);
    let mut id = DpIdentity {
        mode: mode.name(),
        partner: partner.name(),
        losses_compared: 0,
        losses_equal: 0,
        first_mismatch_step: None,
        final_weights_equal: false,
        final_weights_differing: Vec::new(),
    };
    for (step, (x, y)) in a.losses.iter().zip(&b.losses).enumerate() {
        for (p, q) in x.iter().zip(y) {
            id.losses_compared += 1;
            if p.to_bits() == q.to_bits() {
                id.losses_equal += 1;
            } else if id.first_mismatch_step.is_none() {
                id.first_mismatch_step = Some(step as u64);
            }
        }
    }
    id.final_weights_differing =
        a.weights.iter().zip(&b.weights).filter(|(x, y)| x.1 != y.1).map(|(x, _)| x.0.clone()).collect();
    id.final_weights_equal =
        !a.weights.is_empty() && a.weights.len() == b.weights.len() && id.final_weights_differing.is_empty();
    id
}

/// One Learner run of `steps` steps from batch `first`: the trained model and the records.
fn launch(
    args: &Args,
    mode: Mode,
    devices: &[Device],
    probe: &Probe,
    model: Gpt,
    deal: &Deal,
    first: u64,
    steps: u64,
) -> Result<(Gpt, Vec<StepRecord>), String> {
    let batcher = WindowBatcher { context: args.context };
    let train: Arc<dyn DataLoader<GptBatch>> =
        DataLoaderBuilder::new(batcher.clone()).batch_size(args.batch).build(deal.dataset(first, steps));
    let valid: Arc<dyn DataLoader<GptBatch>> =
        DataLoaderBuilder::new(batcher).batch_size(args.batch).build(InMemDataset::new(Vec::<Window>::new()));
    let dir = std::env::temp_dir().join(format!("burn-gpt-learner-{}", std::process::id()));
    let mut training = SupervisedTraining::new(&dir, train, valid)
        .with_training_strategy(TrainingStrategy::Default(ExecutionStrategy::multi(
            devices.to_vec(),
            MultiDeviceOptim::OptimMainDevice,
        )))
        .num_epochs(1)
        .renderer(Box::new(Quiet))
        .with_application_logger(None)
        .with_metric_logger(InMemoryMetricLogger::new());
    if mode.is_checkpointed() {
        training = training.gradient_checkpointing();
    }
    let learner = Learner::new(DpGpt { gpt: model, probe: probe.clone() }, AdamWConfig::new().init(), args.lr);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| training.launch(learner)));
    let _ = std::fs::remove_dir(&dir);
    if let Some(e) = probe.error() {
        return Err(e);
    }
    let result = outcome.map_err(|_| "the Learner panicked".to_string())?;
    if let Some(e) = result.error {
        return Err(format!("burn-train: {e}"));
    }
    let records = probe.take_records();
    let expected = steps as usize * devices.len();
    if records.len() != expected {
        return Err(format!("the Learner ran {} device steps, not {expected}", records.len()));
    }
    Ok((result.model.gpt, records))
}

fn run_mode(
    args: &Args,
    mode: Mode,
    bases: &[Device],
    ctx: &BitSparse,
    initial: &Gpt,
    deal: &Deal,
) -> Result<DpModeResult, String> {
    let n = bases.len();
    let devices: Vec<Device> = bases.iter().map(|b| mode.device(b)).collect();
    let mode_ctx = mode.is_bitsparse().then(|| ctx.clone());
    let fresh = || initial.copy_to(&devices[0]).with_bitsparse(mode_ctx.as_ref());
    let mut r = DpModeResult::default();
    let count = |records: &[StepRecord], r: &mut DpModeResult| {
        for rec in records {
            r.overflows += rec.overflows;
            if mode.is_bitsparse() {
                r.status_reads += 1 + u64::from(rec.overflows);
            }
        }
    };
    if args.warmup > 0 {
        // A throwaway run (Burn's autotune picks its kernels on each device here).
        let probe = Probe::new(mode_ctx.clone(), devices.clone());
        let (_, records) = launch(args, mode, &devices, &probe, fresh(), deal, WARMUP_BATCHES, args.warmup)?;
        count(&records, &mut r);
    }
    let probe = Probe::new(mode_ctx.clone(), devices.clone());
    let (trained, records) = launch(args, mode, &devices, &probe, fresh(), deal, 0, args.steps)?;
    count(&records, &mut r);

    let steps = args.steps as usize;
    r.losses = vec![vec![f32::NAN; n]; steps];
    let mut starts = vec![None::<Instant>; steps];
    let mut ends = vec![None::<Instant>; steps];
    r.arena_used_bytes = vec![0; n];
    for rec in records {
        let s = rec.step as usize;
        if s >= steps || rec.device >= n {
            return Err(format!("a step record out of range (step {s}, device {})", rec.device));
        }
        r.losses[s][rec.device] = read_scalar(rec.loss);
        starts[s] = Some(starts[s].map_or(rec.start, |t: Instant| t.min(rec.start)));
        ends[s] = Some(ends[s].map_or(rec.end, |t: Instant| t.max(rec.end)));
        if s + 1 == steps {
            if let Some(rep) = rec.report {
                r.arena_used_bytes[rec.device] = rep.used_bytes;
            }
        }
    }
    let ends: Vec<Instant> = ends.into_iter().map(|e| e.expect("every step ended")).collect();
    let first_start = starts[0].expect("step 0 started");
    r.step_ms = (0..steps)
        .map(|s| {
            let from = if s == 0 { first_start } else { ends[s - 1] };
            ends[s].saturating_duration_since(from).as_secs_f64() * 1e3
        })
        .collect();
    let tokens_per_step = (n * args.batch * args.context) as f64;
    r.tokens_per_s = if steps > 1 {
        tokens_per_step * (steps - 1) as f64 / ends[steps - 1].saturating_duration_since(ends[0]).as_secs_f64()
    } else {
        tokens_per_step / ends[0].saturating_duration_since(first_start).as_secs_f64()
    };
    r.weights = trained.param_bytes();

    // Untimed, one device at a time: each device's activation bytes on its part of the last batch,
    // measured as the single-device run measures them (pool bytes after the loss minus before the
    // forward, plus the arena's used bytes, ÷ tokens).
    for (d, base) in bases.iter().enumerate() {
        let mut t = Trainer::new(mode, base, &trained, args.lr, ctx);
        let m =
            t.measure_model(&deal.part(args.steps - 1, d), base).map_err(|e| format!("measuring device {d}: {e}"))?;
        r.overflows += t.overflows;
        r.memory.push(m);
        if mode.is_bitsparse() {
            r.arena_capacity_bytes.push(ctx.arena_capacity_bytes(base).map_err(|e| e.to_string())?);
        }
    }
    Ok(r)
}
