//! Embeds every `shaders/*.wgsl` and validates every preprocessor variant of every shader with naga, so a
//! broken shader fails the build rather than a user's run. Files under `shaders/lib/` are snippets that are
//! only validated through the shaders that include them. `shaders/train_ffn/` holds the demo trainer's
//! shaders: the demos crate embeds and validates those, not the core.

#[path = "src/shaders/preprocess.rs"]
mod preprocess;

use std::{collections::BTreeMap, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=shaders");
    println!("cargo:rerun-if-changed=src/shaders/preprocess.rs");
    let mut files = BTreeMap::new();
    collect(Path::new("shaders"), "", &mut files);
    let lookup = |n: &str| files.get(n).cloned();

    let mut errors = Vec::new();
    for name in files.keys().filter(|n| !n.starts_with("lib/")) {
        let conds = preprocess::conditions(name, &lookup);
        for mask in 0..(1u32 << conds.len()) {
            let defs: Vec<&str> =
                conds.iter().enumerate().filter(|(i, _)| mask >> i & 1 == 1).map(|(_, c)| c.as_str()).collect();
            match preprocess::preprocess(name, &lookup, &defs) {
                Err(e) => errors.push(e),
                Ok(src) => {
                    if let Err(e) = validate(&src) {
                        errors.push(format!("shaders/{name} with {defs:?}:\n{e}"));
                    }
                }
            }
        }
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
    table.push_str("];\n");
    fs::write(Path::new(&out).join("shader_table.rs"), table).unwrap();
}

fn collect(dir: &Path, prefix: &str, files: &mut BTreeMap<String, String>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        if p.is_dir() {
            if name == "train_ffn" {
                continue;
            }
            collect(&p, &format!("{name}/"), files);
        } else if name.ends_with(".wgsl") {
            files.insert(name, fs::read_to_string(&p).unwrap());
        }
    }
}

fn validate(src: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(src))?;
    Ok(())
}
