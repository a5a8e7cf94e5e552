//! naga validation of every variant of every shader, with the capability split that the two codec
//! paths promise: a variant built without `SUBGROUP` must validate with *no* subgroup capability (so the
//! portable path runs on devices without `Features::SUBGROUP`, e.g. wgpu's GL backend), and a variant
//! built without `STAGE16` (compress's `u16` staging) or a 16-bit `DIRECT` (its `u16` stores) must
//! validate without `SHADER_INT16` (GL has no 16-bit types). Variants with those defines are validated
//! with every capability.
//!
//! `build.rs` validates every variant too (with all capabilities); this test makes the check visible in
//! the test suite and adds the capability split, which `build.rs` does not check.

use bitsparse::shaders;
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// Capabilities that exist only on devices with `Features::SUBGROUP` (and its relatives).
fn subgroup_caps() -> Capabilities {
    Capabilities::SUBGROUP | Capabilities::SUBGROUP_BARRIER | Capabilities::SUBGROUP_VERTEX_STAGE
}

/// What a variant compiled with `defines` may rely on.
fn capabilities_for(defines: &[&str]) -> Capabilities {
    let mut caps = Capabilities::all();
    if !defines.contains(&"SUBGROUP") {
        caps -= subgroup_caps();
    }
    // 16-bit types: compress's `u16` slots, and its direct stores of 16-bit values through a `u16`
    // view of the stream (direct stores of 32-bit values need none: GL runs them).
    let int16 = defines.contains(&"STAGE16") || (defines.contains(&"DIRECT") && !defines.contains(&"BITS32"));
    if !int16 {
        caps -= Capabilities::SHADER_INT16;
    }
    caps
}

fn validate(src: &str, caps: Capabilities) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    Validator::new(ValidationFlags::all(), caps).validate(&module).map_err(|e| e.emit_to_string(src))?;
    Ok(())
}

fn lookup(n: &str) -> Option<String> {
    shaders::raw(n).map(str::to_string)
}

/// Every (shader, defines) pair: each top-level shader with every subset of the conditions it mentions.
fn variants() -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    for name in shaders::names().filter(|n| !n.starts_with("lib/")) {
        let conds = shaders::conditions(name, &lookup);
        for mask in 0..(1u32 << conds.len()) {
            let defs = conds.iter().enumerate().filter(|(i, _)| mask >> i & 1 == 1).map(|(_, c)| c.clone()).collect();
            out.push((name, defs));
        }
    }
    out
}

#[test]
fn every_shader_variant_validates_with_its_capabilities() {
    let vs = variants();
    let mut failures = Vec::new();
    // Defines that do not change the composed text (tested only inside a block another define removes)
    // give the same module: validated once per capability set, as build.rs does.
    let mut seen = std::collections::HashMap::new();
    for (name, defs) in &vs {
        let defs: Vec<&str> = defs.iter().map(String::as_str).collect();
        let caps = capabilities_for(&defs);
        let src = shaders::source(name, &defs);
        let result = seen.entry((src, caps.bits())).or_insert_with_key(|(src, _)| validate(src, caps)).clone();
        match result {
            Ok(()) => eprintln!(
                "ok   shaders/{name} {defs:?} (subgroups: {}, int16: {})",
                caps.contains(Capabilities::SUBGROUP),
                caps.contains(Capabilities::SHADER_INT16)
            ),
            Err(e) => failures.push(format!("shaders/{name} with {defs:?} and {caps:?}:\n{e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} shader variants failed naga validation:\n{}",
        failures.len(),
        vs.len(),
        failures.join("\n\n")
    );
}

/// The codec shaders really have the variants the kernels build (so a renamed define cannot turn the
/// capability split above into a no-op), and `lib/` snippets are not validated on their own.
#[test]
fn codec_shaders_have_subgroup_and_width_variants() {
    let names: Vec<&str> = shaders::names().collect();
    for name in ["compress.wgsl", "decompress.wgsl"] {
        assert!(names.contains(&name), "shaders/{name} is not embedded (have {names:?})");
        let conds = shaders::conditions(name, &lookup);
        for c in ["SUBGROUP", "BITS8"] {
            assert!(conds.contains(&c.to_string()), "shaders/{name} has no `{c}` condition (has {conds:?})");
        }
    }
    let vs = variants();
    assert!(
        vs.iter().any(|(n, d)| *n == "compress.wgsl" && d.is_empty()),
        "the portable 16-bit compress variant is missing"
    );
    assert!(vs.iter().all(|(n, _)| !n.starts_with("lib/")));
    assert!(vs.len() >= 8, "only {} variants found", vs.len());
}

/// The split is a real check: the subgroup variants do need the subgroup capability (naga refuses them
/// without it), so the portable variants validating without it means something; the same for `STAGE16`
/// and 16-bit integers.
#[test]
fn subgroup_variants_fail_without_subgroup_capability() {
    for name in ["compress.wgsl", "decompress.wgsl"] {
        for defs in [vec!["SUBGROUP"], vec!["SUBGROUP", "BITS8"]] {
            let src = shaders::source(name, &defs);
            validate(&src, Capabilities::all()).unwrap_or_else(|e| panic!("shaders/{name} {defs:?}: {e}"));
            let caps = Capabilities::all() - subgroup_caps();
            assert!(
                validate(&src, caps).is_err(),
                "shaders/{name} {defs:?} validated without subgroup capabilities: does it use subgroups at all?"
            );
        }
    }
    for defs in [vec!["STAGE16"], vec!["STAGE16", "BITS8", "SUBGROUP"]] {
        let src = shaders::source("compress.wgsl", &defs);
        assert!(
            validate(&src, Capabilities::all() - Capabilities::SHADER_INT16).is_err(),
            "compress.wgsl {defs:?} validated without SHADER_INT16"
        );
    }
}

/// The same for 16-bit integers: naga refuses `u16` without `SHADER_INT16`, so a variant without `STAGE16`
/// validating without it proves it uses no 16-bit types.
#[test]
fn int16_use_fails_without_int16_capability() {
    let src = "enable wgpu_int16;\n@group(0) @binding(0) var<storage, read_write> b: array<u32>;\n\
               @compute @workgroup_size(1) fn main() { let x: u16 = u16(b[0]); b[0] = u32(x); }\n";
    validate(src, Capabilities::all()).expect("the u16 probe must validate with every capability");
    assert!(
        validate(src, Capabilities::all() - Capabilities::SHADER_INT16).is_err(),
        "naga accepted u16 without SHADER_INT16"
    );
    assert_eq!(capabilities_for(&[]) & Capabilities::SHADER_INT16, Capabilities::empty());
    assert!(capabilities_for(&["STAGE16"]).contains(Capabilities::SHADER_INT16));
}
