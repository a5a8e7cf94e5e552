//! Compute kernels built from the reflected shader interfaces, and the one helper that records them.
//!
//! A [`Program`] is one variant of one shader file (a file and its defines): its module, and its
//! bind-group layout built from the interface `build.rs` reflected with naga ([`crate::shaders::reflect`]).
//! A [`Kernel`] is one entry point of a program. [`KernelDispatch`] records a kernel into a compute pass,
//! in the spirit of wgcore's `KernelDispatch`: resources bound by their WGSL names, the uniform from a
//! [`ShaderParams`] struct, then the grid:
//!
//! ```ignore
//! KernelDispatch::new(device, &mut pass, &kernel)
//!     .bind([("in0", z.binding()), ("in1", dummy), ("out0", a.binding())])
//!     .params(&params)
//!     .dispatch([x, y, 1]);
//! ```
//!
//! So binding numbers are written once, in the WGSL, and a uniform struct's layout is checked against the
//! WGSL's at compile time ([`shader_params!`](crate::shader_params)).

use crate::shaders::{self, reflect::BindKind, reflect::EntryPoint, reflect::Interface};

/// How a shader module is built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Trust {
    /// With wgpu's runtime checks (`create_shader_module`).
    Checked,
    /// Without wgpu's injected bounds checks and loop bounding (`create_shader_module_trusted`): see
    /// [`Program::new`] for when that is sound.
    Trusted,
}

/// One variant of one shader file: the module, and the bind-group layout of its reflected interface.
#[derive(Debug)]
pub struct Program {
    file: &'static str,
    label: String,
    interface: &'static Interface,
    module: wgpu::ShaderModule,
    layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
}

impl Program {
    /// Builds `shaders/<file>` with `defines`. The bind-group layout holds every resource the variant
    /// declares, with the access it declares (as the library always wrote them by hand).
    ///
    /// [`Trust::Trusted`] builds the module without wgpu's injected bounds checks and loop bounding. Only
    /// for shaders whose indices are proven in range: the codec kernels index workgroup arrays with values
    /// bounded by the tile geometry (see the comments at each array), every loop has a bounded trip count
    /// or a bounded spin, and storage accesses are covered by the robust buffer access that wgpu enables on
    /// every backend here. Why: the injected 64-bit loop counters keep drivers from unrolling the small
    /// per-round loops, which then index private arrays dynamically.
    ///
    /// Panics only for a file the crate does not ship (every shipped variant is in the table).
    pub fn new(device: &wgpu::Device, file: &'static str, defines: &[&str], trust: Trust) -> Program {
        let label = format!("bitsparse.{file}{defines:?}");
        let interface = shaders::interface(file, defines).unwrap_or_else(|| panic!("no shader {file}"));
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(shaders::source(file, defines).into()),
        };
        let module = match trust {
            Trust::Checked => device.create_shader_module(desc),
            Trust::Trusted => {
                let checks = wgpu::ShaderRuntimeChecks {
                    bounds_checks: false,
                    force_loop_bounding: false,
                    ..wgpu::ShaderRuntimeChecks::checked()
                };
                // SAFETY: see the doc comment: indices are bounded by construction and loops terminate.
                unsafe { device.create_shader_module_trusted(desc, checks) }
            }
        };
        let entries: Vec<_> = interface.resources.iter().map(|b| b.layout_entry()).collect();
        let layout = device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(&label), entries: &entries });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(&label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        Program { file, label, interface, module, layout, pipeline_layout }
    }

    /// The pipeline of entry point `entry` with override `constants`: those of the constants the variant
    /// declares (the reflected [`Interface::overrides`]; a `#if` that removes the code using an override
    /// removes its declaration too, and wgpu refuses a constant its module lacks). Panics if the variant has
    /// no such entry point.
    pub fn kernel(&self, device: &wgpu::Device, entry: &str, constants: &[(&str, f64)]) -> Kernel {
        let ep =
            self.interface.entry_point(entry).unwrap_or_else(|| panic!("{} has no entry point {entry}", self.label));
        let label = format!("{}:{entry}", self.label);
        let constants: Vec<(&str, f64)> =
            constants.iter().copied().filter(|(n, _)| self.interface.declares_override(n)).collect();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&self.pipeline_layout),
            module: &self.module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                // Every workgroup variable is written before it is read; wgpu's zeroing would cost time.
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        Kernel { file: self.file, label, interface: self.interface, entry: ep, layout: self.layout.clone(), pipeline }
    }

    /// The bind-group layout (shared by the program's kernels).
    pub fn layout(&self) -> &wgpu::BindGroupLayout {
        &self.layout
    }

    /// The reflected interface.
    pub fn interface(&self) -> &'static Interface {
        self.interface
    }
}

/// One entry point of a [`Program`]: its pipeline, and what binding it by name needs.
#[derive(Clone, Debug)]
pub struct Kernel {
    file: &'static str,
    label: String,
    interface: &'static Interface,
    entry: &'static EntryPoint,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

impl Kernel {
    /// The compute pipeline.
    pub fn pipeline(&self) -> &wgpu::ComputePipeline {
        &self.pipeline
    }

    /// The program's bind-group layout.
    pub fn layout(&self) -> &wgpu::BindGroupLayout {
        &self.layout
    }

    /// `@workgroup_size` of the entry point.
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.entry.workgroup_size
    }

    /// The reflected entry point.
    pub fn entry_point(&self) -> &'static EntryPoint {
        self.entry
    }
}

/// A Rust struct that mirrors a WGSL uniform struct: declared with [`shader_params!`](crate::shader_params),
/// which checks its size and every member's offset and size against the reflected layout at compile time.
pub trait ShaderParams: bytemuck::Pod {
    /// The shader files (paths under `shaders/`) that bind it: one, or several sharing the struct from
    /// a `shaders/lib/` file.
    const SHADERS: &'static [&'static str];
    /// The WGSL struct's name.
    const STRUCT: &'static str;
}

/// Declares a `#[repr(C)]` Pod struct mirroring the uniform struct `$wgsl` of `shaders/$shader` (or of
/// several shader files, comma-separated, that share it), and checks at compile time, for each file,
/// that it has the WGSL struct's size and, member by member (by name, in any order), its offsets and
/// sizes, and no member more or less: a Rust params struct that disagrees with its shader fails the
/// build. The calling crate needs `bytemuck` (the derives).
///
/// ```
/// bitsparse::shader_params! {
///     /// The uniform of `copy.wgsl`.
///     pub struct CopyParams: "copy.wgsl" Params { pub words4: u32, pub seed: u32, pub _pad1: u32, pub _pad2: u32 }
/// }
/// ```
///
/// Members out of the shader's order do not build:
///
/// ```compile_fail,E0080
/// bitsparse::shader_params! {
///     pub struct CopyParams: "copy.wgsl" Params { pub seed: u32, pub words4: u32, pub _pad1: u32, pub _pad2: u32 }
/// }
/// ```
///
/// Nor does a struct with a member too few (or too many, or of another size):
///
/// ```compile_fail,E0080
/// bitsparse::shader_params! {
///     pub struct CopyParams: "copy.wgsl" Params { pub words4: u32, pub seed: u32, pub _pad1: u32 }
/// }
/// ```
///
/// Nor one that a second shader it names lays out differently (`plain_act.wgsl`'s `Params` has other members):
///
/// ```compile_fail,E0080
/// bitsparse::shader_params! {
///     pub struct CopyParams: "copy.wgsl", "plain_act.wgsl" Params { pub words4: u32, pub seed: u32, pub _pad1: u32, pub _pad2: u32 }
/// }
/// ```
#[macro_export]
macro_rules! shader_params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident : $($shader:literal),+ $wgsl:ident $fields:tt) => {
        $crate::shader_params!(@struct [$(#[$meta])*] $vis $name $fields);

        impl $crate::dispatch::ShaderParams for $name {
            const SHADERS: &'static [&'static str] = &[$($shader),+];
            const STRUCT: &'static str = stringify!($wgsl);
        }

        $( $crate::shader_params!(@check $name $shader $wgsl $fields); )+
    };
    (@struct [$($meta:tt)*] $vis:vis $name:ident { $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)? }) => {
        $($meta)*
        #[derive(Copy, Clone, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }
    };
    (@check $name:ident $shader:literal $wgsl:ident { $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)? }) => {
        const _: () = {
            let Some(layout) = $crate::shaders::uniform_layout($shader, stringify!($wgsl)) else {
                panic!(concat!($shader, " binds no uniform struct ", stringify!($wgsl)))
            };
            assert!(
                ::core::mem::size_of::<$name>() == layout.size as usize,
                concat!(stringify!($name), ": size differs from ", $shader, "'s ", stringify!($wgsl))
            );
            let mut fields = 0;
            $(
                let Some(m) = layout.member(stringify!($field)) else {
                    panic!(concat!(stringify!($name), ".", stringify!($field), ": no such member in ", $shader))
                };
                assert!(
                    ::core::mem::offset_of!($name, $field) == m.offset as usize
                        && ::core::mem::size_of::<$ty>() == m.size as usize,
                    concat!(stringify!($name), ".", stringify!($field), ": offset or size differs from ", $shader)
                );
                fields += 1;
            )*
            assert!(
                fields == layout.members.len(),
                concat!(stringify!($name), ": ", $shader, "'s ", stringify!($wgsl), " has members it lacks")
            );
        };
    };
}

/// A small uniform buffer holding one kernel's parameters. Created per recorded dispatch, at creation
/// time (mapped, no queue write): two dispatches recorded into one encoder must not share a parameter
/// buffer that a `queue.write_buffer` would overwrite before either runs.
pub fn params_buffer<T: bytemuck::Pod>(device: &wgpu::Device, label: &str, params: &T) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytemuck::bytes_of(params),
        usage: wgpu::BufferUsages::UNIFORM,
    })
}

/// Begins a compute pass labelled `label` (no timestamps).
pub fn begin_pass<'e>(encoder: &'e mut wgpu::CommandEncoder, label: &str) -> wgpu::ComputePass<'e> {
    encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None })
}

/// The resources of one bind group of a kernel, by WGSL name, and its uniform.
///
/// # Panics
/// On a name the kernel's program does not declare, and (in [`Bindings::build`]) when a declared resource
/// was left unbound: programming errors, which any test of the call site finds.
#[derive(Debug)]
pub struct Bindings<'a> {
    kernel: &'a Kernel,
    entries: Vec<wgpu::BindGroupEntry<'a>>,
    params: Option<(u32, wgpu::Buffer)>,
}

impl<'a> Bindings<'a> {
    /// No resources bound yet.
    pub fn new(kernel: &'a Kernel) -> Bindings<'a> {
        Bindings { kernel, entries: Vec::new(), params: None }
    }

    /// Binds each `(name, range)`.
    pub fn bind<I: IntoIterator<Item = (&'static str, wgpu::BufferBinding<'a>)>>(&mut self, entries: I) -> &mut Self {
        for (name, range) in entries {
            let b = self.kernel.interface.resource(name);
            let b = b.unwrap_or_else(|| panic!("{} declares no resource `{name}`", self.kernel.label));
            self.entries
                .push(wgpu::BindGroupEntry { binding: b.binding, resource: wgpu::BindingResource::Buffer(range) });
        }
        self
    }

    /// Binds `params` to the program's uniform, in a new buffer ([`params_buffer`]).
    pub fn params<P: ShaderParams>(&mut self, device: &wgpu::Device, params: &P) -> &mut Self {
        debug_assert!(P::SHADERS.contains(&self.kernel.file), "{} takes no {}", self.kernel.label, P::STRUCT);
        let u = self.kernel.interface.resources.iter().find(|b| b.kind == BindKind::Uniform);
        let u = u.unwrap_or_else(|| panic!("{} has no uniform", self.kernel.label));
        self.params = Some((u.binding, params_buffer(device, &self.kernel.label, params)));
        self
    }

    /// The bind group; the builder is empty again afterwards.
    pub fn build(&mut self, device: &wgpu::Device) -> wgpu::BindGroup {
        let params = self.params.take();
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = std::mem::take(&mut self.entries);
        if let Some((binding, buffer)) = &params {
            entries.push(wgpu::BindGroupEntry { binding: *binding, resource: buffer.as_entire_binding() });
        }
        if entries.len() != self.kernel.interface.resources.len() {
            let unbound: Vec<_> = (self.kernel.interface.resources.iter())
                .filter(|r| !entries.iter().any(|e| e.binding == r.binding))
                .map(|r| r.name)
                .collect();
            panic!("{}: unbound {unbound:?} or bound twice", self.kernel.label);
        }
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&self.kernel.label),
            layout: &self.kernel.layout,
            entries: &entries,
        })
    }
}

/// Records dispatches of one kernel into a compute pass: sets its pipeline once, then per dispatch binds
/// resources by name, the uniform and the grid. Several dispatches may follow one `new` (a chunked
/// operation), each with its own bind group.
#[derive(Debug)]
pub struct KernelDispatch<'a, 'e> {
    device: &'a wgpu::Device,
    pass: &'a mut wgpu::ComputePass<'e>,
    bindings: Bindings<'a>,
}

impl<'a, 'e> KernelDispatch<'a, 'e> {
    /// Sets `kernel`'s pipeline on `pass`.
    pub fn new(device: &'a wgpu::Device, pass: &'a mut wgpu::ComputePass<'e>, kernel: &'a Kernel) -> Self {
        pass.set_pipeline(&kernel.pipeline);
        KernelDispatch { device, pass, bindings: Bindings::new(kernel) }
    }

    /// Binds each `(name, range)` for the next dispatch.
    pub fn bind<I: IntoIterator<Item = (&'static str, wgpu::BufferBinding<'a>)>>(&mut self, entries: I) -> &mut Self {
        self.bindings.bind(entries);
        self
    }

    /// The uniform of the next dispatch.
    pub fn params<P: ShaderParams>(&mut self, params: &P) -> &mut Self {
        self.bindings.params(self.device, params);
        self
    }

    /// Dispatches `grid` workgroups with what was bound; returns the bind group (another kernel of the
    /// same program may reuse it with [`KernelDispatch::dispatch_group`]).
    pub fn dispatch(&mut self, grid: [u32; 3]) -> wgpu::BindGroup {
        let group = self.bindings.build(self.device);
        self.dispatch_group(&group, grid);
        group
    }

    /// Dispatches with the arguments at `offset` of `indirect` (e.g. an arena gate's).
    pub fn dispatch_indirect(&mut self, indirect: &wgpu::Buffer, offset: u64) -> wgpu::BindGroup {
        let group = self.bindings.build(self.device);
        self.pass.set_bind_group(0, &group, &[]);
        self.pass.dispatch_workgroups_indirect(indirect, offset);
        group
    }

    /// Dispatches `grid` workgroups with a bind group built before (by [`Bindings::build`] or a dispatch
    /// of a kernel of the same program).
    pub fn dispatch_group(&mut self, group: &wgpu::BindGroup, grid: [u32; 3]) {
        self.pass.set_bind_group(0, group, &[]);
        self.pass.dispatch_workgroups(grid[0], grid[1], grid[2]);
    }
}

#[cfg(test)]
mod tests {
    use crate::shaders::reflect::{Access, BindKind};
    use crate::shaders::{interface, uniform_layout};

    #[test]
    fn interfaces_follow_the_defines() {
        let plain = interface("compress.wgsl", &["SUBGROUP"]).unwrap();
        let names: Vec<_> = plain.resources.iter().map(|b| (b.name, b.binding)).collect();
        assert_eq!(
            names,
            [("src4", 0), ("src_tail", 1), ("head", 2), ("mask_out", 3), ("vals_out", 4), ("scan", 5), ("p", 6)]
        );
        let fused = interface("compress.wgsl", &["ARENA", "FUSED_FWD", "NOT_A_CONDITION"]).unwrap();
        let names: Vec<_> = fused.resources.iter().map(|b| b.name).collect();
        assert_eq!(names, ["src4", "src_tail", "arena", "scan", "p", "ctrl", "a4", "a_tail"]);
        let src = fused.resource("src4").unwrap();
        assert_eq!((src.kind, src.access), (BindKind::Storage, Access::Read));
        assert_eq!(fused.resource("ctrl").unwrap().access, Access::ReadWrite);
        assert_eq!(fused.resource("p").unwrap().kind, BindKind::Uniform);
        // Entry points: workgroup sizes, and the resources each uses.
        assert_eq!(fused.entry_point("compress").unwrap().workgroup_size, [128, 1, 1]);
        let finish = fused.entry_point("finish").unwrap();
        assert_eq!(finish.workgroup_size, [1, 1, 1]);
        assert!(finish.bindings.iter().all(|b| !["src4", "src_tail", "a4", "a_tail"].contains(&b.name)));
        let bwd = interface("decompress.wgsl", &["ARENA", "FUSED_BWD"]).unwrap();
        let names: Vec<_> = bwd.resources.iter().map(|b| (b.name, b.binding)).collect();
        assert_eq!(
            names,
            [
                ("arena", 0),
                ("dst4", 3),
                ("dst_tail", 4),
                ("p", 5),
                ("ctrl", 6),
                ("g4", 7),
                ("g_tail", 8),
                ("a4", 9),
                ("a_tail", 10)
            ]
        );
        assert_eq!(interface("plain_act.wgsl", &[]).unwrap().entry_point("forward").unwrap().workgroup_size[0], 256);
        assert!(interface("nope.wgsl", &[]).is_none());
    }

    #[test]
    fn uniform_layouts_are_reflected() {
        let l = uniform_layout("compress.wgsl", "Params").unwrap();
        assert_eq!((l.size, l.members.len()), (64, 16));
        let m = l.member("fp8_fmt").unwrap();
        assert_eq!((m.offset, m.size), (60, 4));
        assert_eq!(uniform_layout("sgd.wgsl", "Params").unwrap().member("lr").unwrap().offset, 4);
        assert!(uniform_layout("sgd.wgsl", "Other").is_none());
    }
}
