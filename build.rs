//! Embeds every `shaders/*.wgsl` and validates every preprocessor variant of every shader with naga, so a
//! broken shader fails the build rather than a user's run. Files under `shaders/lib/` are snippets that are
//! only validated through the shaders that include them. `shaders/train_ffn/` holds the demo trainer's
//! shaders: the demos crate embeds and validates those, not the core.
//!
//! It also reflects each variant's interface into the generated table (`OUT_DIR/shader_table.rs`, types in
//! `src/shaders/reflect.rs`), in the manner of vello_shaders' build script: the resources a variant declares
//! (name, group, binding, storage/uniform, read/read_write), each entry point's workgroup size and the
//! resources it uses, the override constants the variant declares, and the layout of every uniform struct
//! (member names, offsets, sizes, total size). The bind-group layouts and bind groups of
//! `bitsparse::dispatch` are built from that table, so binding numbers appear once, in the WGSL; the
//! `shader_params!` structs are checked against it at compile time. naga stays a build-dependency: the
//! library reads only the generated constants.

#[path = "src/shaders/preprocess.rs"]
mod preprocess;

#[path = "src/shaders/build_support.rs"]
mod build_support;

use build_support::{collect, validate};

use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    fs,
    path::Path,
};

fn main() {
    println!("cargo:rerun-if-changed=shaders");
    println!("cargo:rerun-if-changed=src/shaders/build_support.rs");
    println!("cargo:rerun-if-changed=src/shaders/preprocess.rs");
    let mut files = BTreeMap::new();
    collect(Path::new("shaders"), "", &["train_ffn"], &mut files);
    let lookup = |n: &str| files.get(n).cloned();

    let mut errors = Vec::new();
    let mut tables = Tables::default();
    for name in files.keys().filter(|n| !n.starts_with("lib/")) {
        let conds = preprocess::conditions(name, &lookup);
        let mut by_mask = Vec::new();
        // Masks whose defines do not change the composed text (a define tested only inside a block another
        // define removes, e.g. ACT_F16 without FUSED_FWD) give the same module: validated once.
        let mut seen: HashMap<String, Result<usize, String>> = HashMap::new();
        for mask in 0..(1u32 << conds.len()) {
            let defs: Vec<&str> =
                conds.iter().enumerate().filter(|(i, _)| mask >> i & 1 == 1).map(|(_, c)| c.as_str()).collect();
            let src = match preprocess::preprocess(name, &lookup, &defs) {
                Ok(src) => src,
                Err(e) => {
                    errors.push(format!("shaders/{name} with {defs:?}:\n{e}"));
                    continue;
                }
            };
            if let Some(known) = seen.get(&src) {
                match known {
                    Ok(i) => by_mask.push(*i),
                    Err(e) => errors.push(format!("shaders/{name} with {defs:?}:\n{e}")),
                }
                continue;
            }
            let reflected = validate(&src).and_then(|(module, info)| reflect(&module, &info));
            let known = match reflected {
                Err(e) => Err(e),
                Ok(r) => {
                    let i = tables.interface(r.interface);
                    by_mask.push(i);
                    for (ty, layout) in r.uniforms {
                        if let Err(e) = tables.uniform(name, &ty, layout) {
                            errors.push(format!("shaders/{name} with {defs:?}: {e}"));
                        }
                    }
                    Ok(i)
                }
            };
            if let Err(e) = &known {
                errors.push(format!("shaders/{name} with {defs:?}:\n{e}"));
            }
            seen.insert(src, known);
        }
        tables.variants.push((name.clone(), conds, by_mask));
    }
    if !errors.is_empty() {
        panic!("WGSL validation failed:\n{}", errors.join("\n\n"));
    }

    let out = std::env::var("OUT_DIR").unwrap();
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let mut table = String::from(
        "/// Embedded shader files: (path under shaders/, text).\npub static SHADERS: &[(&str, &str)] = &[\n",
    );
    for name in files.keys() {
        table.push_str(&format!("    ({name:?}, include_str!({:?})),\n", format!("{manifest}/shaders/{name}")));
    }
    table.push_str("];\n\n");
    tables.emit(&mut table);
    fs::write(Path::new(&out).join("shader_table.rs"), table).unwrap();
}

/// One variant's reflection: its `Interface { .. }` initializer (Rust source) and the layouts of its
/// uniform structs, by type name.
struct Reflected {
    interface: String,
    uniforms: Vec<(String, String)>,
}

/// The `Interface` of one variant and its uniform layouts. Only buffers in group 0 are supported: the
/// library builds one bind-group layout per variant.
fn reflect(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Result<Reflected, String> {
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).map_err(|e| format!("layout: {e}"))?;
    // (handle, binding number, `Binding { .. }` initializer), sorted by binding.
    let mut resources = Vec::new();
    let mut uniforms = Vec::new();
    for (handle, var) in module.global_variables.iter() {
        let Some(rb) = &var.binding else { continue };
        let name = var.name.clone().ok_or("a resource without a name")?;
        if rb.group != 0 {
            return Err(format!("`{name}` is in group {}: the library builds one layout, group 0", rb.group));
        }
        let (kind, access) = match var.space {
            naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE) => {
                ("Storage", "ReadWrite")
            }
            naga::AddressSpace::Storage { .. } => ("Storage", "Read"),
            naga::AddressSpace::Uniform => {
                let ty = &module.types[var.ty];
                let naga::TypeInner::Struct { members, span } = &ty.inner else {
                    return Err(format!("uniform `{name}` is not a struct"));
                };
                let ty_name = ty.name.clone().ok_or_else(|| format!("uniform `{name}` has an unnamed type"))?;
                let mut l = format!("size: {span}, members: &[");
                for m in members {
                    let mname = m.name.as_deref().ok_or_else(|| format!("{ty_name} has an unnamed member"))?;
                    let size = layouter[m.ty].size;
                    write!(l, "Member {{ name: {mname:?}, offset: {}, size: {size} }}, ", m.offset).unwrap();
                }
                l.push(']');
                uniforms.push((ty_name, l));
                ("Uniform", "Read")
            }
            _ => return Err(format!("`{name}`: only storage and uniform buffers are supported")),
        };
        let text = format!(
            "Binding {{ name: {name:?}, group: {}, binding: {}, kind: BindKind::{kind}, access: Access::{access} }}",
            rb.group, rb.binding
        );
        resources.push((handle, rb.binding, text));
    }
    resources.sort_by_key(|r| r.1);
    if let Some(w) = resources.windows(2).find(|w| w[0].1 == w[1].1) {
        return Err(format!("two resources at binding {}", w[0].1));
    }
    let mut text = String::from("Interface {\n        resources: &[\n");
    for (_, _, r) in &resources {
        writeln!(text, "            {r},").unwrap();
    }
    text.push_str("        ],\n        entry_points: &[\n");
    for (i, ep) in module.entry_points.iter().enumerate() {
        let uses = info.get_entry_point(i);
        let [x, y, z] = ep.workgroup_size;
        writeln!(text, "            EntryPoint {{ name: {:?}, workgroup_size: [{x}, {y}, {z}], bindings: &[", ep.name)
            .unwrap();
        for (_, _, r) in resources.iter().filter(|(h, _, _)| !uses[*h].is_empty()) {
            writeln!(text, "                {r},").unwrap();
        }
        text.push_str("            ] },\n");
    }
    text.push_str("        ],\n        overrides: &[");
    // The override constants this variant declares (a `#if` may remove one): a pipeline may set only these
    // (naga's `PipelineConstantError::NotFound` otherwise).
    for (_, o) in module.overrides.iter() {
        write!(text, "{:?}, ", o.name.as_deref().ok_or("an override without a name")?).unwrap();
    }
    text.push_str("],\n    }");
    Ok(Reflected { interface: text, uniforms })
}

/// The generated tables: distinct interfaces, each file's variants, uniform layouts.
#[derive(Default)]
struct Tables {
    interfaces: Vec<String>,
    /// (file, its `#if` conditions, the interface index of each define subset by bitmask).
    variants: Vec<(String, Vec<String>, Vec<usize>)>,
    /// (file, struct name) -> layout fields.
    uniforms: BTreeMap<(String, String), String>,
}

impl Tables {
    fn interface(&mut self, text: String) -> usize {
        match self.interfaces.iter().position(|t| *t == text) {
            Some(i) => i,
            None => {
                self.interfaces.push(text);
                self.interfaces.len() - 1
            }
        }
    }

    /// One Rust struct mirrors one WGSL struct, so a uniform struct's layout must not depend on defines.
    fn uniform(&mut self, file: &str, ty: &str, layout: String) -> Result<(), String> {
        match self.uniforms.get(&(file.to_string(), ty.to_string())) {
            Some(l) if *l != layout => Err(format!("uniform struct {ty} changes layout with the defines")),
            Some(_) => Ok(()),
            None => {
                self.uniforms.insert((file.to_string(), ty.to_string()), layout);
                Ok(())
            }
        }
    }

    fn emit(&self, out: &mut String) {
        out.push_str(
            "/// The distinct interfaces of all variants of all shaders (indexed by `ShaderVariants::by_mask`).\n\
             pub static INTERFACES: &[Interface] = &[\n",
        );
        for (i, t) in self.interfaces.iter().enumerate() {
            writeln!(out, "    // {i}\n    {t},").unwrap();
        }
        out.push_str(
            "];\n\n/// Every shader file's variants: its `#if` conditions (sorted) and, for each subset of them \
             (bit i = condition i), the index of its interface in `INTERFACES`.\n\
             pub static VARIANTS: &[ShaderVariants] = &[\n",
        );
        for (file, conds, by_mask) in &self.variants {
            writeln!(out, "    ShaderVariants {{ file: {file:?}, conditions: &{conds:?}, by_mask: &{by_mask:?} }},")
                .unwrap();
        }
        out.push_str(
            "];\n\n/// The layout of every struct a shader binds as a uniform (the same in all its variants).\n\
             pub const UNIFORM_LAYOUTS: &[UniformLayout] = &[\n",
        );
        for ((file, ty), l) in &self.uniforms {
            writeln!(out, "    UniformLayout {{ shader: {file:?}, name: {ty:?}, {l} }},").unwrap();
        }
        out.push_str("];\n");
    }
}
