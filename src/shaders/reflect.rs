//! The types of the reflected shader interfaces that `build.rs` generates (with naga, at build time) for
//! every variant of every shader: what bind-group layouts, bind groups and the `shader_params!` checks are
//! built from, so a binding number or a uniform offset is written once, in the WGSL.

/// What kind of buffer a binding is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindKind {
    /// `var<storage, ..>`.
    Storage,
    /// `var<uniform>`.
    Uniform,
}

/// How a binding may be accessed (a uniform is read-only).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `read` (and every uniform).
    Read,
    /// `read_write`.
    ReadWrite,
}

/// One resource a shader variant declares: `@group(group) @binding(binding) var<..> name`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The WGSL variable's name: what bind groups are built by.
    pub name: &'static str,
    /// Bind group (always 0: `build.rs` rejects others).
    pub group: u32,
    /// Binding number.
    pub binding: u32,
    /// Storage or uniform.
    pub kind: BindKind,
    /// Read or read-write.
    pub access: Access,
}

impl Binding {
    /// The bind-group layout entry of this binding, visible to compute (no dynamic offset, no minimum size,
    /// as the library always declared them).
    pub fn layout_entry(&self) -> wgpu::BindGroupLayoutEntry {
        let ty = match (self.kind, self.access) {
            (BindKind::Uniform, _) => wgpu::BufferBindingType::Uniform,
            (BindKind::Storage, access) => wgpu::BufferBindingType::Storage { read_only: access == Access::Read },
        };
        wgpu::BindGroupLayoutEntry {
            binding: self.binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        }
    }
}

/// One entry point of a shader variant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Its name.
    pub name: &'static str,
    /// `@workgroup_size(x, y, z)`.
    pub workgroup_size: [u32; 3],
    /// The resources it uses (a subset of [`Interface::resources`]), by binding.
    pub bindings: &'static [Binding],
}

/// The interface of one shader variant (a file with one set of defines).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Every resource the variant declares, by binding: its bind-group layout. (Entry points of one
    /// variant share it, so one bind group serves e.g. `compress` and its `finish`.)
    pub resources: &'static [Binding],
    /// Its entry points.
    pub entry_points: &'static [EntryPoint],
    /// The names of the override constants it declares. A `#if` can remove one (lib/tile.wgsl's
    /// `SCAN_SLOTS` exists only with `SUBGROUP`), and a pipeline given a constant its module lacks
    /// fails to build.
    pub overrides: &'static [&'static str],
}

impl Interface {
    /// The resource called `name`.
    pub fn resource(&self, name: &str) -> Option<&'static Binding> {
        self.resources.iter().find(|b| b.name == name)
    }

    /// The entry point called `name`.
    pub fn entry_point(&self, name: &str) -> Option<&'static EntryPoint> {
        self.entry_points.iter().find(|e| e.name == name)
    }

    /// Whether the variant declares the override constant `name`.
    pub fn declares_override(&self, name: &str) -> bool {
        self.overrides.contains(&name)
    }
}

/// The variants of one shader file, as the generated table lists them.
#[derive(Copy, Clone, Debug)]
pub struct ShaderVariants {
    /// Path under `shaders/`.
    pub file: &'static str,
    /// The `#if` names the file (with its includes) mentions, sorted.
    pub conditions: &'static [&'static str],
    /// For each subset of `conditions` (bit i set: condition i defined), the index of the variant's
    /// interface in [`super::INTERFACES`].
    pub by_mask: &'static [u16],
}

/// One member of a uniform struct, as WGSL lays it out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Member name.
    pub name: &'static str,
    /// Byte offset.
    pub offset: u32,
    /// Byte size.
    pub size: u32,
}

/// The layout of a struct a shader binds as a uniform.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UniformLayout {
    /// The shader file (path under `shaders/`).
    pub shader: &'static str,
    /// The WGSL struct's name.
    pub name: &'static str,
    /// Total size in bytes (WGSL's span, trailing padding included).
    pub size: u32,
    /// Its members, in order.
    pub members: &'static [Member],
}

impl UniformLayout {
    /// The member called `name` (usable in constants).
    pub const fn member(&self, name: &str) -> Option<&'static Member> {
        let mut i = 0;
        while i < self.members.len() {
            if str_eq(self.members[i].name, name) {
                return Some(&self.members[i]);
            }
            i += 1;
        }
        None
    }
}

/// The layout of the uniform struct `name` of `shader` (usable in constants: the `shader_params!` checks).
pub const fn uniform_layout(shader: &str, name: &str) -> Option<&'static UniformLayout> {
    let all = super::UNIFORM_LAYOUTS;
    let mut i = 0;
    while i < all.len() {
        if str_eq(all[i].shader, shader) && str_eq(all[i].name, name) {
            return Some(&all[i]);
        }
        i += 1;
    }
    None
}

/// `a == b` in a `const fn`.
const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The interface of `file` built with `defines` (names it does not test are ignored, as the preprocessor
/// ignores them); `None` for a file the crate does not ship.
pub fn interface(file: &str, defines: &[&str]) -> Option<&'static Interface> {
    let v = super::VARIANTS.iter().find(|v| v.file == file)?;
    let mask = v.conditions.iter().enumerate().filter(|(_, c)| defines.contains(c)).fold(0, |m, (i, _)| m | 1 << i);
    Some(&super::INTERFACES[v.by_mask[mask] as usize])
}
