//! Embeds the demo trainer's shaders (`shaders/train_ffn/*.wgsl` at the workspace root) and validates
//! each with naga, so a broken shader fails the build. They may include the core's snippets
//! (`lib/act.wgsl`): those are looked up in the core's `shaders/`, the same way `bitsparse::shaders::
//! source_with` does at run time.

#[path = "../src/shaders/preprocess.rs"]
#[allow(dead_code)]
mod preprocess;

#[path = "../src/shaders/build_support.rs"]
mod build_support;

use std::{collections::BTreeMap, fs, path::Path};

use build_support::{collect, validate};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let own_dir = root.join("shaders/train_ffn");
    let core_dir = root.join("shaders");
    println!("cargo:rerun-if-changed={}", own_dir.display());
    println!("cargo:rerun-if-changed={}", core_dir.join("lib").display());
    let mut own = BTreeMap::new();
    collect(&own_dir, "", &[], &mut own);
    let lookup = |n: &str| own.get(n).cloned().or_else(|| fs::read_to_string(core_dir.join(n)).ok());
    let mut errors = Vec::new();
    for name in own.keys().filter(|n| !n.starts_with("lib/")) {
        match preprocess::preprocess(name, &lookup, &[]).and_then(|src| validate(&src).map(|_| ())) {
            Ok(()) => {}
            Err(e) => errors.push(format!("shaders/train_ffn/{name}:\n{e}")),
        }
    }
    if !errors.is_empty() {
        panic!("WGSL validation failed:\n{}", errors.join("\n\n"));
    }
    let out = std::env::var("OUT_DIR").unwrap();
    let mut table = String::from("/// The demo trainer's shader files: (path under shaders/train_ffn/, text).\npub static TRAIN_SHADERS: &[(&str, &str)] = &[\n");
    for name in own.keys() {
        let path = own_dir.join(name).canonicalize().unwrap();
        table.push_str(&format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    table.push_str("];\n");
    fs::write(Path::new(&out).join("train_shaders.rs"), table).unwrap();
}
