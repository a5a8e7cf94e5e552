//! `train_bit_identical_burn_*`, `no_host_sync_burn_*`, `arena_overflow_burn_*` and the layout tests.

use std::sync::OnceLock;

use bitsparse::host::sync;
use bitsparse_burn::{BitSparse, BitSparseConfig, BitSparseMlp, Error, MlpActivation};
use burn::module::Param;
use burn::nn::Linear;
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Distribution, FloatDType, Tensor, TensorData};

use crate::common::harness::{Test, VULKAN};
use crate::reference;

/// Burn's device and the wgpu handles behind it, opened once per process.
struct Shared {
    device: Device,
    wgpu: (burn::tensor::wgpu::wgpu::Device, burn::tensor::wgpu::wgpu::Queue),
}

fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        let (device, setup) = Device::wgpu_options().init_with_setup().expect("Burn opens its wgpu device");
        Shared { device, wgpu: (setup.device, setup.queue) }
    })
}

fn context(arena_bytes: u64) -> BitSparse {
    let s = shared();
    BitSparse::new(&s.device, &s.wgpu.0, &s.wgpu.1, BitSparseConfig::with_arena_bytes(arena_bytes)).expect("context")
}

const D: usize = 32;
const FF: usize = 136;
const T: usize = 7;

/// A block with weights of `dtype` drawn on `device`, and its twin sharing those exact weights; the first
/// runs the BitSparse op (`ctx`), the second (no context) Burn's dense block, through [`reference::forward`].
fn twins(device: &Device, dtype: FloatDType, act: MlpActivation, ctx: &BitSparse) -> (BitSparseMlp, BitSparseMlp) {
    let linear = |i: usize, o: usize| {
        let w = Tensor::<2>::random([i, o], Distribution::Uniform(-0.3, 0.3), device).cast(dtype);
        let b = Tensor::<1>::random([o], Distribution::Uniform(-0.2, 0.2), device).cast(dtype);
        (w, b)
    };
    let ((w1, b1), (w2, b2)) = (linear(D, FF), linear(FF, D));
    let make = |ctx: Option<&BitSparse>| {
        let l = |w: &Tensor<2>, b: &Tensor<1>| Linear {
            weight: Param::from_tensor(w.clone().detach()),
            bias: Some(Param::from_tensor(b.clone().detach())),
        };
        BitSparseMlp::from_linears(l(&w1, &b1), l(&w2, &b2), act, ctx)
    };
    (make(Some(ctx)), make(None))
}

fn bits(t: Tensor<2>) -> Vec<u8> {
    t.into_data().as_bytes().to_vec()
}

fn bits1(t: Tensor<1>) -> Vec<u8> {
    t.into_data().as_bytes().to_vec()
}

fn params(m: &BitSparseMlp) -> Vec<Vec<u8>> {
    vec![
        bits(m.fc1.weight.val()),
        bits1(m.fc1.bias.as_ref().unwrap().val()),
        bits(m.fc2.weight.val()),
        bits1(m.fc2.bias.as_ref().unwrap().val()),
    ]
}

/// What one training step produced, as bits.
#[derive(PartialEq, Eq, Debug)]
struct StepBits {
    y: Vec<u8>,
    loss: Vec<u8>,
    grads: Vec<Vec<u8>>,
}

/// One SGD step of `m` on `x` (rows of D) with loss mean((y - target)²)·k, returning the step's bits.
///
/// The device is synchronised where the step begins, after its backward and after its optimizer
/// step, for either twin: Burn's fusion plans over the ops queued when they run, so each twin's
/// forward and backward then run as one batch of their own ops alone. Without it the dense twin's
/// forward was queued behind the BitSparse twin's optimizer update, and in that batch fusion folded
/// the loss into fc2's matmul (a fused 16×32×256 key with 4 ops, tuned apart from the BitSparse
/// twin's plain one; cubecl's autotune log, where each twin run alone tuned the same 18 keys).
fn step(m: BitSparseMlp, x: &Tensor<2>, target: &Tensor<2>, ctx: Option<&BitSparse>) -> (BitSparseMlp, StepBits) {
    let device = x.device();
    device.sync().expect("sync");
    let x = x.clone().detach().require_grad();
    if let Some(ctx) = ctx {
        ctx.begin_step(&device).unwrap();
    }
    let y = reference::forward(&m, x.clone());
    let diff = y.clone() - target.clone();
    let loss = (diff.clone() * diff).mean();
    let grads = loss.backward();
    device.sync().expect("sync");
    if let Some(ctx) = ctx {
        ctx.finish_step(&device).expect("the step's status read");
    }
    let g = |t: Option<Tensor<2>>| bits(t.expect("a gradient"));
    let g1 = |t: Option<Tensor<1>>| bits1(t.expect("a gradient"));
    let grad_bits = vec![
        g(x.grad(&grads).map(|t| t.inner())),
        g(m.fc1.weight.val().grad(&grads).map(|t| t.inner())),
        g1(m.fc1.bias.as_ref().unwrap().val().grad(&grads).map(|t| t.inner())),
        g(m.fc2.weight.val().grad(&grads).map(|t| t.inner())),
        g1(m.fc2.bias.as_ref().unwrap().val().grad(&grads).map(|t| t.inner())),
    ];
    let out = StepBits { y: bits(y.detach()), loss: loss.detach().into_data().as_bytes().to_vec(), grads: grad_bits };
    let gp = GradientsParams::from_grads(grads, &m);
    let mut opt = SgdConfig::new().init();
    let m = opt.step(0.05, m, gp);
    device.sync().expect("sync");
    (m, out)
}

/// Dense and BitSparse twins trained side by side on batches of `rows` rows (shapes leaving partial tiles,
/// changing between steps): every step's output, loss and gradients, and the weights after it, equal bit
/// for bit.
fn train_pair(dtype: FloatDType, act: MlpActivation, checkpointing: bool) {
    let mut device = shared().device.clone().autodiff();
    if checkpointing {
        device = device.gradient_checkpointing();
    }
    let ctx = context(1 << 20);
    let (mut bs, mut dense) = twins(&device, dtype, act, &ctx);
    let shapes = [3 * T, 5 * T, 2 * T + 1];
    warm_up_steps(&dense, None, &device, dtype, &shapes);
    warm_up_steps(&bs, Some(&ctx), &device, dtype, &shapes);
    for (i, rows) in shapes.into_iter().enumerate() {
        let x = Tensor::<2>::random([rows, D], Distribution::Normal(0.0, 1.0), &device).cast(dtype);
        let target = Tensor::<2>::random([rows, D], Distribution::Normal(0.0, 0.1), &device).cast(dtype);
        let (b2, sb) = step(bs, &x, &target, Some(&ctx));
        let (d2, sd) = step(dense, &x, &target, None);
        assert_eq!(sb.y, sd.y, "step {i}: forward output differs");
        assert_eq!(sb.loss, sd.loss, "step {i}: loss differs");
        // Every gradient compared before failing, so a failure says which differ and by how much (on
        // the H200, whether dL/dz itself differs — then dW1 does too — or only a GEMM after it).
        let report = grad_differences(&sb.grads, &sd.grads, dtype_bytes(dtype));
        assert!(report.is_empty(), "step {i}: gradients differ: {report}");
        assert_eq!(params(&b2), params(&d2), "step {i}: weights after the optimizer step differ");
        // The activations were not all zero or all positive (the test would be weak otherwise).
        let y_nonzero = sd.grads[1].chunks(dtype_bytes(dtype)).any(|c| c.iter().any(|&b| b != 0));
        assert!(y_nonzero, "step {i}: dW1 is all zero");
        bs = b2;
        dense = d2;
    }
}

/// Burn's autotune picks a matmul kernel the first time it meets a shape, and what that first call
/// computes may come from another candidate than the one it keeps (seen in a fresh clone, where no
/// autotune cache exists yet: the forward of the first 15-row batch differed in its last bits). Every
/// shape is met once here, untimed and uncompared, so dense and BitSparse then run the same kernels.
fn warm_up(m: &BitSparseMlp, device: &Device, dtype: FloatDType, shapes: &[usize]) {
    for &rows in shapes {
        let x = Tensor::<2>::random([rows, D], Distribution::Normal(0.0, 1.0), device).cast(dtype);
        let y = reference::dense(m, if device.is_autodiff() { x.require_grad() } else { x });
        if device.is_autodiff() {
            let _ = (y.clone() * y).mean().backward();
        }
    }
    device.sync().expect("sync");
}

/// [`warm_up`] as the compared steps run: whole training steps of a copy of `m` (the BitSparse twin
/// with `ctx`), discarded, so that each twin meets the very op batches it is compared on (a fresh
/// clone once failed `train_bit_identical_burn_f32_*` at the 2T+1-row step, the BitSparse forward's
/// last bits differing, with only the dense twin warmed, when the dense twin was Burn's fused block).
fn warm_up_steps(m: &BitSparseMlp, ctx: Option<&BitSparse>, device: &Device, dtype: FloatDType, shapes: &[usize]) {
    for &rows in shapes {
        let x = Tensor::<2>::random([rows, D], Distribution::Normal(0.0, 1.0), device).cast(dtype);
        let target = Tensor::<2>::random([rows, D], Distribution::Normal(0.0, 0.1), device).cast(dtype);
        let _ = step(m.clone(), &x, &target, ctx);
    }
}

/// For each gradient (x, w1, b1, w2, b2) whose bits differ: its name, how many of its elements differ and
/// the largest difference in units in the last place; empty when all are equal.
fn grad_differences(a: &[Vec<u8>], b: &[Vec<u8>], elem: usize) -> String {
    const NAMES: [&str; 5] = ["x", "w1", "b1", "w2", "b2"];
    let mut out = Vec::new();
    for (k, (ga, gb)) in a.iter().zip(b).enumerate() {
        if ga == gb {
            continue;
        }
        let word = |c: &[u8]| c.iter().rev().fold(0i64, |acc, &x| (acc << 8) | i64::from(x));
        let (mut n, mut max_ulp) = (0usize, 0i64);
        for (ca, cb) in ga.chunks(elem).zip(gb.chunks(elem)) {
            if ca != cb {
                n += 1;
                max_ulp = max_ulp.max((word(ca) - word(cb)).abs());
            }
        }
        out.push(format!("d{} {n} of {} elements (up to {max_ulp} ulp)", NAMES[k], ga.len() / elem));
    }
    out.join(", ")
}

fn dtype_bytes(dtype: FloatDType) -> usize {
    match dtype {
        FloatDType::F16 | FloatDType::BF16 => 2,
        _ => 4,
    }
}

fn train_bit_identical_burn_f32_relu2() {
    train_pair(FloatDType::F32, MlpActivation::Relu2, false);
}

fn train_bit_identical_burn_f32_relu() {
    train_pair(FloatDType::F32, MlpActivation::Relu, false);
}

fn train_bit_identical_burn_f16_relu2() {
    train_pair(FloatDType::F16, MlpActivation::Relu2, false);
}

fn train_bit_identical_burn_f16_relu() {
    train_pair(FloatDType::F16, MlpActivation::Relu, false);
}

fn train_bit_identical_burn_f32_relu2_checkpointed() {
    train_pair(FloatDType::F32, MlpActivation::Relu2, true);
}

/// Forward and backward wait for nothing: the host-synchronisation count does not move between the start
/// of the step and the end of the backward; the step's one status read (`finish_step`) costs what one
/// arena status read costs.
fn no_host_sync_burn_f32() {
    let device = shared().device.clone().autodiff();
    let ctx = context(1 << 20);
    let (m, _) = twins(&device, FloatDType::F32, MlpActivation::Relu2, &ctx);
    let x = Tensor::<2>::random([4 * T, D], Distribution::Normal(0.0, 1.0), &device).require_grad();
    // Warm-up (Burn's autotune and first-use allocations happen here).
    for _ in 0..2 {
        ctx.begin_step(&device).unwrap();
        let g = m.forward(x.clone()).sum().backward();
        ctx.finish_step(&device).unwrap();
        drop(g);
    }
    let before = sync::host_syncs();
    let enq = sync::enqueues();
    ctx.begin_step(&device).unwrap();
    let loss = m.forward(x.clone()).sum();
    let grads = loss.backward();
    device.flush().unwrap();
    let during = sync::host_syncs() - before;
    let submits = sync::enqueues() - enq;
    let at = sync::host_syncs();
    ctx.finish_step(&device).unwrap();
    let finish = sync::host_syncs() - at;
    // What one status read costs, measured the same way.
    let at = sync::host_syncs();
    ctx.finish_step(&device).unwrap();
    let one_read = sync::host_syncs() - at;
    eprintln!("host syncs in forward+backward: {during}; enqueued submits: {submits}; finish_step: {finish}");
    assert_eq!(during, 0, "forward + backward waited on the GPU");
    assert!(submits >= 3, "expected the reset, the fused forward and the fused backward to be enqueued");
    assert_eq!(finish, one_read, "finish_step does more than one status read");
    drop(grads);
    // The deferred read: started after the backward, collected after the optimizer was recorded.
    let before = sync::host_syncs();
    ctx.begin_step(&device).unwrap();
    let loss = m.forward(x.clone()).sum();
    let grads = loss.backward();
    device.flush().unwrap();
    assert_eq!(sync::host_syncs() - before, 0, "forward + backward waited on the GPU (deferred read)");
    ctx.request_status(&device).unwrap();
    let candidate = SgdConfig::new().init().step(0.05, m.clone(), GradientsParams::from_grads(grads, &m));
    ctx.finish_step(&device).unwrap();
    let deferred = sync::host_syncs() - before;
    eprintln!("deferred status read: {deferred} counted host synchronisation(s) in the whole step");
    assert_eq!(deferred, 1, "request_status + finish_step must be one counted status read");
    drop(candidate);
}

/// An arena too small for the step: `finish_step` says so, typed, before the optimizer; `grow` and the
/// re-run step give gradients bit-identical to Burn's dense block.
fn arena_overflow_burn_f32() {
    overflow_and_recovery(false);
}

/// The deferred status read sees an overflow too: the update recorded from the bad gradients is dropped
/// (the kept model's weights are those from before the step), and the grown, re-run step equals dense.
fn arena_overflow_burn_f32_deferred() {
    overflow_and_recovery(true);
}

/// A 1 KiB arena overflows; with `deferred`, the status read is started after the backward and
/// collected after an SGD update was recorded from the (wrong) gradients, which is then dropped.
fn overflow_and_recovery(deferred: bool) {
    let device = shared().device.clone().autodiff();
    let ctx = context(1024);
    let (bs, dense) = twins(&device, FloatDType::F32, MlpActivation::Relu2, &ctx);
    warm_up_steps(&dense, None, &device, FloatDType::F32, &[5 * T]);
    let x = Tensor::<2>::random([5 * T, D], Distribution::Normal(0.0, 1.0), &device);
    let target = Tensor::<2>::zeros([5 * T, D], &device);
    let before = params(&bs);
    // The failing step.
    ctx.begin_step(&device).unwrap();
    let y = bs.forward(x.clone().require_grad());
    let grads = (y.clone() * y).mean().backward();
    let candidate = deferred.then(|| {
        ctx.request_status(&device).unwrap();
        SgdConfig::new().init().step(0.05, bs.clone(), GradientsParams::from_grads(grads, &bs))
    });
    match ctx.finish_step(&device) {
        Err(Error::ArenaOverflow { capacity, .. }) => assert_eq!(capacity, 1024),
        other => panic!("expected ArenaOverflow, got {other:?}"),
    }
    if let Some(c) = candidate {
        assert_ne!(params(&c), before, "the dropped update did change the weights (test premise)");
    }
    assert_eq!(params(&bs), before, "the kept model changed");
    // Recovery: grow, re-run the same step.
    let grown = ctx.grow(&device).expect("grow");
    assert!(grown >= 2048, "grew to {grown}");
    let (_, sb) = step(bs, &x, &target, Some(&ctx));
    let (_, sd) = step(dense, &x, &target, None);
    assert_eq!(sb, sd, "the re-run step differs from the dense one");
}

/// A strided (transposed) or sliced input is made contiguous before the codec reads it; results equal
/// Burn's dense block on the same view.
fn strided_inputs_burn_f32() {
    let device = shared().device.clone().autodiff();
    let ctx = context(1 << 20);
    let (bs, dense) = twins(&device, FloatDType::F32, MlpActivation::Relu2, &ctx);
    warm_up(&dense, &device, FloatDType::F32, &[6 * T, 3 * T]);
    let base = Tensor::<2>::random([D, 6 * T], Distribution::Normal(0.0, 1.0), &device);
    let views = [base.clone().transpose(), base.clone().transpose().slice([T..4 * T, 0..D])];
    for (i, x) in views.into_iter().enumerate() {
        ctx.begin_step(&device).unwrap();
        let yb = bs.forward(x.clone());
        let gb = yb.clone().sum().backward();
        device.sync().expect("sync"); // each twin's ops as a batch of their own, as in `step`
        ctx.finish_step(&device).unwrap();
        let yd = reference::forward(&dense, x.clone());
        let gd = yd.clone().sum().backward();
        device.sync().expect("sync");
        assert_eq!(bits(yb.detach()), bits(yd.detach()), "view {i}: output differs");
        let w = |m: &BitSparseMlp, g| bits(m.fc1.weight.val().grad(g).unwrap().inner());
        assert_eq!(w(&bs, &gb), w(&dense, &gd), "view {i}: dW1 differs");
    }
}

/// Without autodiff (inference) the op is Burn's dense block and pushes nothing.
fn inference_is_dense_burn_f32() {
    let device = shared().device.clone();
    let ctx = context(1 << 20);
    let (bs, dense) = twins(&device, FloatDType::F32, MlpActivation::Relu2, &ctx);
    let x = Tensor::<2>::random([3 * T, D], Distribution::Normal(0.0, 1.0), &device);
    // Both run Burn's fused dense block here (the same graph, so the same autotuned kernels); once
    // first, so that Burn's autotune has chosen them.
    let _ = bits(dense.forward(x.clone()));
    ctx.begin_step(&device).unwrap();
    let (yb, yd) = (bs.forward(x.clone()), dense.forward(x));
    let report = ctx.finish_step(&device).unwrap();
    assert_eq!(bits(yb), bits(yd));
    assert_eq!((report.tensors, report.used_bytes), (0, 0));
    let _ = TensorData::from([0f32]);
}

macro_rules! burn_test {
    ($f:ident) => {
        Test::needs(crate::common::harness::name(module_path!(), stringify!($f)), &[&VULKAN], $f)
    };
}

pub fn tests() -> Vec<Test> {
    vec![
        burn_test!(train_bit_identical_burn_f32_relu2),
        burn_test!(train_bit_identical_burn_f32_relu),
        burn_test!(train_bit_identical_burn_f16_relu2),
        burn_test!(train_bit_identical_burn_f16_relu),
        burn_test!(train_bit_identical_burn_f32_relu2_checkpointed),
        burn_test!(no_host_sync_burn_f32),
        burn_test!(arena_overflow_burn_f32),
        burn_test!(arena_overflow_burn_f32_deferred),
        burn_test!(strided_inputs_burn_f32),
        burn_test!(inference_is_dense_burn_f32),
    ]
}
