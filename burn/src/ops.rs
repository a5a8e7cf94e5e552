//! The backend extension: the MLP block `Linear → ReLU² (or ReLU) → Linear` as one autodiff op whose
//! saved state is the block's input x and the BitSparse stream of relu(z).
//!
//! Why the whole block: Burn's matmul (and `linear`) autodiff keeps its left operand, so after a
//! separate activation op the second projection would keep a = relu(z)² dense whatever the activation
//! saved (`BURN-NOTES`: 13·d floats per token for the dense block, of which the 4·d of r² are fc2's).
//!
//! Bit-identity with Burn's dense block comes from calling the same backend ops in the same order:
//! `B::linear` forward, and in backward `B::linear_x_backward`, `B::linear_weight_backward`,
//! `B::linear_bias_backward` exactly as Burn's `linear` autodiff does; the fused kernels compute
//! a = r·r, t = g·r, dr = t + t, dL/dz = dr where r > 0 with one rounding each, as Burn's `mul`,
//! gradient accumulation and `relu_backward` do (F16: dr = 2·g·r rounded once, as Burn's fused kernel
//! computes it; `docs/FUSED.md`). Measured on the H200 (`demos/burn_gpt/results/`, d = 768, 12 layers,
//! context 256, after 1,500 pre-training steps): the block keeps 2.4 KB per token instead of 36.9 KB,
//! and a training step takes 0.5% longer than with Burn's dense block. Each op runs on CubeCL's server
//! thread (see `Stash::on_server`), about 0.45 ms of that thread's time per op, unwaited.

use std::sync::{Arc, Mutex};

use bitsparse::arena::Slot;
use bitsparse::host::sync;
use bitsparse::{Activation, BufferRange, DType, Options};
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::backend::{backend_extension, tensor::FloatTensor, Backend};
use burn_cubecl::cubecl::wgpu::WgpuResource;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;
use cubecl_environment::stream::StreamId;
use cubecl_runtime::server::{Handle, Server as _, ServerStorage as _};

use crate::context::{BitSparse, DeviceCtx, Server};
use crate::error::{Error, Result};

/// What the forward leaves for the backward: the context, the activation, and the arena slot the
/// forward's compress filled (set when the op runs, which under fusion is after it is recorded).
#[derive(Clone, Debug)]
pub struct Stash {
    ctx: BitSparse,
    act: Activation,
    slot: Arc<Mutex<Option<Slot>>>,
}

impl Stash {
    /// A new, empty stash for one forward of one block.
    pub fn new(ctx: &BitSparse, act: Activation) -> Stash {
        Stash { ctx: ctx.clone(), act, slot: Arc::new(Mutex::new(None)) }
    }

    /// The activation.
    pub fn activation(&self) -> Activation {
        self.act
    }

    fn set(&self, slot: Option<Slot>) {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = slot;
    }

    fn take(&self) -> Option<Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The ops behind [`crate::BitSparseMlp`]. `bitsparse_mlp` is the differentiable one; the other two are
/// its forward and backward halves on the inner backend (dense outputs written by the fused kernels).
#[backend_extension(Cube, Autodiff, Fusion)]
pub trait BitSparseBackend: Backend {
    /// From the pre-activation h: a = act(relu(h)), and relu(h) compressed into the arena (`stash`).
    #[fusion(meta = |h, _stash| h.clone())]
    fn bitsparse_act_forward(h: FloatTensor<Self>, stash: Stash) -> FloatTensor<Self>;

    /// From g = dL/da and the stash the forward filled: (dL/dh, a).
    #[fusion(meta = |g, _stash| (g.clone(), g.clone()))]
    fn bitsparse_act_backward(g: FloatTensor<Self>, stash: Stash) -> (FloatTensor<Self>, FloatTensor<Self>);

    /// `linear(act(relu(linear(x, w1, b1))), w2, b2)`. Without autodiff (inference) this is Burn's dense
    /// computation; under autodiff the block keeps x and the compressed relu(z) for its backward.
    #[fusion(default)]
    fn bitsparse_mlp(
        x: FloatTensor<Self>,
        w1: FloatTensor<Self>,
        b1: FloatTensor<Self>,
        w2: FloatTensor<Self>,
        b2: FloatTensor<Self>,
        stash: Stash,
    ) -> FloatTensor<Self> {
        dense_mlp::<Self>(x, w1, Some(b1), w2, Some(b2), stash.act)
    }

    /// [`BitSparseBackend::bitsparse_mlp`] without biases.
    #[fusion(default)]
    fn bitsparse_mlp_no_bias(
        x: FloatTensor<Self>,
        w1: FloatTensor<Self>,
        w2: FloatTensor<Self>,
        stash: Stash,
    ) -> FloatTensor<Self> {
        dense_mlp::<Self>(x, w1, None, w2, None, stash.act)
    }
}

/// Burn's dense block with the ops its `Linear`, `relu` and `mul` use.
fn dense_mlp<B: Backend>(
    x: FloatTensor<B>,
    w1: FloatTensor<B>,
    b1: Option<FloatTensor<B>>,
    w2: FloatTensor<B>,
    b2: Option<FloatTensor<B>>,
    act: Activation,
) -> FloatTensor<B> {
    let r = B::relu(B::linear(x, w1, b1));
    let a = match act {
        Activation::Relu => r,
        Activation::Relu2 | Activation::Relu2Stepwise => B::float_mul(r.clone(), r),
    };
    B::linear(a, w2, b2)
}

// ---------------------------------------------------------------------------------------------------
// The inner backend: CubeCL on wgpu.

fn dtype_of(t: &CubeTensor) -> Result<DType> {
    match t.dtype {
        burn::tensor::DType::F32 => Ok(DType::F32),
        burn::tensor::DType::F16 => Ok(DType::F16),
        burn::tensor::DType::BF16 => Ok(DType::Bf16),
        other => Err(Error::Unsupported(format!("the BitSparse MLP computes in F32, F16 or BF16, not {other:?}"))),
    }
}

/// A contiguous tensor of the same shape and dtype, uninitialised (the fused kernels write all of it).
fn empty_like(t: &CubeTensor) -> CubeTensor {
    let shape = t.meta.shape().clone();
    let bytes = shape.num_elements() * t.dtype.size();
    let handle = t.client.empty(bytes.max(4));
    CubeTensor::new_contiguous(t.client.clone(), t.device.clone(), shape, handle, t.dtype)
}

/// Strided or offset views are copied to a contiguous tensor first (the codec reads element order).
fn contiguous(t: CubeTensor) -> CubeTensor {
    if t.is_contiguous() && t.is_contiguous_buffer() {
        t
    } else {
        burn_cubecl::kernel::into_contiguous(t)
    }
}

/// A pinned buffer range behind a tensor: not relocated or reused while held.
struct Pinned(cubecl_runtime::storage::ManagedResource<WgpuResource>);

impl Pinned {
    /// Looks `handle` up on its server (this runs on CubeCL's server thread: no round trip).
    fn of(server: &mut Server, handle: Handle, stream: StreamId) -> Result<Pinned> {
        server
            .get_resource(handle.binding(), stream)
            .map(Pinned)
            .map_err(|e| Error::Burn(format!("the buffer behind a tensor: {e:?}")))
    }

    fn range(&self, bytes: u64) -> BufferRange<'_> {
        let r = self.0.resource();
        BufferRange::new(&r.buffer, r.offset, bytes)
    }
}

/// Submits Burn's pending work on the calling stream, so that ours, submitted next on the same
/// queue, sees its results.
fn flush(server: &mut Server, stream: StreamId) -> Result<()> {
    server.flush(stream).map_err(|e| Error::Burn(format!("flushing Burn's stream: {e:?}")))
}

impl Stash {
    /// Records and submits the fused forward. Runs on CubeCL's server thread, in order with Burn's
    /// own work for the stream: flush, buffer lookups and our submit cost the training thread nothing.
    fn forward(&self, ctx: &DeviceCtx, server: &mut Server, h: &CubeTensor, a: &CubeTensor) -> Result<()> {
        let dtype = dtype_of(h)?;
        let n = h.meta.shape().num_elements() as u64;
        if n == 0 {
            self.set(None);
            return Ok(());
        }
        let bytes = n * dtype.bytes();
        let stream = StreamId::current();
        flush(server, stream)?;
        let hp = Pinned::of(server, h.handle.clone(), stream)?;
        let ap = Pinned::of(server, a.handle.clone(), stream)?;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.burn.forward") });
        let options = Options { sign_pack: ctx.config.sign_pack };
        let slot =
            ctx.arena().fused_forward_dtype(&mut enc, hp.range(bytes), dtype, n, self.act, options, ap.range(bytes))?;
        sync::enqueue(&ctx.queue, [enc.finish()]);
        self.set(Some(slot));
        ctx.count_push(bytes);
        Ok(())
    }

    /// Records and submits the fused backward: dz and a from g and the stream (on the server thread,
    /// as [`Stash::forward`]).
    fn backward(
        &self,
        ctx: &DeviceCtx,
        server: &mut Server,
        g: &CubeTensor,
        dz: &CubeTensor,
        a: &CubeTensor,
    ) -> Result<()> {
        let dtype = dtype_of(g)?;
        let n = g.meta.shape().num_elements() as u64;
        if n == 0 {
            return Ok(());
        }
        let Some(slot) = self.take() else { return Err(Error::MissingSlot) };
        if slot.layout.n != n || slot.layout.dtype != dtype {
            return Err(Error::Unsupported(format!(
                "the gradient ({n} {dtype}) does not match the forward's activation ({} {})",
                slot.layout.n, slot.layout.dtype
            )));
        }
        let bytes = n * dtype.bytes();
        let stream = StreamId::current();
        flush(server, stream)?;
        let gp = Pinned::of(server, g.handle.clone(), stream)?;
        let dzp = Pinned::of(server, dz.handle.clone(), stream)?;
        let ap = Pinned::of(server, a.handle.clone(), stream)?;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.burn.backward") });
        ctx.arena().fused_backward(
            &mut enc,
            &slot,
            ctx.backward_activation(self.act, dtype),
            gp.range(bytes),
            dzp.range(bytes),
            Some(ap.range(bytes)),
        )?;
        sync::enqueue(&ctx.queue, [enc.finish()]);
        Ok(())
    }
}

impl BitSparseBackend for CubeBackend {
    fn bitsparse_act_forward(h: FloatTensor<Self>, stash: Stash) -> FloatTensor<Self> {
        let t0 = std::time::Instant::now();
        let h = contiguous(h);
        let a = empty_like(&h);
        let (hs, as_) = (h.clone(), a.clone());
        stash.on_server(&h, t0, move |stash, ctx, server| stash.forward(ctx, server, &hs, &as_));
        a
    }

    fn bitsparse_act_backward(g: FloatTensor<Self>, stash: Stash) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let t0 = std::time::Instant::now();
        let g = contiguous(g);
        let (dz, a) = (empty_like(&g), empty_like(&g));
        let (gs, dzs, as_) = (g.clone(), dz.clone(), a.clone());
        stash.on_server(&g, t0, move |stash, ctx, server| stash.backward(ctx, server, &gs, &dzs, &as_));
        (dz, a)
    }
}

impl Stash {
    /// Hands `f` to CubeCL's server thread of `t`'s device without waiting: it runs there after every
    /// task Burn queued before it and before every task Burn queues after it (one FIFO per device), so
    /// the order on the shared queue is Burn's pending work, ours, Burn's later work. The tensors `f`
    /// holds stay alive until it has run. An error fails that device's step (or every device's, when
    /// `t`'s device has no state), reported by `finish_step`: Burn ops cannot return errors.
    ///
    /// Why: the first version flushed Burn's stream and looked up each buffer from the training thread,
    /// 3–4 blocking round trips to the server thread per op; on the H200 the 24 ops of a step took
    /// 21–58 ms of training-thread time and the BitSparse step was 17 ms (+12.5%) longer than the dense
    /// one (`demos/burn_gpt/results/`).
    fn on_server(
        &self,
        t: &CubeTensor,
        t0: std::time::Instant,
        f: impl FnOnce(&Stash, &DeviceCtx, &mut Server) -> Result<()> + Send + 'static,
    ) {
        match self.ctx.lookup(&t.device) {
            Ok(ctx) => {
                let (stash, c) = (self.clone(), ctx.clone());
                ctx.on_server_thread(move |server: &mut Server| {
                    let t1 = std::time::Instant::now();
                    if let Err(e) = f(&stash, &c, server) {
                        c.fail(e);
                    }
                    c.count_server_time(t1.elapsed());
                });
                ctx.count_host_time(t0.elapsed());
            }
            Err(e) => self.ctx.fail_all(e),
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Autodiff.

/// The saved state: x and the weights as checkpointed nodes (as Burn's `linear` keeps them), the
/// stash with the compressed relu(z).
#[derive(Clone, Debug)]
struct MlpState {
    x: NodeId,
    w1: NodeId,
    w2: NodeId,
    stash: Stash,
}

#[derive(Debug)]
struct MlpBackward;

#[derive(Debug)]
struct MlpBackwardNoBias;

/// The backward both variants share; `node_b1` / `node_b2` are `None` without biases.
#[allow(clippy::too_many_arguments)]
fn mlp_backward<B: BitSparseBackend>(
    [node_x, node_w1, node_w2, node_b1, node_b2]: [Option<NodeId>; 5],
    gy: FloatTensor<B>,
    state: MlpState,
    grads: &mut Gradients,
    checkpointer: &mut Checkpointer,
) {
    let x = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(state.x);
    let w1 = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(state.w1);
    let w2 = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(state.w2);
    // fc2, as Burn's linear backward: dx (= dL/da), dW, db.
    let da = B::linear_x_backward(w2, gy.clone());
    let (dz, a) = B::bitsparse_act_backward(da, state.stash);
    if let Some(n) = node_w2 {
        grads.register::<B>(n, B::linear_weight_backward(a, gy.clone()));
    }
    if let Some(n) = node_b2 {
        grads.register::<B>(n, B::linear_bias_backward(gy));
    }
    // fc1.
    if let Some(n) = node_x {
        grads.register::<B>(n, B::linear_x_backward(w1, dz.clone()));
    }
    if let Some(n) = node_w1 {
        grads.register::<B>(n, B::linear_weight_backward(x, dz.clone()));
    }
    if let Some(n) = node_b1 {
        grads.register::<B>(n, B::linear_bias_backward(dz));
    }
}

impl<B: BitSparseBackend> Backward<B, 5> for MlpBackward {
    type State = MlpState;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let gy = grads.consume::<B>(&ops.node);
        let [x, w1, b1, w2, b2] = ops.parents.map(|p| p.map(|n| n.id));
        mlp_backward::<B>([x, w1, w2, b1, b2], gy, ops.state, grads, checkpointer);
    }
}

impl<B: BitSparseBackend> Backward<B, 3> for MlpBackwardNoBias {
    type State = MlpState;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let gy = grads.consume::<B>(&ops.node);
        let [x, w1, w2] = ops.parents.map(|p| p.map(|n| n.id));
        mlp_backward::<B>([x, w1, w2, None, None], gy, ops.state, grads, checkpointer);
    }
}

impl<B: BitSparseBackend, C: CheckpointStrategy> BitSparseBackend for Autodiff<B, C> {
    fn bitsparse_act_forward(h: FloatTensor<Self>, stash: Stash) -> FloatTensor<Self> {
        // Not differentiable on its own (the block op is): an untracked result.
        <FloatTensor<Self>>::new(B::bitsparse_act_forward(h.into_primitive(), stash))
    }

    fn bitsparse_act_backward(g: FloatTensor<Self>, stash: Stash) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (dz, a) = B::bitsparse_act_backward(g.into_primitive(), stash);
        (<FloatTensor<Self>>::new(dz), <FloatTensor<Self>>::new(a))
    }

    fn bitsparse_mlp(
        x: FloatTensor<Self>,
        w1: FloatTensor<Self>,
        b1: FloatTensor<Self>,
        w2: FloatTensor<Self>,
        b2: FloatTensor<Self>,
        stash: Stash,
    ) -> FloatTensor<Self> {
        let prep = MlpBackward.prepare::<C>([x.node(), w1.node(), b1.node(), w2.node(), b2.node()]);
        match prep.compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = MlpState {
                    x: prep.checkpoint(&x),
                    w1: prep.checkpoint(&w1),
                    w2: prep.checkpoint(&w2),
                    stash: stash.clone(),
                };
                let y = tracked_forward::<B>(
                    x.into_primitive(),
                    w1.into_primitive(),
                    Some(b1.into_primitive()),
                    w2.into_primitive(),
                    Some(b2.into_primitive()),
                    stash,
                );
                prep.finish(state, y)
            }
            OpsKind::UnTracked(prep) => prep.finish(dense_mlp::<B>(
                x.into_primitive(),
                w1.into_primitive(),
                Some(b1.into_primitive()),
                w2.into_primitive(),
                Some(b2.into_primitive()),
                stash.act,
            )),
        }
    }

    fn bitsparse_mlp_no_bias(
        x: FloatTensor<Self>,
        w1: FloatTensor<Self>,
        w2: FloatTensor<Self>,
        stash: Stash,
    ) -> FloatTensor<Self> {
        match MlpBackwardNoBias.prepare::<C>([x.node(), w1.node(), w2.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = MlpState {
                    x: prep.checkpoint(&x),
                    w1: prep.checkpoint(&w1),
                    w2: prep.checkpoint(&w2),
                    stash: stash.clone(),
                };
                let y = tracked_forward::<B>(
                    x.into_primitive(),
                    w1.into_primitive(),
                    None,
                    w2.into_primitive(),
                    None,
                    stash,
                );
                prep.finish(state, y)
            }
            OpsKind::UnTracked(prep) => prep.finish(dense_mlp::<B>(
                x.into_primitive(),
                w1.into_primitive(),
                None,
                w2.into_primitive(),
                None,
                stash.act,
            )),
        }
    }
}

/// The tracked forward: fc1, the fused activation (the dense a for fc2, and the compressed r for the
/// backward), fc2. h and a are dropped here; of the block's activations only x and the stream stay.
fn tracked_forward<B: BitSparseBackend>(
    x: FloatTensor<B>,
    w1: FloatTensor<B>,
    b1: Option<FloatTensor<B>>,
    w2: FloatTensor<B>,
    b2: Option<FloatTensor<B>>,
    stash: Stash,
) -> FloatTensor<B> {
    let h = B::linear(x, w1, b1);
    let a = B::bitsparse_act_forward(h, stash);
    B::linear(a, w2, b2)
}
