//! Compute pipelines of the codec, built once per device and variant, with explicit bind-group layouts.
//!
//! Variants are chosen textually (see [`crate::shaders`]): `BITS8` for 8-bit element types, `SUBGROUP`
//! for the fast path where the device has `Features::SUBGROUP`, `ARENA` for streams inside the GPU arena
//! (their position is known only on the GPU), `FUSED_FWD` / `FUSED_BWD` for the fused activation kernels,
//! `FP8_STORE` (with one of them) for FP8 storage of their BF16 activation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::shaders;

/// Which scan implementation the kernels use. (Not `Path`: that name collided with `std::path::Path`
/// in user code.)
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CodecPath {
    /// Subgroup operations (`Features::SUBGROUP`).
    Subgroup,
    /// Workgroup shared-memory scans only: runs everywhere (e.g. wgpu's GL backend).
    Portable,
}

impl CodecPath {
    /// `"subgroup"` or `"portable"`.
    pub fn name(self) -> &'static str {
        match self {
            CodecPath::Subgroup => "subgroup",
            CodecPath::Portable => "portable",
        }
    }
}

/// A storage binding entry.
pub fn storage(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A uniform binding entry.
pub fn uniform(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
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

/// Builds a compute pipeline from `shaders/<file>` with `defines`, an explicit layout and `constants`.
pub fn pipeline(
    device: &wgpu::Device,
    file: &str,
    entry: &str,
    defines: &[&str],
    layout: &wgpu::BindGroupLayout,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    build_pipeline(device, file, entry, defines, layout, constants, false)
}

/// Like [`pipeline`], but `trusted` builds the module without wgpu's injected bounds checks and loop
/// bounding. Only for shaders whose indices are proven in range: the codec kernels index workgroup
/// arrays with values bounded by the tile geometry (see the comments at each array), every loop has a
/// bounded trip count or a bounded spin, and storage accesses are covered by the robust buffer access
/// that wgpu enables on every backend here. Why: the injected 64-bit loop counters keep drivers from
/// unrolling the small per-round loops, which then index private arrays dynamically.
pub fn build_pipeline(
    device: &wgpu::Device,
    file: &str,
    entry: &str,
    defines: &[&str],
    layout: &wgpu::BindGroupLayout,
    constants: &[(&str, f64)],
    trusted: bool,
) -> wgpu::ComputePipeline {
    let label = format!("bitsparse.{file}:{entry}{defines:?}");
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(&label),
        source: wgpu::ShaderSource::Wgsl(shaders::source(file, defines).into()),
    };
    let module = if trusted {
        let checks = wgpu::ShaderRuntimeChecks {
            bounds_checks: false,
            force_loop_bounding: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: see the doc comment: indices are bounded by construction and loops terminate.
        unsafe { device.create_shader_module_trusted(desc, checks) }
    } else {
        device.create_shader_module(desc)
    };
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(&label),
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(&label),
        layout: Some(&pl),
        module: &module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            // Every workgroup variable is written before it is read; wgpu's zeroing would cost time.
            zero_initialize_workgroup_memory: false,
        },
        cache: None,
    })
}

/// Status words each look-back lane of `compress` reads per round (`LOOKBACK_PER_LANE` in
/// compress.wgsl, at most its `LOOKBACK_MAX`). The window (this × subgroup size) bounds the tile rate:
/// see docs/PERFORMANCE.md.
pub const LOOKBACK_PER_LANE: u32 = 1;

/// The constants the knob may set, with the range each shader relies on (trusted modules: a value
/// outside it could index out of bounds or never terminate).
const TUNABLE: [(&str, &str, f64, f64); 2] =
    [("compress", "SPIN_LIMIT", 1.0, 1e9), ("compress", "LOOKBACK_PER_LANE", 1.0, 8.0)];

/// One item of a kernel-constants spec (`kernel.NAME=value`).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantItem<'a> {
    /// The item as written (trimmed).
    pub text: &'a str,
    /// The entry point, e.g. `compress`.
    pub kernel: &'a str,
    /// The override constant's name.
    pub name: &'a str,
    /// Its value.
    pub value: f64,
}

/// Splits a kernel-constants spec (`kernel.NAME=value`, comma-separated, e.g.
/// `compress.LOOKBACK_PER_LANE=8,compress.SPIN_LIMIT=16`) into its items, checking only their syntax:
/// the syntax of `BITSPARSE_KERNEL_CONSTANTS` and of `pipeline_stats --constants`. A malformed item is
/// an error naming it.
pub fn parse_constants(spec: &str) -> std::result::Result<Vec<ConstantItem<'_>>, String> {
    let mut items = Vec::new();
    for text in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |why: &str| format!("{why} in {text:?}");
        let (name, value) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (kernel, name) = name.trim().split_once('.').ok_or_else(|| bad("no kernel prefix"))?;
        let value: f64 = value.trim().parse().map_err(|_| bad("not a number"))?;
        items.push(ConstantItem { text, kernel: kernel.trim(), name: name.trim(), value });
    }
    Ok(items)
}

/// Applies the items of `spec` (see [`parse_constants`]) for `kernel`. Unknown kernels or names, and
/// values outside [`TUNABLE`]'s ranges, are errors, not silently ignored.
fn apply_tuning(spec: &str, kernel: &str, consts: &mut Vec<(&'static str, f64)>) -> Result<()> {
    let bad = |why: String| {
        Error::InvalidArgument(format!(
            "kernel constants: {why} (tunable: compress.SPIN_LIMIT, compress.LOOKBACK_PER_LANE 1..=8)"
        ))
    };
    for item in parse_constants(spec).map_err(bad)? {
        let Some(&(_, tn, lo, hi)) = TUNABLE.iter().find(|(tk, tn, _, _)| *tk == item.kernel && *tn == item.name)
        else {
            return Err(bad(format!("not a tunable constant in {:?}", item.text)));
        };
        if !(lo..=hi).contains(&item.value) || item.value.fract() != 0.0 {
            return Err(bad(format!("value out of range in {:?}", item.text)));
        }
        if item.kernel == kernel {
            consts.retain(|(n, _)| *n != tn);
            consts.push((tn, item.value));
        }
    }
    Ok(())
}

/// How `compress` stages compacted values in workgroup memory before storing whole stream words.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Staging {
    /// [`Staging::Halves`] where the device has `Features::SHADER_I16`, except for the fused
    /// forward's FP8 storage (not measured with it); [`Staging::Words`] otherwise.
    #[default]
    Auto,
    /// Packed `u32` words built with workgroup atomics: runs everywhere.
    Words,
    /// One value per `u16` slot (`STAGE16` in compress.wgsl) for every stream; needs `Features::SHADER_I16`.
    Halves,
}

impl Staging {
    /// Parses `auto`, `words` or `halves`.
    pub fn parse(s: &str) -> Result<Staging> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Staging::Auto),
            "words" => Ok(Staging::Words),
            "halves" => Ok(Staging::Halves),
            other => Err(Error::InvalidArgument(format!("staging `{other}`: expected auto, words or halves"))),
        }
    }
}

/// Which codec kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// `true`: compress.wgsl (`compress` + `finish`); `false`: decompress.wgsl.
    pub compress: bool,
    /// 8-bit elements.
    pub bits8: bool,
    /// Stream inside the arena.
    pub arena: bool,
    /// Fused forward (compress) or fused backward (decompress); needs `arena`.
    pub fused: bool,
    /// FP8 storage of the BF16 activation (`FP8_STORE`): the dense geometry stays 16-bit, the stream
    /// holds 8-bit (7 sign-packed) FP8 codes; needs `fused` and not `bits8`.
    pub fp8: bool,
    /// `u16` staging of the compacted values (`STAGE16`, compress only): see [`Staging`].
    pub stage16: bool,
}

impl Variant {
    /// The preprocessor defines (see [`crate::shaders`]) this variant is built with on `path`.
    pub fn defines(&self, path: CodecPath) -> Vec<&'static str> {
        [
            (self.bits8, "BITS8"),
            (path == CodecPath::Subgroup, "SUBGROUP"),
            (self.arena, "ARENA"),
            (self.fused && self.compress, "FUSED_FWD"),
            (self.fused && !self.compress, "FUSED_BWD"),
            (self.fp8, "FP8_STORE"),
            (self.stage16, "STAGE16"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// A built variant: its layout and pipelines.
#[derive(Debug)]
pub struct Built {
    /// The explicit bind-group layout.
    pub layout: wgpu::BindGroupLayout,
    /// `compress` or `decompress`.
    pub main: wgpu::ComputePipeline,
    /// `finish` (compress variants only).
    pub finish: Option<wgpu::ComputePipeline>,
}

/// All codec pipelines of a device, built on first use of each variant and kept.
#[derive(Debug)]
pub struct Kernels {
    /// The path they are built for.
    pub path: CodecPath,
    device: wgpu::Device,
    spin_limit: u32,
    /// The tuning spec, `CodecConfig::kernel_constants`.
    tuning: Option<String>,
    staging: Staging,
    trusted: bool,
    cache: Mutex<HashMap<Variant, Arc<Built>>>,
}

impl Kernels {
    /// Builds the plain codec variants now (so errors surface at construction).
    /// The library reads no environment: staging, tuning constants and checked shaders come from
    /// `config` (the CLI and the bench read their `BITSPARSE_*` knobs and pass them in).
    pub fn new(device: &wgpu::Device, path: CodecPath, config: &crate::CodecConfig) -> Result<Kernels> {
        if path == CodecPath::Subgroup && !device.features().contains(wgpu::Features::SUBGROUP) {
            return Err(Error::Unsupported("the subgroup path needs Features::SUBGROUP".into()));
        }
        let staging = config.staging.unwrap_or(Staging::Auto);
        let i16 = device.features().contains(wgpu::Features::SHADER_I16);
        if staging == Staging::Halves && !i16 {
            return Err(Error::Unsupported("u16 staging needs Features::SHADER_I16".into()));
        }
        let staging = match staging {
            Staging::Auto if !i16 => Staging::Words,
            s => s,
        };
        let k = Kernels {
            path,
            device: device.clone(),
            spin_limit: config.spin_limit.unwrap_or(64),
            tuning: config.kernel_constants.clone(),
            staging,
            trusted: !config.checked_shaders,
            cache: Mutex::new(HashMap::new()),
        };
        for compress in [true, false] {
            for bits8 in [false, true] {
                k.get(k.variant(compress, bits8, false, false, false))?;
            }
        }
        Ok(k)
    }

    /// The variant for these choices, with the staging this device and configuration use.
    pub fn variant(&self, compress: bool, bits8: bool, arena: bool, fused: bool, fp8: bool) -> Variant {
        // Measured on the H200 (docs/PERFORMANCE.md): halves are faster for BF16 at every density
        // and for e4m3 at ρ <= 0.176 (1.5 % slower at ρ = 0.5).
        let stage16 = compress
            && match self.staging {
                Staging::Halves => true,
                Staging::Words => false,
                Staging::Auto => !fp8,
            };
        Variant { compress, bits8, arena, fused, fp8, stage16 }
    }

    /// The pipelines of `v`, built on first request.
    pub fn get(&self, v: Variant) -> Result<Arc<Built>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = cache.get(&v) {
            return Ok(b.clone());
        }
        let b = Arc::new(self.build(v)?);
        cache.insert(v, b.clone());
        Ok(b)
    }

    /// The override constants of `kernel` ("compress" or "decompress"): the spin limit and look-back
    /// window of compress, `SCAN_SLOTS` (lib/tile.wgsl) on the subgroup path (one slot per subgroup of
    /// the smallest size the adapter reports, so the workgroup array is no larger than needed), then
    /// the tuning spec.
    fn constants(&self, kernel: &str) -> Result<Vec<(&'static str, f64)>> {
        let mut c = Vec::new();
        if kernel == "compress" {
            c.push(("SPIN_LIMIT", self.spin_limit as f64));
            c.push(("LOOKBACK_PER_LANE", LOOKBACK_PER_LANE as f64));
        }
        if self.path == CodecPath::Subgroup {
            let min = self.device.adapter_info().subgroup_min_size.clamp(4, 128);
            c.push(("SCAN_SLOTS", (128 / min) as f64));
        }
        if let Some(spec) = &self.tuning {
            apply_tuning(spec, kernel, &mut c)?;
        }
        Ok(c)
    }

    fn build(&self, v: Variant) -> Result<Built> {
        let device = &self.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut entries = Vec::new();
        if v.compress {
            entries.extend([storage(0, true), storage(1, true), storage(2, false), storage(5, false), uniform(6)]);
            if v.arena {
                entries.push(storage(7, false));
            } else {
                entries.extend([storage(3, false), storage(4, false)]);
            }
            if v.fused {
                entries.extend([storage(8, false), storage(9, false)]);
            }
        } else {
            entries.extend([storage(0, true), storage(3, false), storage(4, false), uniform(5)]);
            if v.arena {
                entries.push(storage(6, false));
            } else {
                entries.extend([storage(1, true), storage(2, true)]);
            }
            if v.fused {
                entries.extend([storage(7, true), storage(8, true), storage(9, false), storage(10, false)]);
            }
        }
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bitsparse.codec"),
            entries: &entries,
        });
        let defs = v.defines(self.path);
        let built = if v.compress {
            let consts = self.constants("compress")?;
            Built {
                main: build_pipeline(device, "compress.wgsl", "compress", &defs, &layout, &consts, self.trusted),
                finish: Some(build_pipeline(device, "compress.wgsl", "finish", &defs, &layout, &[], self.trusted)),
                layout,
            }
        } else {
            let consts = self.constants("decompress")?;
            Built {
                main: build_pipeline(device, "decompress.wgsl", "decompress", &defs, &layout, &consts, self.trusted),
                finish: None,
                layout,
            }
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building codec pipeline {v:?} failed: {e}")));
        }
        Ok(built)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_spec_applies_to_its_kernel_only() {
        let mut c = vec![("SPIN_LIMIT", 64.0), ("LOOKBACK_PER_LANE", 1.0)];
        apply_tuning(" compress.LOOKBACK_PER_LANE = 4 ,compress.SPIN_LIMIT=16", "compress", &mut c).unwrap();
        c.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(c, vec![("LOOKBACK_PER_LANE", 4.0), ("SPIN_LIMIT", 16.0)]);
        let mut d = Vec::new();
        apply_tuning("compress.LOOKBACK_PER_LANE=4", "decompress", &mut d).unwrap();
        assert!(d.is_empty());
        apply_tuning("", "compress", &mut d).unwrap();
        assert!(d.is_empty());
    }

    #[test]
    fn constant_specs_parse_any_name_and_name_the_bad_item() {
        let items = parse_constants(" compress.SCAN_SLOTS = 4 ,,decompress.X=2.5").unwrap();
        assert_eq!(
            items,
            vec![
                ConstantItem { text: "compress.SCAN_SLOTS = 4", kernel: "compress", name: "SCAN_SLOTS", value: 4.0 },
                ConstantItem { text: "decompress.X=2.5", kernel: "decompress", name: "X", value: 2.5 },
            ]
        );
        assert_eq!(parse_constants("compress.A=1,compress.B").unwrap_err(), "no '=' in \"compress.B\"");
        assert!(parse_constants("").unwrap().is_empty());
    }

    #[test]
    fn staging_names() {
        assert_eq!(Staging::parse("auto").unwrap(), Staging::Auto);
        assert_eq!(Staging::parse(" Words ").unwrap(), Staging::Words);
        assert_eq!(Staging::parse("halves").unwrap(), Staging::Halves);
        assert!(matches!(Staging::parse("u16"), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn tuning_spec_rejects_what_the_shaders_cannot_take() {
        for bad in [
            "compress.LOOKBACK_PER_LANE=9",
            "compress.LOOKBACK_PER_LANE=0",
            "compress.LOOKBACK_PER_LANE=2.5",
            "compress.SPIN_LIMIT=0",
            "compress.SCAN_SLOTS=4",
            "compress.COMPACT=1",
            "decompress.SPIN_LIMIT=4",
            "compres.SPIN_LIMIT=4",
            "SPIN_LIMIT=4",
            "compress.SPIN_LIMIT",
            "compress.SPIN_LIMIT=x",
        ] {
            let mut c = Vec::new();
            assert!(
                matches!(apply_tuning(bad, "compress", &mut c), Err(Error::InvalidArgument(_))),
                "{bad:?} was accepted"
            );
            assert!(c.is_empty(), "{bad:?} changed the constants");
        }
    }
}
