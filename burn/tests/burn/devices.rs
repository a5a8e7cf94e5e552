//! Several wgpu devices in one process (issue: data-parallel training): two Burn devices opened from one
//! adapter, one `BitSparse` holding a codec and an arena for each, a block and its fork training on both
//! at once from two threads. Each device's concurrent BitSparse run equals, bit for bit, a dense
//! single-device run on that device over the same micro-batches (`crate::reference::dense`).

use bitsparse::host::context;
use bitsparse_burn::{BitSparse, BitSparseConfig, BitSparseMlp, MlpActivation};
use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::wgpu::{wgpu, WgpuSetup};
use burn::tensor::{Device, Tensor, TensorData};

use crate::common::harness::{Test, VULKAN};

const D: usize = 24;
const FF: usize = 104;

/// A second (third, …) Burn device on the first Vulkan adapter, opened with every (non-experimental)
/// feature and limit of the adapter (CubeCL sizes its kernels from the adapter's), registered with Burn.
fn open_device() -> (Device, wgpu::Device, wgpu::Queue) {
    let instance = context::instance(wgpu::Backends::VULKAN);
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let adapter = adapters.into_iter().next().expect("a Vulkan adapter");
    // Experimental features (mesh shaders, cooperative matrices, ray tracing: the H200 reports them) need
    // an opt-in a Burn device does not make; requesting them fails the device (seen on the H200).
    let features =
        adapter.features() - wgpu::Features::MAPPABLE_PRIMARY_BUFFERS - wgpu::Features::all_experimental_mask();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("bitsparse-burn test device"),
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .expect("a device");
    let setup = WgpuSetup {
        instance,
        adapter: adapter.clone(),
        device: device.clone(),
        queue: queue.clone(),
        backend: adapter.get_info().backend,
    };
    let burn_device = Device::wgpu_options().setup(setup).init().expect("Burn registers the device");
    (burn_device, device, queue)
}

/// Deterministic host data (the same bytes on every device).
fn host(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn block(device: &Device, ctx: Option<&BitSparse>) -> BitSparseMlp {
    let t2 = |r, c, seed| Tensor::<2>::from_data(TensorData::new(host(r * c, seed, 0.3), [r, c]), device);
    let t1 = |n, seed| Tensor::<1>::from_data(TensorData::new(host(n, seed, 0.2), [n]), device);
    let l = |w: Tensor<2>, b: Tensor<1>| Linear { weight: Param::from_tensor(w), bias: Some(Param::from_tensor(b)) };
    BitSparseMlp::from_linears(l(t2(D, FF, 1), t1(FF, 2)), l(t2(FF, D, 3), t1(D, 4)), MlpActivation::Relu2, ctx)
}

/// Three micro-batches through `m` on `device`: the bits of each output and of dW1, dW2.
fn run(m: &BitSparseMlp, device: &Device, ctx: Option<&BitSparse>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, rows) in [13usize, 29, 7].into_iter().enumerate() {
        let x = Tensor::<2>::from_data(TensorData::new(host(rows * D, 10 + i as u64, 1.0), [rows, D]), device);
        if let Some(ctx) = ctx {
            ctx.begin_step(device).unwrap();
        }
        let y = crate::reference::forward(m, x);
        let grads = (y.clone() * y.clone()).mean().backward();
        // Both paths' ops run as batches of their own (as in `mlp::step`).
        device.sync().expect("sync");
        if let Some(ctx) = ctx {
            // Its own device's arena took the block's one compressed tensor.
            let report = ctx.finish_step(device).unwrap();
            assert_eq!(report.tensors, 1);
            assert!(report.used_bytes > 0);
        }
        out.push(y.into_data().as_bytes().to_vec());
        for w in [&m.fc1.weight, &m.fc2.weight] {
            out.push(w.val().grad(&grads).unwrap().into_data().as_bytes().to_vec());
        }
    }
    out
}

fn two_devices_burn_f32() {
    let (dev_a, wa, qa) = open_device();
    let (dev_b, wb, qb) = open_device();
    let (dev_a, dev_b) = (dev_a.autodiff(), dev_b.autodiff());
    let ctx = BitSparse::new(&dev_a, &wa, &qa, BitSparseConfig::with_arena_bytes(1 << 20)).unwrap();
    ctx.add_device(&dev_b, &wb, &qb).unwrap();
    let m_a = block(&dev_a, Some(&ctx));
    let m_b = m_a.clone().fork(&dev_b);
    // Burn's autotune meets every shape of both paths once on each device before anything is compared:
    // its first call of a shape may compute with another candidate kernel than the one it keeps.
    for (m, d) in [(&m_a, &dev_a), (&m_b, &dev_b)] {
        run(&block(d, None), d, None);
        run(m, d, Some(&ctx));
    }
    // Single-device references: the dense block on each device alone. Each device autotunes on its own
    // timings, so two devices may keep different matmul kernels whose sums round differently (a CI run
    // on 2 cores saw it): a replica's bits are compared with its own device's dense run, as a
    // data-parallel step on separate GPUs would be.
    let dense_a = run(&block(&dev_a, None), &dev_a, None);
    let dense_b = run(&block(&dev_b, None), &dev_b, None);
    // The BitSparse block on A and its fork on B (the replica keeps the same context), concurrently.
    let (ctx_a, ctx_b) = (ctx.clone(), ctx.clone());
    let (da, db) = (dev_a.clone(), dev_b.clone());
    let ta = std::thread::spawn(move || run(&m_a, &da, Some(&ctx_a)));
    let tb = std::thread::spawn(move || run(&m_b, &db, Some(&ctx_b)));
    let (ra, rb) = (ta.join().expect("device A"), tb.join().expect("device B"));
    assert_eq!(ra, dense_a, "device A: BitSparse differs from the single-device dense run");
    assert_eq!(rb, dense_b, "device B: BitSparse differs from the single-device dense run");
}

pub fn tests() -> Vec<Test> {
    vec![Test::needs(
        crate::common::harness::name(module_path!(), "two_devices_burn_f32"),
        &[&VULKAN],
        two_devices_burn_f32,
    )]
}
