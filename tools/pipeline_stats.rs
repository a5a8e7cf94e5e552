//! Prints the driver's own statistics (registers, shared/local memory, spills, instruction counts:
//! whatever it reports) for every compute pipeline of the codec, through
//! `VK_KHR_pipeline_executable_properties`.
//!
//! Why a separate tool: wgpu exposes no shader statistics, yet occupancy (registers and workgroup memory
//! per thread) is what limited the kernels on the H200 (see docs/DEVICE.md). So this compiles the same
//! WGSL the codec builds, with naga as wgpu does on Vulkan, and asks the driver directly through `ash`.
//!
//! ```text
//! pipeline_stats [--json] [--device SUBSTR] [--policy checked|unchecked|both] [--filter SUBSTR] [--spin-limit N] [--constants ENTRY.NAME=V,...] [--shaders DIR] [--compile-only] [--ir DIR]
//! ```
//! `--ir DIR` also asks for each executable's internal representations (a driver's disassembly) and writes
//! each into `DIR`, named by the pipeline's label. NVIDIA's driver (580.159.04, H200) offers none: the
//! call returns no representation (fifteenth session), so on that device the statistics are all there is;
//! Mesa's RADV and ANV offer their IR and assembly this way.
//! `--constants` adds override constants to the pipelines of the named entry point, in the syntax of
//! `BITSPARSE_KERNEL_CONSTANTS` (e.g. `compress.SCAN_SLOTS=4,decompress.SCAN_SLOTS=4,compress.LOOKBACK_PER_LANE=2`), so
//! the statistics of an experiment's variant can be read before it is timed.
//! `--shaders DIR` reads each shader file (and each `lib/` snippet) from `DIR` where it is there, else the
//! bundled one: the statistics of an edited shader without rebuilding the tool (register counts decide
//! occupancy, and the driver's allocation moves with small edits: docs/PERFORMANCE.md, eighteenth
//! session).
//! `--compile-only` builds every pipeline without asking for statistics: a check of the SPIR-V and layouts on
//! drivers without the extension (lavapipe), reporting only what naga knows (workgroup size and memory).
//! `checked` = naga's bounds checks as wgpu's `create_shader_module` emits them (index `Restrict`, buffer
//! `Unchecked` when robustBufferAccess2 is on, else `Restrict`; loop bounding and division checks on);
//! `unchecked` = `create_shader_module_trusted` with every runtime check off.
//! Exit status: 0 all pipelines reported, 1 setup failed (no Vulkan, no device, extension missing) or
//! a pipeline failed.

use std::ffi::{c_char, CStr, CString};
use std::process::ExitCode;

use ash::vk;
use bitsparse::kernels::{parse_constants, CodecPath, Elem, Fusion, Io, Op, Stage, Storage, Variant};
use bitsparse::TileOrder;
use naga::back::spv;
use serde_json::{json, Value};

/// One pipeline to build: a shader file, an entry point, its `#if` defines and its override constants.
struct Job {
    file: &'static str,
    entry: &'static str,
    defines: Vec<&'static str>,
    constants: Vec<(String, f64)>,
}

impl Job {
    fn label(&self) -> String {
        format!("{}:{} [{}]", self.file, self.entry, self.defines.join(","))
    }
}

struct Args {
    json: bool,
    device: Option<String>,
    policies: Vec<Policy>,
    filter: Option<String>,
    spin_limit: u32,
    constants: Vec<(String, String, f64)>,
    compile_only: bool,
    /// `--ir DIR`: where to write each executable's internal representations (the driver's disassembly,
    /// where it offers any), one file per representation.
    ir: Option<std::path::PathBuf>,
}

/// `--shaders DIR`: where shader files are read first (set once, before any compile).
static SHADER_DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

#[derive(Copy, Clone, PartialEq)]
enum Policy {
    Checked,
    Unchecked,
}

impl Policy {
    fn name(self) -> &'static str {
        match self {
            Policy::Checked => "checked",
            Policy::Unchecked => "unchecked",
        }
    }
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        json: false,
        device: None,
        policies: vec![Policy::Checked, Policy::Unchecked],
        filter: None,
        spin_limit: 64,
        constants: Vec::new(),
        compile_only: false,
        ir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |what: &str| it.next().ok_or_else(|| format!("{arg} needs {what}"));
        match arg.as_str() {
            "--json" => a.json = true,
            "--compile-only" => a.compile_only = true,
            "--ir" => a.ir = Some(value("a directory")?.into()),
            "--shaders" => {
                let dir = std::path::PathBuf::from(value("a directory")?);
                if !dir.is_dir() {
                    return Err(format!("--shaders: {} is not a directory", dir.display()));
                }
                SHADER_DIR.set(dir).map_err(|_| "--shaders given twice".to_string())?;
            }
            "--device" => a.device = Some(value("a name substring")?),
            "--filter" => a.filter = Some(value("a label substring")?),
            "--spin-limit" => a.spin_limit = value("a number")?.parse().map_err(|e| format!("--spin-limit: {e}"))?,
            "--constants" => {
                let spec = value("ENTRY.NAME=V,...")?;
                for item in parse_constants(&spec).map_err(|e| format!("--constants: {e}"))? {
                    a.constants.push((item.kernel.to_string(), item.name.to_string(), item.value));
                }
            }
            "--policy" => {
                a.policies = match value("checked|unchecked|both")?.as_str() {
                    "checked" => vec![Policy::Checked],
                    "unchecked" => vec![Policy::Unchecked],
                    "both" => vec![Policy::Checked, Policy::Unchecked],
                    p => return Err(format!("--policy: unknown policy {p:?} (checked|unchecked|both)")),
                }
            }
            "-h" | "--help" => {
                println!("usage: pipeline_stats [--json] [--device SUBSTR] [--policy checked|unchecked|both] [--filter SUBSTR] [--spin-limit N] [--constants ENTRY.NAME=V,...] [--shaders DIR] [--compile-only] [--ir DIR]");
                std::process::exit(0);
            }
            s if !s.starts_with('-') && a.device.is_none() => a.device = Some(s.to_string()),
            s => return Err(format!("unknown argument {s:?} (try --help)")),
        }
    }
    Ok(a)
}

/// Every variant `src/kernels.rs` can build (both paths, 8/16/32-bit, arena, fused, both tile orders of
/// compress), plus the copy and plain-activation shaders.
fn jobs(spin_limit: u32) -> Vec<Job> {
    let mut jobs = Vec::new();
    for path in [CodecPath::Subgroup, CodecPath::Portable] {
        for (io, fused) in [(Io::Buffer, false), (Io::Arena, false), (Io::Arena, true)] {
            for elem in [Elem::Bits16, Elem::Bits8, Elem::Bits32] {
                for op in [Op::Compress, Op::Decompress] {
                    let fusion = match (fused, op) {
                        (false, _) => Fusion::None,
                        (true, Op::Compress) => Fusion::Forward,
                        (true, Op::Decompress) => Fusion::Backward,
                    };
                    // The fused kernels take 16- and 32-bit elements (`VariantError::FusionNeedsBits16` for 8-bit).
                    let Ok(v) = Variant::new(op, elem, io, fusion, Storage::Native) else { continue };
                    // The stagings of compress (`bitsparse::Staging`: packed words, u16 slots, direct stores)
                    // in both tile orders (unordered is what the arena and the bench run by default; direct
                    // stores only unordered, as the arena runs them).
                    let forms: &[(Stage, TileOrder)] = if op == Op::Compress {
                        &[
                            (Stage::Words, TileOrder::Ordered),
                            (Stage::Words, TileOrder::Unordered),
                            (Stage::Halves, TileOrder::Ordered),
                            (Stage::Halves, TileOrder::Unordered),
                            (Stage::Direct, TileOrder::Unordered),
                        ]
                    } else {
                        &[(Stage::Words, TileOrder::Ordered)]
                    };
                    for &(stage, order) in forms {
                        let Ok(v) = v.with_stage(stage) else { continue };
                        let v = if op == Op::Compress { v.with_order(order).expect("a compress") } else { v };
                        let (file, entry) = v.shader();
                        let defines = v.defines(path);
                        if op == Op::Compress {
                            let constants = vec![("SPIN_LIMIT".to_string(), spin_limit as f64)];
                            jobs.push(Job { file, entry, defines: defines.clone(), constants });
                            jobs.push(Job { file, entry: "finish", defines, constants: vec![] });
                        } else {
                            jobs.push(Job { file, entry, defines, constants: vec![] });
                        }
                    }
                }
            }
        }
    }
    // The version-2 writer (both stagings) and decoder, as `Codec::v2_program` builds them.
    for defines in [vec![], vec!["BITS8"], vec!["BITS32"]] {
        for subgroup in [true, false] {
            let mut d = defines.clone();
            if subgroup {
                d.push("SUBGROUP");
            }
            jobs.push(Job {
                file: "decompress_v2.wgsl",
                entry: "decompress_v2",
                defines: d.clone(),
                constants: vec![],
            });
            let stagings: &[bool] = if defines.contains(&"BITS32") { &[false] } else { &[false, true] };
            for &stage16 in stagings {
                let mut d = d.clone();
                if stage16 {
                    d.push("STAGE16");
                }
                jobs.push(Job { file: "compress_v2.wgsl", entry: "compress", defines: d, constants: vec![] });
            }
        }
    }
    jobs.push(Job { file: "copy.wgsl", entry: "copy", defines: vec![], constants: vec![] });
    for entry in ["forward", "backward"] {
        jobs.push(Job { file: "plain_act.wgsl", entry, defines: vec![], constants: vec![] });
    }
    jobs
}

/// A compiled entry point and what the layout needs.
struct Compiled {
    spirv: Vec<u32>,
    /// (group, binding, descriptor type) of every buffer the module declares.
    bindings: Vec<(u32, u32, vk::DescriptorType)>,
    workgroup_size: [u32; 3],
    /// Sum of the sizes of the workgroup variables the entry point uses, as naga lays them out.
    workgroup_bytes: u64,
}

/// What the device enables, which decides naga's options the way wgpu-hal decides them.
struct DeviceCaps {
    spirv_version: (u8, u8),
    robust_buffer_access2: bool,
    subgroup_size_control: bool,
    /// VK_KHR_pipeline_executable_properties is enabled (not with `--compile-only` on drivers lacking it).
    statistics: bool,
}

fn compile(job: &Job, policy: Policy, caps: &DeviceCaps) -> Result<Compiled, String> {
    let src = match SHADER_DIR.get() {
        Some(dir) => {
            bitsparse::shaders::source_with(job.file, &|n| std::fs::read_to_string(dir.join(n)).ok(), &job.defines)?
        }
        None => bitsparse::shaders::source(job.file, &job.defines),
    };
    let module = naga::front::wgsl::parse_str(&src).map_err(|e| format!("parse: {}", e.emit_to_string(&src)))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| format!("validate: {}", e.emit_to_string(&src)))?;
    let mut constants = naga::back::PipelineConstants::default();
    for (k, v) in &job.constants {
        constants.insert(k.to_string(), *v);
    }
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, job.entry)),
        &constants,
    )
    .map_err(|e| format!("overrides: {e}"))?;

    let ep_index = module
        .entry_points
        .iter()
        .position(|ep| ep.name == job.entry)
        .ok_or_else(|| format!("no entry point {:?}", job.entry))?;
    let ep_info = info.get_entry_point(ep_index);
    let mut bindings = Vec::new();
    let mut workgroup_bytes = 0u64;
    for (handle, var) in module.global_variables.iter() {
        match var.space {
            naga::AddressSpace::Storage { .. } | naga::AddressSpace::Uniform => {
                if let Some(rb) = &var.binding {
                    let ty = if var.space == naga::AddressSpace::Uniform {
                        vk::DescriptorType::UNIFORM_BUFFER
                    } else {
                        vk::DescriptorType::STORAGE_BUFFER
                    };
                    bindings.push((rb.group, rb.binding, ty));
                }
            }
            naga::AddressSpace::WorkGroup if !ep_info[handle].is_empty() => {
                workgroup_bytes += module.types[var.ty].inner.size(module.to_ctx()) as u64;
            }
            _ => {}
        }
    }

    let bounds = match policy {
        Policy::Checked => naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Restrict,
            buffer: if caps.robust_buffer_access2 {
                naga::proc::BoundsCheckPolicy::Unchecked
            } else {
                naga::proc::BoundsCheckPolicy::Restrict
            },
            image_load: naga::proc::BoundsCheckPolicy::Restrict,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        Policy::Unchecked => naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Unchecked,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
    };
    let checked = policy == Policy::Checked;
    let options = spv::Options {
        lang_version: caps.spirv_version,
        flags: spv::WriterFlags::FORCE_POINT_SIZE | spv::WriterFlags::LABEL_VARYINGS,
        bounds_check_policies: bounds,
        // The codec passes zero_initialize_workgroup_memory: false.
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: checked,
        emit_int_div_checks: checked,
        ..spv::Options::default()
    };
    let pipeline_options =
        spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: job.entry.to_string() };
    let spirv = spv::write_vec(&module, &info, &options, Some(&pipeline_options)).map_err(|e| format!("spv: {e}"))?;
    Ok(Compiled { spirv, bindings, workgroup_size: module.entry_points[ep_index].workgroup_size, workgroup_bytes })
}

fn c_str(chars: &[c_char]) -> String {
    // SAFETY: the driver fills these fixed arrays with NUL-terminated strings; fall back to a bounded copy.
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn stat_value(s: &vk::PipelineExecutableStatisticKHR) -> Value {
    // SAFETY: `format` says which union member the driver wrote.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => json!(s.value.b32 != 0),
            vk::PipelineExecutableStatisticFormatKHR::INT64 => json!(s.value.i64),
            vk::PipelineExecutableStatisticFormatKHR::UINT64 => json!(s.value.u64),
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => json!(s.value.f64),
            f => json!(format!("<format {}>", f.as_raw())),
        }
    }
}

/// The Vulkan objects everything else borrows; destroyed in `Drop`.
struct Gpu {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    pep: ash::khr::pipeline_executable_properties::Device,
    caps: DeviceCaps,
    name: String,
    api_version: u32,
    driver: String,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: every child object was destroyed by `measure`; the device is idle (nothing submitted).
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

fn has_ext(exts: &[vk::ExtensionProperties], name: &CStr) -> bool {
    exts.iter().any(|e| e.extension_name_as_c_str().map(|n| n == name).unwrap_or(false))
}

fn open(device_filter: Option<&str>, compile_only: bool) -> Result<Gpu, String> {
    // SAFETY: plain Vulkan setup through ash; every handle passed comes from the previous call.
    unsafe {
        let entry = ash::Entry::load().map_err(|e| format!("cannot load the Vulkan loader (libvulkan.so.1): {e}"))?;
        let loader_version = entry.try_enumerate_instance_version().ok().flatten().unwrap_or(vk::API_VERSION_1_0);
        if loader_version < vk::API_VERSION_1_1 {
            return Err("the Vulkan loader supports only Vulkan 1.0; 1.1+ is needed".into());
        }
        let app_name = CString::new("bitsparse pipeline_stats").unwrap_or_default();
        let app = vk::ApplicationInfo::default()
            .application_name(&app_name)
            .api_version(loader_version.min(vk::API_VERSION_1_3));
        let instance = entry
            .create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)
            .map_err(|e| format!("vkCreateInstance failed: {e}"))?;
        let result = open_device(&entry, &instance, device_filter, compile_only);
        match result {
            Ok((device, caps, name, api_version, driver)) => {
                let pep = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
                Ok(Gpu { _entry: entry, instance, device, pep, caps, name, api_version, driver })
            }
            Err(e) => {
                instance.destroy_instance(None);
                Err(e)
            }
        }
    }
}

type Opened = (ash::Device, DeviceCaps, String, u32, String);

unsafe fn open_device(
    entry: &ash::Entry,
    instance: &ash::Instance,
    device_filter: Option<&str>,
    compile_only: bool,
) -> Result<Opened, String> {
    let _ = entry;
    let pds = instance.enumerate_physical_devices().map_err(|e| format!("vkEnumeratePhysicalDevices failed: {e}"))?;
    let mut names = Vec::new();
    let mut chosen = None;
    for &pd in &pds {
        let props = instance.get_physical_device_properties(pd);
        let name = props.device_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if chosen.is_none() && device_filter.map(|f| name.to_lowercase().contains(&f.to_lowercase())).unwrap_or(true) {
            chosen = Some((pd, props, name.clone()));
        }
        names.push(name);
    }
    let (pd, props, name) = chosen.ok_or_else(|| match device_filter {
        Some(f) => format!("no Vulkan device name contains {f:?} (devices: {})", names.join(", ")),
        None => "no Vulkan physical device found".to_string(),
    })?;
    if props.api_version < vk::API_VERSION_1_1 {
        return Err(format!("{name}: Vulkan 1.1+ is needed (device reports {})", version_string(props.api_version)));
    }
    let exts = instance
        .enumerate_device_extension_properties(pd)
        .map_err(|e| format!("vkEnumerateDeviceExtensionProperties failed: {e}"))?;
    let pep_name = ash::khr::pipeline_executable_properties::NAME;
    let statistics = has_ext(&exts, pep_name);
    if !statistics && !compile_only {
        return Err(format!("{name} does not support {} (driver cannot report pipeline statistics; --compile-only checks the pipelines anyway)", pep_name.to_string_lossy()));
    }
    let robustness2 = has_ext(&exts, ash::ext::robustness2::NAME);
    let is13 = props.api_version >= vk::API_VERSION_1_3;

    // Query what is supported, then enable exactly what wgpu would plus pipelineExecutableInfo.
    let mut q_pep = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
    let mut q_rb2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let mut q_ssc = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
    let mut q = vk::PhysicalDeviceFeatures2::default();
    if statistics {
        q = q.push_next(&mut q_pep);
    }
    if robustness2 {
        q = q.push_next(&mut q_rb2);
    }
    if is13 {
        q = q.push_next(&mut q_ssc);
    }
    instance.get_physical_device_features2(pd, &mut q);
    let core = q.features;
    if statistics && q_pep.pipeline_executable_info == 0 {
        return Err(format!("{name} lists {} but not the pipelineExecutableInfo feature", pep_name.to_string_lossy()));
    }
    let rb2 = robustness2 && q_rb2.robust_buffer_access2 != 0;
    let ssc = is13 && q_ssc.subgroup_size_control != 0;

    let mut e_pep = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
    let mut e_rb2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(true);
    let mut e_ssc = vk::PhysicalDeviceSubgroupSizeControlFeatures::default().subgroup_size_control(true);
    let core_features = vk::PhysicalDeviceFeatures::default()
        .robust_buffer_access(core.robust_buffer_access != 0)
        .shader_int64(core.shader_int64 != 0)
        .shader_int16(core.shader_int16 != 0);
    let mut ext_names = Vec::new();
    if statistics {
        ext_names.push(pep_name.as_ptr());
    }
    if rb2 {
        ext_names.push(ash::ext::robustness2::NAME.as_ptr());
    }
    let prio = [1.0f32];
    let family = instance
        .get_physical_device_queue_family_properties(pd)
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or_else(|| format!("{name} has no compute queue family"))? as u32;
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&prio)];
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&ext_names)
        .enabled_features(&core_features);
    if statistics {
        info = info.push_next(&mut e_pep);
    }
    if rb2 {
        info = info.push_next(&mut e_rb2);
    }
    if ssc {
        info = info.push_next(&mut e_ssc);
    }
    let device = instance.create_device(pd, &info, None).map_err(|e| format!("vkCreateDevice failed: {e}"))?;

    let mut driver_props = vk::PhysicalDeviceDriverProperties::default();
    let driver = if props.api_version >= vk::API_VERSION_1_2 {
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver_props);
        instance.get_physical_device_properties2(pd, &mut p2);
        format!("{} {}", c_str(&driver_props.driver_name), c_str(&driver_props.driver_info))
    } else {
        format!("driver_version {:#x}", props.driver_version)
    };
    let spirv_version = if is13 {
        (1, 6)
    } else if props.api_version >= vk::API_VERSION_1_2 {
        (1, 5)
    } else {
        (1, 3)
    };
    Ok((
        device,
        DeviceCaps { spirv_version, robust_buffer_access2: rb2, subgroup_size_control: ssc, statistics },
        name,
        props.api_version,
        driver,
    ))
}

fn version_string(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

/// Writes the internal representations of one executable into `dir` (file names from `stem`, the
/// job's label, and the representation's name) and returns their names and files. The Vulkan two-call
/// idiom takes three calls here: the count, the sizes, then the text into buffers of those sizes.
///
/// # Safety
/// `info` names a live pipeline created with `CAPTURE_INTERNAL_REPRESENTATIONS_KHR`.
unsafe fn internal_representations(
    gpu: &Gpu,
    info: &vk::PipelineExecutableInfoKHR<'_>,
    dir: &std::path::Path,
    stem: &str,
) -> Result<Vec<Value>, String> {
    let sized = gpu
        .pep
        .get_pipeline_executable_internal_representations(info)
        .map_err(|e| format!("vkGetPipelineExecutableInternalRepresentationsKHR: {e}"))?;
    let mut bufs: Vec<Vec<u8>> = sized.iter().map(|r| vec![0u8; r.data_size]).collect();
    let mut reps: Vec<vk::PipelineExecutableInternalRepresentationKHR<'_>> = sized
        .iter()
        .zip(bufs.iter_mut())
        .map(|(r, b)| vk::PipelineExecutableInternalRepresentationKHR {
            data_size: r.data_size,
            p_data: b.as_mut_ptr().cast(),
            ..Default::default()
        })
        .collect();
    let mut count = reps.len() as u32;
    let fp = gpu.pep.fp().get_pipeline_executable_internal_representations_khr;
    let r = fp(gpu.device.handle(), info, &mut count, reps.as_mut_ptr());
    if r != vk::Result::SUCCESS && r != vk::Result::INCOMPLETE {
        return Err(format!("vkGetPipelineExecutableInternalRepresentationsKHR: {r}"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for (rep, buf) in reps.iter().zip(&bufs).take(count as usize) {
        let name = c_str(&rep.name);
        let safe: String = format!("{stem}-{name}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect();
        let path = dir.join(format!("{safe}.txt"));
        let len =
            if rep.is_text == vk::TRUE { buf.iter().position(|&b| b == 0).unwrap_or(buf.len()) } else { buf.len() };
        std::fs::write(&path, &buf[..len.min(rep.data_size)]).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(json!({ "name": name, "text": rep.is_text == vk::TRUE, "bytes": rep.data_size, "file": path.display().to_string() }));
    }
    Ok(out)
}

/// Builds `job` on the device and returns its executables with their statistics as JSON.
fn measure(gpu: &Gpu, job: &Job, policy: Policy, ir: Option<&std::path::Path>) -> Result<Value, String> {
    let c = compile(job, policy, &gpu.caps)?;
    let d = &gpu.device;
    let max_group = c.bindings.iter().map(|b| b.0).max();
    let mut set_layouts = Vec::new();
    let mut module = vk::ShaderModule::null();
    let mut layout = vk::PipelineLayout::null();
    let mut pipeline = vk::Pipeline::null();
    // SAFETY: every object created here is destroyed below, whatever happened in between.
    let result = unsafe {
        (|| -> Result<Value, String> {
            for g in 0..max_group.map(|m| m + 1).unwrap_or(0) {
                let entries: Vec<_> = c
                    .bindings
                    .iter()
                    .filter(|b| b.0 == g)
                    .map(|b| {
                        vk::DescriptorSetLayoutBinding::default()
                            .binding(b.1)
                            .descriptor_type(b.2)
                            .descriptor_count(1)
                            .stage_flags(vk::ShaderStageFlags::COMPUTE)
                    })
                    .collect();
                let sl = d
                    .create_descriptor_set_layout(
                        &vk::DescriptorSetLayoutCreateInfo::default().bindings(&entries),
                        None,
                    )
                    .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?;
                set_layouts.push(sl);
            }
            layout = d
                .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None)
                .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
            module = d
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&c.spirv), None)
                .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
            let entry = CString::new(job.entry).map_err(|e| e.to_string())?;
            let mut stage_flags = vk::PipelineShaderStageCreateFlags::empty();
            if gpu.caps.subgroup_size_control {
                // wgpu sets this whenever Features::SUBGROUP is on.
                stage_flags |= vk::PipelineShaderStageCreateFlags::ALLOW_VARYING_SUBGROUP_SIZE;
            }
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .flags(stage_flags)
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(&entry);
            let mut flags = if gpu.caps.statistics {
                vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
            } else {
                vk::PipelineCreateFlags::empty()
            };
            if gpu.caps.statistics && ir.is_some() {
                flags |= vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR;
            }
            let info = vk::ComputePipelineCreateInfo::default().flags(flags).stage(stage).layout(layout);
            pipeline = d
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
                .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?
                .first()
                .copied()
                .ok_or("vkCreateComputePipelines returned no pipeline")?;
            if !gpu.caps.statistics {
                return Ok(Value::Null);
            }
            let execs = gpu
                .pep
                .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))
                .map_err(|e| format!("vkGetPipelineExecutablePropertiesKHR: {e}"))?;
            let mut out = Vec::new();
            for (i, ex) in execs.iter().enumerate() {
                let stats = gpu
                    .pep
                    .get_pipeline_executable_statistics(
                        &vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i as u32),
                    )
                    .map_err(|e| format!("vkGetPipelineExecutableStatisticsKHR: {e}"))?;
                let list: Vec<Value> = stats
                    .iter()
                    .map(|s| json!({ "name": c_str(&s.name), "value": stat_value(s), "description": c_str(&s.description) }))
                    .collect();
                let mut irs = Vec::new();
                if let Some(dir) = ir {
                    let info = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i as u32);
                    irs = internal_representations(gpu, &info, dir, &format!("{}-{}-{i}", job.label(), policy.name()))?;
                }
                out.push(json!({
                    "name": c_str(&ex.name),
                    "description": c_str(&ex.description),
                    "subgroup_size": ex.subgroup_size,
                    "statistics": list,
                    "internal_representations": irs,
                }));
            }
            Ok(json!(out))
        })()
    };
    // SAFETY: destroying null handles is a no-op; nothing is in use (no command was recorded).
    unsafe {
        d.destroy_pipeline(pipeline, None);
        d.destroy_shader_module(module, None);
        d.destroy_pipeline_layout(layout, None);
        for sl in set_layouts {
            d.destroy_descriptor_set_layout(sl, None);
        }
    }
    let executables = result?;
    Ok(json!({
        "workgroup_size": c.workgroup_size,
        "workgroup_memory_bytes": c.workgroup_bytes,
        "spirv_words": c.spirv.len(),
        "executables": executables,
    }))
}

fn fmt_value(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pipeline_stats: {e}");
            return ExitCode::from(2);
        }
    };
    let gpu = match open(args.device.as_deref(), args.compile_only) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("pipeline_stats: {e}");
            return ExitCode::from(1);
        }
    };
    if !args.json {
        println!(
            "device: {} (Vulkan {}, {}), SPIR-V {}.{}, robustBufferAccess2 {}, statistics {}",
            gpu.name,
            version_string(gpu.api_version),
            gpu.driver.trim(),
            gpu.caps.spirv_version.0,
            gpu.caps.spirv_version.1,
            gpu.caps.robust_buffer_access2,
            gpu.caps.statistics
        );
    }
    let mut rows = Vec::new();
    let mut failed = 0;
    for mut job in jobs(args.spin_limit) {
        if let Some(f) = &args.filter {
            if !job.label().contains(f.as_str()) {
                continue;
            }
        }
        for (entry, name, v) in &args.constants {
            if entry == job.entry {
                job.constants.retain(|(n, _)| n != name);
                job.constants.push((name.clone(), *v));
            }
        }
        for &policy in &args.policies {
            let mut row = json!({
                "file": job.file,
                "entry": job.entry,
                "defines": job.defines,
                "policy": policy.name(),
            });
            match measure(&gpu, &job, policy, args.ir.as_deref()) {
                Ok(Value::Object(m)) => {
                    if let Value::Object(r) = &mut row {
                        r.extend(m);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    failed += 1;
                    row["error"] = json!(e);
                }
            }
            if !args.json {
                print_row(&job, &row);
            }
            rows.push(row);
        }
    }
    if args.json {
        let doc = json!({
            "device": gpu.name,
            "vulkan": version_string(gpu.api_version),
            "driver": gpu.driver.trim(),
            "spirv_version": format!("{}.{}", gpu.caps.spirv_version.0, gpu.caps.spirv_version.1),
            "robust_buffer_access2": gpu.caps.robust_buffer_access2,
            "statistics": gpu.caps.statistics,
            "pipelines": rows,
        });
        match serde_json::to_string_pretty(&doc) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("pipeline_stats: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if failed > 0 {
        eprintln!("pipeline_stats: {failed} pipeline(s) failed");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// One line per pipeline executable: label, policy, workgroup size and memory, then `name=value` per statistic.
fn print_row(job: &Job, row: &Value) {
    let head = format!("{:<52} {:<9}", job.label(), row["policy"].as_str().unwrap_or(""));
    if let Some(e) = row["error"].as_str() {
        println!("{head} ERROR {e}");
        return;
    }
    let wg = row["workgroup_size"]
        .as_array()
        .map(|a| a.iter().map(fmt_value).collect::<Vec<_>>().join("x"))
        .unwrap_or_default();
    let info = format!("wg={wg} wgmem={}B spirv={}w", row["workgroup_memory_bytes"], row["spirv_words"]);
    let execs = row["executables"].as_array().cloned().unwrap_or_default();
    if row["executables"].is_null() {
        println!("{head} {info} (pipeline built; no statistics)");
    } else if execs.is_empty() {
        println!("{head} {info} (driver reported no executables)");
    }
    for ex in execs {
        let stats: Vec<String> = ex["statistics"]
            .as_array()
            .map(|a| {
                a.iter().map(|s| format!("{}={}", s["name"].as_str().unwrap_or("?"), fmt_value(&s["value"]))).collect()
            })
            .unwrap_or_default();
        println!(
            "{head} {info} exec={:?} subgroup={} | {}",
            ex["name"].as_str().unwrap_or(""),
            ex["subgroup_size"],
            stats.join("  ")
        );
    }
}
