//! What the build scripts share (the core's `build.rs` and `demos/build.rs` include this file with
//! `#[path]`; it is not a module of the library): gathering a folder's WGSL files and validating a composed
//! shader with naga.

use std::{collections::BTreeMap, fs, path::Path};

/// Every `.wgsl` file under `dir` (names relative to it, `lib/x.wgsl`), skipping the sub-folders named in
/// `skip` (another crate's shaders).
pub fn collect(dir: &Path, prefix: &str, skip: &[&str], files: &mut BTreeMap<String, String>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        if p.is_dir() {
            if !skip.contains(&name.as_str()) {
                collect(&p, &format!("{name}/"), skip, files);
            }
        } else if name.ends_with(".wgsl") {
            files.insert(name, fs::read_to_string(&p).unwrap());
        }
    }
}

/// Parses and validates composed WGSL with every capability on; the module and its info for reflection.
pub fn validate(src: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(src))?;
    Ok((module, info))
}
