//! The trainer's compute pipelines and the small machinery to record them.
//!
//! Every op is prebuilt once as a [`Dispatch`] (pipeline + bind group + grid): a training step then only
//! records passes into the caller's encoder, so it allocates nothing and reads nothing back. All buffers
//! are plain `array<u32>` storage in WGSL (f32 as one word, BF16 as half a word), which lets one layout per
//! binding count serve every kernel.

use std::collections::HashMap;

use bitsparse::{Error, Result};

/// Workgroups per grid row for the 1-D element kernels (they rebuild a linear index from a 2-D grid).
const GRID_X: u32 = 32768;

/// One recorded compute dispatch.
pub struct Dispatch {
    pub label: &'static str,
    pub pipeline: wgpu::ComputePipeline,
    pub bind_group: wgpu::BindGroup,
    pub groups: (u32, u32, u32),
}

/// Records `ops` into one compute pass. wgpu orders dispatches that share writable buffers.
pub fn record(enc: &mut wgpu::CommandEncoder, label: &str, ops: &[Dispatch]) {
    if ops.is_empty() {
        return;
    }
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
    for op in ops {
        pass.set_pipeline(&op.pipeline);
        pass.set_bind_group(0, &op.bind_group, &[]);
        pass.dispatch_workgroups(op.groups.0, op.groups.1, op.groups.2);
    }
}

/// A 2-D grid of 256-wide workgroups covering `items` invocations.
pub fn grid_1d(items: u64) -> (u32, u32, u32) {
    let groups = items.div_ceil(256).max(1);
    let x = groups.min(GRID_X as u64) as u32;
    let y = groups.div_ceil(x as u64) as u32;
    (x, y, 1)
}

/// A buffer range bound to one binding.
#[derive(Clone, Copy)]
pub struct Bind<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
}

impl<'a> Bind<'a> {
    pub fn whole(buffer: &'a wgpu::Buffer) -> Bind<'a> {
        Bind { buffer, offset: 0, size: buffer.size() }
    }
}

/// Shader entry points, by (file, entry, GEMM variant).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kernel {
    Gemm(GemmVariant),
    ActForward,
    ActBackward,
    EmbedForward,
    EmbedBackward,
    RmsForward,
    RmsBackward,
    ResidualAdd,
    SoftmaxXent,
    Adam,
    CountRelu,
    HashParams,
    LossMean,
}

/// A GEMM specialisation: transposes and which operands are BF16.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct GemmVariant {
    pub trans_a: bool,
    pub trans_b: bool,
    pub a_bf16: bool,
    pub b_bf16: bool,
    pub out_bf16: bool,
}

impl Kernel {
    fn file_entry(self) -> (&'static str, &'static str, usize) {
        match self {
            Kernel::Gemm(_) => ("train_gemm.wgsl", "gemm", 3),
            Kernel::ActForward => ("train_act.wgsl", "act_forward", 4),
            Kernel::ActBackward => ("train_act.wgsl", "act_backward", 4),
            Kernel::EmbedForward => ("train_ops.wgsl", "embed_forward", 5),
            Kernel::EmbedBackward => ("train_ops.wgsl", "embed_backward", 5),
            Kernel::RmsForward => ("train_ops.wgsl", "rms_forward", 5),
            Kernel::RmsBackward => ("train_ops.wgsl", "rms_backward", 5),
            Kernel::ResidualAdd => ("train_ops.wgsl", "residual_add", 5),
            Kernel::SoftmaxXent => ("train_ops.wgsl", "softmax_xent", 5),
            Kernel::Adam => ("train_ops.wgsl", "adam", 5),
            Kernel::CountRelu => ("train_stats.wgsl", "count_relu_nonzero", 3),
            Kernel::HashParams => ("train_stats.wgsl", "hash_params", 3),
            Kernel::LossMean => ("train_stats.wgsl", "loss_mean", 3),
        }
    }
}

/// Pipelines (built lazily, cached) and the device they live on.
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    modules: HashMap<&'static str, wgpu::ShaderModule>,
    layouts: HashMap<usize, (wgpu::BindGroupLayout, wgpu::PipelineLayout)>,
    pipelines: HashMap<Kernel, wgpu::ComputePipeline>,
    /// Unused binding slots are bound to these (distinct, so no two writable bindings alias).
    spare: Vec<wgpu::Buffer>,
}

impl Gpu {
    pub fn new(device: wgpu::Device, queue: wgpu::Queue) -> Gpu {
        let spare = (0..5)
            .map(|i| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(if i == 0 { "train.spare0" } else { "train.spare" }),
                    size: 256,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            })
            .collect();
        Gpu { device, queue, modules: HashMap::new(), layouts: HashMap::new(), pipelines: HashMap::new(), spare }
    }

    fn layout(&mut self, storage: usize) -> &(wgpu::BindGroupLayout, wgpu::PipelineLayout) {
        let device = &self.device;
        self.layouts.entry(storage).or_insert_with(|| {
            let mut entries = vec![wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }];
            for b in 1..=storage as u32 {
                entries.push(wgpu::BindGroupLayoutEntry {
                    binding: b,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only: false },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                });
            }
            let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("train.bgl"),
                entries: &entries,
            });
            let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("train.pl"),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
            (bgl, pl)
        })
    }

    fn pipeline(&mut self, k: Kernel) -> wgpu::ComputePipeline {
        if let Some(p) = self.pipelines.get(&k) {
            return p.clone();
        }
        let (file, entry, storage) = k.file_entry();
        if !self.modules.contains_key(file) {
            let src = shader_source(file);
            let m = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(file),
                source: wgpu::ShaderSource::Wgsl(src.into()),
            });
            self.modules.insert(file, m);
        }
        let constants: Vec<(&str, f64)> = match k {
            Kernel::Gemm(v) => vec![
                ("TRANS_A", v.trans_a as u8 as f64),
                ("TRANS_B", v.trans_b as u8 as f64),
                ("A_BF16", v.a_bf16 as u8 as f64),
                ("B_BF16", v.b_bf16 as u8 as f64),
                ("OUT_BF16", v.out_bf16 as u8 as f64),
            ],
            _ => Vec::new(),
        };
        let layout = self.layout(storage).1.clone();
        let module = &self.modules[file];
        let p = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: Some(&layout),
            module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: true,
            },
            cache: None,
        });
        self.pipelines.insert(k, p.clone());
        p
    }

    /// A storage buffer of `bytes` (rounded up to 16), zero-filled.
    pub fn buffer(&self, label: &str, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(16).div_ceil(16) * 16,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Prebuilds one dispatch of kernel `k` with uniform `params` and storage bindings 1..=n from `binds`
    /// (missing trailing ones are bound to spare buffers).
    pub fn dispatch(
        &mut self,
        label: &'static str,
        k: Kernel,
        params: [u32; 8],
        binds: &[Bind],
        groups: (u32, u32, u32),
    ) -> Result<Dispatch> {
        let (_, _, storage) = k.file_entry();
        if binds.len() > storage {
            return Err(Error::InvalidArgument(format!(
                "{label}: {} bindings for a kernel with {storage}",
                binds.len()
            )));
        }
        for b in binds {
            let align = self.device.limits().min_storage_buffer_offset_alignment as u64;
            if b.offset % align != 0 {
                return Err(Error::Misaligned { what: label, offset: b.offset, align });
            }
        }
        let pipeline = self.pipeline(k);
        let uniform = wgpu::util::DeviceExt::create_buffer_init(
            &self.device,
            &wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        for i in 0..storage {
            let res = match binds.get(i) {
                Some(b) => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: b.buffer,
                    offset: b.offset,
                    size: std::num::NonZeroU64::new(b.size),
                }),
                None => self.spare[i].as_entire_binding(),
            };
            entries.push(wgpu::BindGroupEntry { binding: i as u32 + 1, resource: res });
        }
        let bgl = &self.layouts[&storage].0; // created by `pipeline` above
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: bgl,
            entries: &entries,
        });
        Ok(Dispatch { label, pipeline, bind_group, groups })
    }
}

/// Params word for an f32.
pub fn fbits(x: f32) -> u32 {
    x.to_bits()
}

include!(concat!(env!("OUT_DIR"), "/train_shaders.rs"));

/// The trainer's shader `file` (under `shaders/train_ffn/`, embedded and validated by `demos/build.rs`),
/// includes expanded; the core's snippets (`lib/act.wgsl`) come from the core.
fn shader_source(file: &str) -> String {
    let own = |n: &str| TRAIN_SHADERS.iter().find(|(f, _)| *f == n).map(|(_, s)| s.to_string());
    bitsparse::shaders::source_with(file, &own, &[])
        .unwrap_or_else(|e| panic!("trainer shader {file} is malformed: {e}"))
}
