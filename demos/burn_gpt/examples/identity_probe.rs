//! Where BitSparse and Burn's dense MLP block stop being bit-identical: one backward of small graphs
//! around the block, dense vs BitSparse, on both autodiff strategies, printing which gradients are
//! bit-equal (1) or not (0). The demo's own comparison is at the level of a whole GPT; this narrows it
//! down (README.md, "Open problems").
//!
//! `cargo run --release -p burn-gpt --example identity_probe`
//!
//! Graphs (x: `[batch, 32, 64]`, a leaf; loss: `sum(y · target)`):
//! - `mlp3d`: y = mlp(x) on the 3-D tensor;
//! - `mlp2d`: y = mlp(x as rows `[batch·32, 64]`);
//! - `ln+mlp2d`: y = mlp(layer_norm(x)) on rows;
//! - `x+mlp2d(ln)`: the pre-norm residual y = x + mlp(layer_norm(x)) on rows;
//! - `dense·1`: not BitSparse at all: Burn's dense block after `layer_norm(x) · 1.0` against the same
//!   without the `· 1.0` (does Burn itself give the same bits for one more exact op?).

use bitsparse_burn::{BitSparse, BitSparseConfig, BitSparseMlp, BitSparseMlpConfig, MlpActivation};
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::{Device, Distribution, Tensor};

const GRAPHS: [&str; 5] = ["mlp3d", "mlp2d", "ln+mlp2d", "x+mlp2d(ln)", "dense·1"];

fn bytes<const D: usize>(t: Tensor<D>) -> Vec<u8> {
    t.into_data().as_bytes().to_vec()
}

/// The graph's output for `x`; `variant` marks the left-hand side of the `dense·1` comparison.
fn graph(name: &str, m: &BitSparseMlp, ln: &LayerNorm, x: Tensor<3>, variant: bool) -> Tensor<3> {
    let [b, t, d] = x.dims();
    let rows = |v: Tensor<3>| m.forward(v.reshape([b * t, d])).reshape([b, t, d]);
    match name {
        "mlp3d" => m.forward(x),
        "mlp2d" => rows(x),
        "ln+mlp2d" => rows(ln.forward(x)),
        "x+mlp2d(ln)" => x.clone() + rows(ln.forward(x)),
        _ if variant => rows(ln.forward(x).mul_scalar(1.0)),
        _ => rows(ln.forward(x)),
    }
}

/// One backward; the gradients of x, fc1.weight, fc1.bias, fc2.weight, fc2.bias and ln.gamma, as bytes.
fn grads(name: &str, m: &BitSparseMlp, ln: &LayerNorm, x0: &Tensor<3>, tgt: &Tensor<3>, variant: bool) -> Vec<Vec<u8>> {
    let device = x0.device();
    if let Some(ctx) = &m.ctx {
        ctx.begin_step(&device).expect("begin_step");
    }
    let x = x0.clone().require_grad();
    let g = (graph(name, m, ln, x.clone(), variant) * tgt.clone()).sum().backward();
    if let Some(ctx) = &m.ctx {
        ctx.finish_step(&device).expect("finish_step");
    }
    let grad1 = |t: Tensor<1>| t.grad(&g).map(bytes).unwrap_or_default();
    let grad2 = |t: Tensor<2>| t.grad(&g).map(bytes).unwrap_or_default();
    vec![
        x.grad(&g).map(bytes).unwrap_or_default(),
        grad2(m.fc1.weight.val()),
        grad1(m.fc1.bias.as_ref().expect("bias").val()),
        grad2(m.fc2.weight.val()),
        grad1(m.fc2.bias.as_ref().expect("bias").val()),
        grad1(ln.gamma.val()),
    ]
}

fn main() {
    let (base, setup) = Device::wgpu_options().init_with_setup().expect("a wgpu adapter");
    let config = BitSparseConfig::with_arena_bytes(16 << 20);
    let ctx = BitSparse::new(&base, &setup.device, &setup.queue, config).expect("bitsparse context");
    println!("gradients bit-equal, [x, fc1.weight, fc1.bias, fc2.weight, fc2.bias, ln.gamma]:");
    for checkpointing in [false, true] {
        let mut device = base.clone().autodiff();
        if checkpointing {
            device = device.gradient_checkpointing();
        }
        let (d, t) = (64, 32);
        let sparse = BitSparseMlpConfig::new(d, 4 * d).with_activation(MlpActivation::Relu2).init(&device, &ctx);
        let ln = LayerNormConfig::new(d).init(&device);
        let mut dense = sparse.clone();
        dense.ctx = None;
        for batch in [1, 4] {
            for name in GRAPHS {
                let x = Tensor::<3>::random([batch, t, d], Distribution::Normal(0.0, 1.0), &device).detach();
                let tgt = Tensor::<3>::random([batch, t, d], Distribution::Normal(0.0, 1.0), &device).detach();
                let left = if name == "dense·1" { &dense } else { &sparse };
                // Once each first, so that Burn's autotune has chosen its kernels before the compared run.
                let _ = grads(name, left, &ln, &x, &tgt, true);
                let _ = grads(name, &dense, &ln, &x, &tgt, false);
                let a = grads(name, left, &ln, &x, &tgt, true);
                let b = grads(name, &dense, &ln, &x, &tgt, false);
                let equal: Vec<u8> = a.iter().zip(&b).map(|(p, q)| u8::from(p == q)).collect();
                println!("checkpointing {checkpointing:5}, batch {batch}, {name:12} {equal:?}");
            }
        }
    }
}
