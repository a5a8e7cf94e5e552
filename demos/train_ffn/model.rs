//! The model and one training step, recorded into a command encoder.
//!
//! Next-character prediction: the embeddings of the previous k characters (one table per position) are
//! summed into x₀ (BF16), then L residual ReLU² FFN blocks
//!     h = rmsnorm(x_l) (f32, no gain),  z = bf16(W₁ h),  r = relu(z),  a = bf16(r²),  x_{l+1} = bf16(x_l + W₂ a)
//! then rmsnorm, the unembedding and softmax cross-entropy; Adam on all weights (f32, one buffer).
//! Backward recomputes h from the cached x_l; the hidden activation is the cache mode's business
//! ([`super::cache::HiddenCache`]). Per step the host writes the batch and the step info, records, and
//! submits once; statistics (loss, weight hashes, nonzero counts) accumulate in a GPU history buffer that
//! the host copies out only at logging points.

use bitsparse::cpu::SplitMix64;
use bitsparse::host::sync;
use bitsparse::Result;

use super::cache::{self, CacheBytes, HiddenCache, StepBuffers};
use super::config::{CacheMode, Config};
use super::data::Corpus;
use super::gpu::{fbits, grid_1d, record, Bind, Dispatch, GemmVariant, Gpu, Kernel};

/// RMS-norm epsilon.
pub const RMS_EPS: f32 = 1e-5;
/// Adam moments.
const BETA1: f32 = 0.9;
const BETA2: f32 = 0.99;
const ADAM_EPS: f32 = 1e-8;
/// Parameter tensors start at multiples of this many f32 (256 bytes, the largest offset alignment).
const PARAM_ALIGN: u64 = 64;
/// History words before the per-layer counts.
pub const HIST_HEAD: u32 = 4;

/// Offsets (in f32 elements) of each weight tensor in the parameter buffer.
#[derive(Clone, Debug)]
pub struct ParamLayout {
    /// Embedding tables, (k·V) × d.
    pub embed: (u64, u64),
    /// Unembedding, V × d.
    pub unembed: (u64, u64),
    /// W₁ of each layer, H × d.
    pub w1: Vec<(u64, u64)>,
    /// W₂ of each layer, d × H.
    pub w2: Vec<(u64, u64)>,
    /// Total elements.
    pub total: u64,
}

impl ParamLayout {
    fn new(cfg: &Config, vocab: u32) -> ParamLayout {
        let mut at = 0u64;
        let mut take = |n: u64| {
            let r = (at, n);
            at = (at + n).div_ceil(PARAM_ALIGN) * PARAM_ALIGN;
            r
        };
        let d = cfg.d as u64;
        let h = cfg.hidden() as u64;
        let embed = take(cfg.context as u64 * vocab as u64 * d);
        let unembed = take(vocab as u64 * d);
        let mut w1 = Vec::new();
        let mut w2 = Vec::new();
        for _ in 0..cfg.layers {
            w1.push(take(h * d));
            w2.push(take(d * h));
        }
        ParamLayout { embed, unembed, w1, w2, total: at }
    }

    /// Initial weights from the seed: uniform with the standard deviation each tensor wants.
    pub fn init(&self, cfg: &Config) -> Vec<f32> {
        let mut p = vec![0.0f32; self.total as usize];
        let mut rng = SplitMix64(cfg.seed);
        let mut fill = |(off, n): (u64, u64), std: f32| {
            let amp = std * 3f32.sqrt();
            for x in &mut p[off as usize..(off + n) as usize] {
                *x = amp * rng.symmetric();
            }
        };
        let d = cfg.d as f32;
        let h = cfg.hidden() as f32;
        fill(self.embed, 1.0);
        fill(self.unembed, 1.0 / d.sqrt());
        for l in 0..cfg.layers as usize {
            fill(self.w1[l], 1.0 / d.sqrt());
            fill(self.w2[l], 0.5 / h.sqrt());
        }
        p
    }
}

/// Records something into an encoder (profiling).
type RecordFn<'a> = dyn FnMut(&mut wgpu::CommandEncoder) -> Result<()> + 'a;
/// Runs a recorder alone and charges its time to a label (profiling).
type TimedFn<'a> = dyn FnMut(&str, &mut RecordFn) -> Result<()> + 'a;

/// Per-step statistics read back from the history buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct StepStats {
    pub step: u32,
    pub loss: f32,
    /// Two hashes of all weights after the step's update.
    pub weight_hash: (u32, u32),
    /// Nonzeros of relu(z) per layer.
    pub nonzeros: Vec<u32>,
}

struct Buffers {
    params: wgpu::Buffer,
    grads: wgpu::Buffer,
    adam_m: wgpu::Buffer,
    adam_v: wgpu::Buffer,
    rows: wgpu::Buffer,
    targets: wgpu::Buffer,
    step_info: wgpu::Buffer,
    hist: wgpu::Buffer,
    xs: Vec<wgpu::Buffer>,
    h: wgpu::Buffer,
    z: wgpu::Buffer,
    y: wgpu::Buffer,
    dh: wgpu::Buffer,
    dx: wgpu::Buffer,
    g: wgpu::Buffer,
    dz: wgpu::Buffer,
    logits: wgpu::Buffer,
    dlogits: wgpu::Buffer,
    tok_loss: wgpu::Buffer,
}

/// The prebuilt dispatches of one step, in order, split where the cache hooks in.
#[derive(Default)]
struct Plan {
    embed: Vec<Dispatch>,
    pre: Vec<Vec<Dispatch>>,
    post: Vec<Vec<Dispatch>>,
    head: Vec<Dispatch>,
    bpre: Vec<Vec<Dispatch>>,
    bpost: Vec<Vec<Dispatch>>,
    tail: Vec<Dispatch>,
    /// The weight update, gated by the cache when it offers a gate.
    adam: Option<Dispatch>,
    stats: Vec<Dispatch>,
}

/// A model on the GPU with one cache mode.
pub struct Model {
    pub cfg: Config,
    pub vocab: u32,
    pub layout: ParamLayout,
    pub mode: CacheMode,
    bufs: Buffers,
    cache: Box<dyn HiddenCache>,
    plan: Plan,
    hist_stride: u32,
    step: u32,
    /// Step at which the checkpoint (weights and Adam moments) was taken.
    checkpoint_step: u32,
    backup: [wgpu::Buffer; 3],
}

fn gemm(
    gpu: &mut Gpu,
    label: &'static str,
    v: GemmVariant,
    mnk: (u32, u32, u32),
    ld: (u32, u32, u32),
    [a, b, c]: [Bind; 3],
) -> Result<Dispatch> {
    let (m, n, k) = mnk;
    if m % 4 != 0 || n % 4 != 0 {
        return Err(bitsparse::Error::InvalidArgument(format!("{label}: GEMM shape {m}×{n} is not a multiple of 4")));
    }
    let groups = (n.div_ceil(4).div_ceil(16), m.div_ceil(4).div_ceil(16), 1);
    gpu.dispatch(label, Kernel::Gemm(v), [m, n, k, ld.0, ld.1, ld.2, 0, 0], &[a, b, c], groups)
}

fn f32s(buf: &wgpu::Buffer, (off, n): (u64, u64)) -> Bind<'_> {
    Bind { buffer: buf, offset: off * 4, size: n * 4 }
}

impl Model {
    /// Allocates buffers, uploads the seeded initial weights and prebuilds the step.
    pub fn new(gpu: &mut Gpu, cfg: &Config, corpus: &Corpus, mode: CacheMode) -> Result<Model> {
        cfg.validate()?;
        let vocab = corpus.vocab;
        let layout = ParamLayout::new(cfg, vocab);
        let (t, d, hd, l_n) = (cfg.tokens as u64, cfg.d as u64, cfg.hidden() as u64, cfg.layers as usize);
        let hist_stride = (HIST_HEAD + cfg.layers).div_ceil(4) * 4;
        let pbytes = layout.total * 4;
        let bufs = Buffers {
            params: gpu.buffer("params", pbytes),
            grads: gpu.buffer("grads", pbytes),
            adam_m: gpu.buffer("adam_m", pbytes),
            adam_v: gpu.buffer("adam_v", pbytes),
            rows: gpu.buffer("rows", t * cfg.context as u64 * 4),
            targets: gpu.buffer("targets", t * 4),
            step_info: gpu.buffer("step_info", 32),
            hist: gpu.buffer("history", cfg.steps as u64 * hist_stride as u64 * 4),
            xs: (0..=l_n).map(|_| gpu.buffer("x", t * d * 2)).collect(),
            h: gpu.buffer("h", t * d * 4),
            z: gpu.buffer("z", t * hd * 2),
            y: gpu.buffer("y", t * d * 4),
            dh: gpu.buffer("dh", t * d * 4),
            dx: gpu.buffer("dx", t * d * 4),
            g: gpu.buffer("g", t * hd * 2),
            dz: gpu.buffer("dz", t * hd * 2),
            logits: gpu.buffer("logits", t * vocab as u64 * 4),
            dlogits: gpu.buffer("dlogits", t * vocab as u64 * 4),
            tok_loss: gpu.buffer("tok_loss", t * 4),
        };
        gpu.queue.write_buffer(&bufs.params, 0, bytemuck::cast_slice(&layout.init(cfg)));
        let cache = cache::build(mode, gpu, &StepBuffers { z: &bufs.z, g: &bufs.g, dz: &bufs.dz }, cfg)?;
        let plan = Self::plan(gpu, cfg, vocab, &layout, &bufs, cache.as_ref(), hist_stride)?;
        let backup =
            [gpu.buffer("params.ckpt", pbytes), gpu.buffer("adam_m.ckpt", pbytes), gpu.buffer("adam_v.ckpt", pbytes)];
        let mut m = Model {
            cfg: cfg.clone(),
            vocab,
            layout,
            mode,
            bufs,
            cache,
            plan,
            hist_stride,
            step: 0,
            checkpoint_step: 0,
            backup,
        };
        m.checkpoint(gpu);
        Ok(m)
    }

    fn plan(
        gpu: &mut Gpu,
        cfg: &Config,
        vocab: u32,
        lay: &ParamLayout,
        b: &Buffers,
        cache: &dyn HiddenCache,
        stride: u32,
    ) -> Result<Plan> {
        let (t, d, hd, k, v) = (cfg.tokens, cfg.d, cfg.hidden(), cfg.context, vocab);
        let w = Bind::whole;
        let mut p = Plan::default();
        let tok_groups = (t.div_ceil(64), 1, 1);
        let xw = (t as u64 * d as u64) / 2;
        let zw = (t as u64 * hd as u64) / 2;
        let bf =
            |trans_a, trans_b, a_bf16, b_bf16, out_bf16| GemmVariant { trans_a, trans_b, a_bf16, b_bf16, out_bf16 };

        p.embed.push(gpu.dispatch(
            "embed_forward",
            Kernel::EmbedForward,
            [t, d, k, 0, 0, 0, 0, 0],
            &[w(&b.rows), f32s(&b.params, lay.embed), w(&b.xs[0])],
            grid_1d(xw),
        )?);
        for l in 0..cfg.layers as usize {
            let pre = vec![
                gpu.dispatch(
                    "rms_forward",
                    Kernel::RmsForward,
                    [t, d, fbits(RMS_EPS), 0, 0, 0, 0, 0],
                    &[w(&b.xs[l]), w(&b.h)],
                    tok_groups,
                )?,
                // z = h · W₁ᵀ  (T×d · (H×d)ᵀ), rounded to BF16
                gemm(
                    gpu,
                    "z=h·W1ᵀ",
                    bf(false, true, false, false, true),
                    (t, hd, d),
                    (d, d, hd),
                    [w(&b.h), f32s(&b.params, lay.w1[l]), w(&b.z)],
                )?,
                gpu.dispatch(
                    "count_relu",
                    Kernel::CountRelu,
                    [zw as u32, stride, HIST_HEAD + l as u32, 0, 0, 0, 0, 0],
                    &[w(&b.z), w(&b.hist), w(&b.step_info)],
                    grid_1d(zw),
                )?,
            ];
            let post = vec![
                // y = a · W₂ᵀ  (T×H · (d×H)ᵀ)
                gemm(
                    gpu,
                    "y=a·W2ᵀ",
                    bf(false, true, true, false, false),
                    (t, d, hd),
                    (hd, hd, d),
                    [w(cache.forward_a(l)), f32s(&b.params, lay.w2[l]), w(&b.y)],
                )?,
                gpu.dispatch(
                    "residual",
                    Kernel::ResidualAdd,
                    [xw as u32, 0, 0, 0, 0, 0, 0, 0],
                    &[w(&b.xs[l]), w(&b.y), w(&b.xs[l + 1])],
                    grid_1d(xw),
                )?,
            ];
            p.pre.push(pre);
            p.post.push(post);
        }
        let last = cfg.layers as usize;
        p.head = vec![
            gpu.dispatch(
                "rms_final",
                Kernel::RmsForward,
                [t, d, fbits(RMS_EPS), 0, 0, 0, 0, 0],
                &[w(&b.xs[last]), w(&b.h)],
                tok_groups,
            )?,
            gemm(
                gpu,
                "logits",
                bf(false, true, false, false, false),
                (t, v, d),
                (d, d, v),
                [w(&b.h), f32s(&b.params, lay.unembed), w(&b.logits)],
            )?,
            gpu.dispatch(
                "softmax_xent",
                Kernel::SoftmaxXent,
                [t, v, fbits(1.0 / t as f32), 0, 0, 0, 0, 0],
                &[w(&b.logits), w(&b.targets), w(&b.dlogits), w(&b.tok_loss)],
                tok_groups,
            )?,
            gpu.dispatch(
                "loss_mean",
                Kernel::LossMean,
                [t, stride, 0, 0, 0, 0, 0, 0],
                &[w(&b.tok_loss), w(&b.hist), w(&b.step_info)],
                (1, 1, 1),
            )?,
            // dU = dlogitsᵀ · h  (V×d)
            gemm(
                gpu,
                "dU",
                bf(true, false, false, false, false),
                (v, d, t),
                (v, d, d),
                [w(&b.dlogits), w(&b.h), f32s(&b.grads, lay.unembed)],
            )?,
            // dh = dlogits · U  (T×d)
            gemm(
                gpu,
                "dhf",
                bf(false, false, false, false, false),
                (t, d, v),
                (v, d, d),
                [w(&b.dlogits), f32s(&b.params, lay.unembed), w(&b.dh)],
            )?,
            gpu.dispatch(
                "rms_backward_final",
                Kernel::RmsBackward,
                [t, d, fbits(RMS_EPS), 0, 0, 0, 0, 0],
                &[w(&b.xs[last]), w(&b.dh), w(&b.dx)],
                tok_groups,
            )?,
        ];
        p.bpre = (0..last).map(|_| Vec::new()).collect();
        p.bpost = (0..last).map(|_| Vec::new()).collect();
        for l in (0..last).rev() {
            // g = dy · W₂  (T×d · d×H), rounded to BF16
            p.bpre[l].push(gemm(
                gpu,
                "g=dy·W2",
                bf(false, false, false, false, true),
                (t, hd, d),
                (d, hd, hd),
                [w(&b.dx), f32s(&b.params, lay.w2[l]), w(&b.g)],
            )?);
            p.bpost[l] = vec![
                // dW₂ = dyᵀ · a  (d×H)
                gemm(
                    gpu,
                    "dW2",
                    bf(true, false, false, true, false),
                    (d, hd, t),
                    (d, hd, hd),
                    [w(&b.dx), w(cache.backward_a(l)), f32s(&b.grads, lay.w2[l])],
                )?,
                gpu.dispatch(
                    "rms_recompute",
                    Kernel::RmsForward,
                    [t, d, fbits(RMS_EPS), 0, 0, 0, 0, 0],
                    &[w(&b.xs[l]), w(&b.h)],
                    tok_groups,
                )?,
                // dW₁ = dzᵀ · h  (H×d)
                gemm(
                    gpu,
                    "dW1",
                    bf(true, false, true, false, false),
                    (hd, d, t),
                    (hd, d, d),
                    [w(&b.dz), w(&b.h), f32s(&b.grads, lay.w1[l])],
                )?,
                // dh = dz · W₁  (T×H · H×d)
                gemm(
                    gpu,
                    "dh",
                    bf(false, false, true, false, false),
                    (t, d, hd),
                    (hd, d, d),
                    [w(&b.dz), f32s(&b.params, lay.w1[l]), w(&b.dh)],
                )?,
                gpu.dispatch(
                    "rms_backward",
                    Kernel::RmsBackward,
                    [t, d, fbits(RMS_EPS), 1, 0, 0, 0, 0],
                    &[w(&b.xs[l]), w(&b.dh), w(&b.dx)],
                    tok_groups,
                )?,
            ];
        }
        let n_params = lay.total;
        p.tail = vec![gpu.dispatch(
            "embed_backward",
            Kernel::EmbedBackward,
            [t, d, k, v, 0, 0, 0, 0],
            &[w(&b.rows), w(&b.dx), f32s(&b.grads, lay.embed)],
            grid_1d(lay.embed.1),
        )?];
        p.adam = Some(gpu.dispatch(
            "adam",
            Kernel::Adam,
            [n_params as u32, 0, 0, 0, 0, 0, 0, 0],
            &[w(&b.params), w(&b.grads), w(&b.adam_m), w(&b.adam_v), w(&b.step_info)],
            grid_1d(n_params),
        )?);
        p.stats = vec![gpu.dispatch(
            "hash_params",
            Kernel::HashParams,
            [n_params as u32, stride, 0, 0, 0, 0, 0, 0],
            &[w(&b.params), w(&b.hist), w(&b.step_info)],
            (n_params.div_ceil(256 * 64).clamp(1, 256) as u32, 1, 1),
        )?];
        Ok(p)
    }

    /// The cache's name.
    pub fn cache_name(&self) -> &'static str {
        self.cache.name()
    }

    /// Writes each layer's relu(z) of the last step (BF16, `[tokens, hidden]`) as one safetensors file
    /// (synchronises). `Ok(false)` when the mode keeps no dense r.
    pub fn dump_relu(&self, gpu: &Gpu, path: &std::path::Path) -> Result<bool> {
        let (t, h) = (self.cfg.tokens as u64, self.cfg.hidden() as u64);
        let mut layers = Vec::new();
        for l in 0..self.cfg.layers as usize {
            let Some(r) = self.cache.dense_r(l) else { return Ok(false) };
            layers.push((format!("layers.{l}.relu"), sync::read_buffer(&gpu.device, &gpu.queue, r, 0, t * h * 2)?));
        }
        let shape = [t, h];
        let tensors: Vec<(&str, &str, &[u64], &[u8])> =
            layers.iter().map(|(n, b)| (n.as_str(), "BF16", &shape[..], b.as_slice())).collect();
        let step = self.step.to_string();
        let bytes = bitsparse_files::safetensors::write(
            &tensors,
            Some(&[("generator", "bitsparse demos/train_ffn --dump-at"), ("step", &step), ("activation", "relu")]),
        );
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| bitsparse::Error::InvalidArgument(format!("{}: {e}", dir.display())))?;
        }
        std::fs::write(path, bytes)
            .map_err(|e| bitsparse::Error::InvalidArgument(format!("{}: {e}", path.display())))?;
        Ok(true)
    }

    /// Steps run so far.
    pub fn steps_done(&self) -> u32 {
        self.step
    }

    /// Writes this step's batch and step info (queued writes, applied at the next submit).
    pub fn upload_step(&self, gpu: &Gpu, corpus: &Corpus) {
        let cfg = &self.cfg;
        let (rows, targets) = corpus.batch(cfg.seed, self.step, cfg.tokens, cfg.context);
        gpu.queue.write_buffer(&self.bufs.rows, 0, bytemuck::cast_slice(&rows));
        gpu.queue.write_buffer(&self.bufs.targets, 0, bytemuck::cast_slice(&targets));
        let t = (self.step + 1) as f64;
        let lr_t = cfg.lr as f64 * (1.0 - (BETA2 as f64).powf(t)).sqrt() / (1.0 - (BETA1 as f64).powf(t));
        let info = [self.step, (lr_t as f32).to_bits(), BETA1.to_bits(), BETA2.to_bits(), ADAM_EPS.to_bits(), 0, 0, 0];
        gpu.queue.write_buffer(&self.bufs.step_info, 0, bytemuck::cast_slice(&info));
    }

    /// Records one whole training step (forward, backward, update, statistics). Reads nothing back.
    pub fn record_step(&mut self, enc: &mut wgpu::CommandEncoder) -> Result<()> {
        let p = &self.plan;
        // A re-run step (after an arena regrow) must not add to the counts of its first run.
        let stride_bytes = self.hist_stride as u64 * 4;
        enc.clear_buffer(&self.bufs.hist, self.step as u64 * stride_bytes, Some(stride_bytes));
        self.cache.begin_step(enc)?;
        record(enc, "embed", &p.embed);
        for l in 0..self.cfg.layers as usize {
            record(enc, "layer.pre", &p.pre[l]);
            self.cache.forward(enc, l)?;
            record(enc, "layer.post", &p.post[l]);
        }
        record(enc, "head", &p.head);
        for l in (0..self.cfg.layers as usize).rev() {
            record(enc, "layer.bpre", &p.bpre[l]);
            self.cache.backward(enc, l)?;
            record(enc, "layer.bpost", &p.bpost[l]);
        }
        record(enc, "tail", &p.tail);
        if let Some(adam) = &p.adam {
            let gate = self.cache.gate(enc, adam.groups)?;
            let mut pass =
                enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("update"), timestamp_writes: None });
            pass.set_pipeline(&adam.pipeline);
            pass.set_bind_group(0, &adam.bind_group, &[]);
            match &gate {
                Some(g) => pass.dispatch_workgroups_indirect(&g.buffer, g.offset),
                None => pass.dispatch_workgroups(adam.groups.0, adam.groups.1, adam.groups.2),
            }
        }
        record(enc, "stats", &p.stats);
        Ok(())
    }

    /// Records a copy of the weights and Adam moments (GPU to GPU) and remembers the step.
    pub fn checkpoint(&mut self, gpu: &Gpu) {
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("checkpoint") });
        for (src, dst) in [&self.bufs.params, &self.bufs.adam_m, &self.bufs.adam_v].into_iter().zip(&self.backup) {
            enc.copy_buffer_to_buffer(src, 0, dst, 0, src.size());
        }
        sync::submit(&gpu.queue, [enc.finish()]);
        self.checkpoint_step = self.step;
    }

    /// Restores the last checkpoint; the next step is the checkpoint's.
    pub fn restore(&mut self, gpu: &Gpu) {
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("restore") });
        for (dst, src) in [&self.bufs.params, &self.bufs.adam_m, &self.bufs.adam_v].into_iter().zip(&self.backup) {
            enc.copy_buffer_to_buffer(src, 0, dst, 0, src.size());
        }
        sync::submit(&gpu.queue, [enc.finish()]);
        self.step = self.checkpoint_step;
    }

    /// At a logging point: checks the cache (synchronises). `Ok(false)`: the steps since the checkpoint
    /// must be re-run; the model has already been restored to it.
    pub fn verify(&mut self, gpu: &Gpu) -> Result<bool> {
        if self.cache.verify(gpu)? {
            Ok(true)
        } else {
            self.restore(gpu);
            Ok(false)
        }
    }

    /// Uploads, records and submits one step: the only host interaction is one submit.
    pub fn step(&mut self, gpu: &Gpu, corpus: &Corpus) -> Result<()> {
        if self.step >= self.cfg.steps {
            return Err(bitsparse::Error::InvalidArgument(format!("the history holds {} steps", self.cfg.steps)));
        }
        self.upload_step(gpu, corpus);
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("train.step") });
        self.record_step(&mut enc)?;
        sync::submit(&gpu.queue, [enc.finish()]);
        self.step += 1;
        Ok(())
    }

    /// Runs one step op by op, each submitted and waited for alone, and returns the wall time of each op
    /// summed by label (ms), slowest first. A diagnostic (`--profile`): it synchronises after every op.
    pub fn profile_step(&mut self, gpu: &Gpu, corpus: &Corpus) -> Result<Vec<(String, f64)>> {
        use std::collections::BTreeMap;
        self.upload_step(gpu, corpus);
        sync::wait_idle(&gpu.device)?;
        let mut times: BTreeMap<String, f64> = BTreeMap::new();
        let mut timed = |label: &str, f: &mut RecordFn| -> Result<()> {
            let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("profile") });
            f(&mut enc)?;
            let start = std::time::Instant::now();
            sync::submit(&gpu.queue, [enc.finish()]);
            sync::wait_idle(&gpu.device)?;
            *times.entry(label.to_string()).or_default() += start.elapsed().as_secs_f64() * 1e3;
            Ok(())
        };
        let p = &self.plan;
        let cache = &mut self.cache;
        let run_ops = |v: &[Dispatch], timed: &mut TimedFn| -> Result<()> {
            for d in v {
                timed(d.label, &mut |enc| {
                    record(enc, d.label, std::slice::from_ref(d));
                    Ok(())
                })?;
            }
            Ok(())
        };
        timed("cache.begin_step", &mut |enc| cache.begin_step(enc))?;
        run_ops(&p.embed, &mut timed)?;
        for l in 0..self.cfg.layers as usize {
            run_ops(&p.pre[l], &mut timed)?;
            timed("cache.forward", &mut |enc| cache.forward(enc, l))?;
            run_ops(&p.post[l], &mut timed)?;
        }
        run_ops(&p.head, &mut timed)?;
        for l in (0..self.cfg.layers as usize).rev() {
            run_ops(&p.bpre[l], &mut timed)?;
            timed("cache.backward", &mut |enc| cache.backward(enc, l))?;
            run_ops(&p.bpost[l], &mut timed)?;
        }
        run_ops(&p.tail, &mut timed)?;
        if let Some(adam) = &p.adam {
            run_ops(std::slice::from_ref(adam), &mut timed)?;
        }
        run_ops(&p.stats, &mut timed)?;
        self.step += 1;
        let mut v: Vec<(String, f64)> = times.into_iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(v)
    }

    /// Waits for the GPU and reads the statistics of steps `0..steps_done()` (a logging point).
    pub fn read_stats(&self, gpu: &Gpu) -> Result<Vec<StepStats>> {
        let stride = self.hist_stride as usize;
        let bytes =
            sync::read_buffer(&gpu.device, &gpu.queue, &self.bufs.hist, 0, self.step as u64 * stride as u64 * 4)?;
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        Ok(words
            .chunks_exact(stride)
            .enumerate()
            .map(|(s, w)| StepStats {
                step: s as u32,
                loss: f32::from_bits(w[0]),
                weight_hash: (w[1], w[2]),
                nonzeros: w[HIST_HEAD as usize..HIST_HEAD as usize + self.cfg.layers as usize].to_vec(),
            })
            .collect())
    }

    /// The gradients of the last step, read back (tests).
    pub fn read_grads(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        let bytes = sync::read_buffer(&gpu.device, &gpu.queue, &self.bufs.grads, 0, self.layout.total * 4)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// All weights, read back (for the end-of-run comparison).
    pub fn read_params(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        let bytes = sync::read_buffer(&gpu.device, &gpu.queue, &self.bufs.params, 0, self.layout.total * 4)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Times the cache shrank its reservation.
    pub fn cache_resizes(&self) -> u32 {
        self.cache.resizes()
    }

    /// Hidden-cache bytes after the last forward (synchronises for compressed modes).
    pub fn cache_bytes(&self, gpu: &Gpu) -> Result<CacheBytes> {
        self.cache.bytes(gpu)
    }

    /// Bytes of the cached x of one layer (BF16, T×d).
    pub fn x_bytes_per_layer(&self) -> u64 {
        self.cfg.tokens as u64 * self.cfg.d as u64 * 2
    }

    /// Elements of relu(z) per layer per step.
    pub fn hidden_elems(&self) -> u64 {
        self.cfg.tokens as u64 * self.cfg.hidden() as u64
    }
}
