//! The char-level GPT: token + learned position embeddings, pre-norm blocks (LayerNorm → causal
//! attention → residual; LayerNorm → ReLU² MLP → residual), a final LayerNorm and a linear head.
//!
//! Every block's MLP is a [`BitSparseMlp`]: with a context it keeps relu(z) compressed for the
//! backward, without one it is Burn's dense block op for op. The two share parameters, so a dense and a
//! BitSparse model differ only in that field ([`Gpt::with_bitsparse`]).

use bitsparse_burn::{BitSparse, BitSparseMlp, BitSparseMlpConfig, MlpActivation};
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::nn::attention::{generate_autoregressive_mask, MhaInput, MultiHeadAttention, MultiHeadAttentionConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::{DType, Device, Int, Tensor, TensorCreationOptions};

/// Model shape.
#[derive(Copy, Clone, Debug, serde::Serialize)]
pub struct GptShape {
    /// Characters in the vocabulary.
    pub vocab: usize,
    /// Model width.
    pub d_model: usize,
    /// Blocks.
    pub n_layer: usize,
    /// Attention heads.
    pub n_head: usize,
    /// Context length (tokens per sequence).
    pub context: usize,
}

/// One pre-norm transformer block.
#[derive(Module, Debug)]
pub struct Block {
    ln1: LayerNorm,
    attn: MultiHeadAttention,
    ln2: LayerNorm,
    /// The MLP block (public: the demo measures it alone).
    pub mlp: BitSparseMlp,
}

impl Block {
    fn new(shape: &GptShape, device: &Device, ctx: &BitSparse) -> Block {
        let d = shape.d_model;
        Block {
            ln1: LayerNormConfig::new(d).init(device),
            // No dropout: the modes must compute the same function, and Burn's RNG would differ between them.
            attn: MultiHeadAttentionConfig::new(d, shape.n_head).with_dropout(0.0).init(device),
            ln2: LayerNormConfig::new(d).init(device),
            mlp: BitSparseMlpConfig::new(d, 4 * d).with_activation(MlpActivation::Relu2).init(device, ctx),
        }
    }

    /// The block's output and the MLP's input (so a caller can inspect relu(z) there).
    fn forward(&self, x: Tensor<3>, mask: &Tensor<3, burn::tensor::Bool>) -> (Tensor<3>, Tensor<3>) {
        let h = self.ln1.forward(x.clone());
        let x = x + self.attn.forward(MhaInput::self_attn(h).mask_attn(mask.clone())).context;
        let [b, t, d] = x.dims();
        let m = self.ln2.forward(x.clone());
        // The MLP runs on the tokens as rows ([b·t, d]): see `README.md`, "Open problems" (with a 3-D input
        // the BitSparse op's weight gradients differ from Burn's dense block in the last bits).
        let y = self.mlp.forward(m.clone().reshape([b * t, d])).reshape([b, t, d]);
        (x + y, m)
    }
}

/// The whole model.
#[derive(Module, Debug)]
pub struct Gpt {
    tok: Embedding,
    pos: Embedding,
    /// The blocks.
    pub blocks: Vec<Block>,
    ln_f: LayerNorm,
    head: Linear,
}

impl Gpt {
    /// A freshly initialised model on `device` (Burn's initialisers, seeded through the device), with
    /// BitSparse MLPs on `ctx`. Parameters are lazy until [`Gpt::materialize_params`].
    pub fn new(shape: &GptShape, device: &Device, ctx: &BitSparse) -> Gpt {
        Gpt {
            tok: EmbeddingConfig::new(shape.vocab, shape.d_model).init(device),
            pos: EmbeddingConfig::new(shape.context, shape.d_model).init(device),
            blocks: (0..shape.n_layer).map(|_| Block::new(shape, device, ctx)).collect(),
            ln_f: LayerNormConfig::new(shape.d_model).init(device),
            head: LinearConfig::new(shape.d_model, shape.vocab).init(device),
        }
    }

    /// The same model whose MLPs run BitSparse on `ctx` (`Some`) or as Burn's dense block (`None`).
    pub fn with_bitsparse(mut self, ctx: Option<&BitSparse>) -> Gpt {
        for block in &mut self.blocks {
            block.mlp.ctx = ctx.cloned();
        }
        self
    }

    /// Logits `[batch, context, vocab]` and each block's MLP input.
    pub fn forward_traced(&self, inputs: Tensor<2, Int>) -> (Tensor<3>, Vec<Tensor<3>>) {
        let device = inputs.device();
        let [batch, context] = inputs.dims();
        let positions = Tensor::<1, Int>::arange(0..context as i64, &device).reshape([1, context]);
        let mut x = self.tok.forward(inputs) + self.pos.forward(positions);
        let mask = generate_autoregressive_mask(batch, context, &device);
        let mut mlp_inputs = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            let (y, m) = block.forward(x, &mask);
            mlp_inputs.push(m);
            x = y;
        }
        (self.head.forward(self.ln_f.forward(x)), mlp_inputs)
    }

    /// Mean next-character cross-entropy of `inputs` against `targets` (`[batch · context]`).
    pub fn loss(&self, inputs: Tensor<2, Int>, targets: Tensor<1, Int>) -> Tensor<1> {
        let device = inputs.device();
        let (logits, _) = self.forward_traced(inputs);
        let [b, t, v] = logits.dims();
        CrossEntropyLossConfig::new().init(&device).forward(logits.reshape([b * t, v]), targets)
    }

    /// Initialises every lazy parameter now (Burn creates one on its first `.val()`), so that memory
    /// snapshots and copies see the real weights.
    pub fn materialize_params(&self) {
        struct Touch;
        impl ModuleVisitor for Touch {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                let _ = param.val();
            }
        }
        self.visit(&mut Touch);
    }

    /// Whether the model's parameters are F16.
    pub fn is_f16(&self) -> bool {
        self.head.weight.val().dtype() == DType::F16
    }

    /// An independent copy on `device`, parameters bit-for-bit equal: each one is read to the host and
    /// uploaded as a new leaf that requires gradients. This is how the modes start from the same
    /// weights on devices of different autodiff strategy (a plain `clone` would keep the source
    /// tensors' strategy; `fork` too).
    pub fn copy_to(&self, device: &Device) -> Gpt {
        self.copy_as(device, None)
    }

    /// [`Gpt::copy_to`] with the parameters stored as `dtype` whatever the device's default float type
    /// (the F32 master weights of an F16 model: bit-for-bit the F32 source's when it is F32).
    pub fn copy_to_dtype(&self, device: &Device, dtype: DType) -> Gpt {
        self.copy_as(device, Some(dtype))
    }

    /// The copy of both: `dtype` `None` takes the device's default float type (converting the values).
    fn copy_as(&self, device: &Device, dtype: Option<DType>) -> Gpt {
        struct CopyTo(TensorCreationOptions);
        impl ModuleMapper for CopyTo {
            fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
                param.map(|t| Tensor::from_data(t.into_data(), self.0.clone()).require_grad())
            }
        }
        self.clone().map(&mut CopyTo(TensorCreationOptions { device: device.clone(), dtype }))
    }

    /// Every parameter's path (`blocks.0.mlp.fc1.weight`) and bytes, in visiting order (the bit-identity
    /// check compares these).
    pub fn param_bytes(&self) -> Vec<(String, Vec<u8>)> {
        #[derive(Default)]
        struct Collect {
            path: Vec<String>,
            out: Vec<(String, Vec<u8>)>,
        }
        impl ModuleVisitor for Collect {
            fn enter_module(&mut self, name: &str, _container_type: &str) {
                self.path.push(name.to_string());
            }
            fn exit_module(&mut self, _name: &str, _container_type: &str) {
                self.path.pop();
            }
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                self.out.push((self.path.join("."), param.val().into_data().as_bytes().to_vec()));
            }
        }
        let mut c = Collect::default();
        self.visit(&mut c);
        c.out
    }
}
