//! `bitsparse info`: every adapter, in the enumeration order that `--adapter SUBSTR` searches, with the
//! codec path it would get and which one the other commands would use now.

use bitsparse::host::context::{backend_name, enumerate, instance, AdapterChoice};

use super::{print_json, print_stdout, CliError, Globals};

/// `info` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print one JSON document (`{"adapters": [...]}`) instead of a table.
    #[arg(long)]
    json: bool,
}

/// One row of the listing.
struct Row {
    info: wgpu::AdapterInfo,
    subgroup: bool,
    max_binding: u64,
    selected: bool,
}

pub fn run(g: &Globals, args: &Args) -> Result<(), CliError> {
    let backends = g.choice.backends().map_err(CliError::plain)?;
    let adapters = enumerate(backends);
    let selected = selected_index(&g.choice, backends, &adapters);
    let rows: Vec<Row> = adapters
        .iter()
        .enumerate()
        .map(|(i, a)| Row {
            info: a.get_info(),
            // Same rule as `bitsparse::Codec::new` (the CLI opens devices with every wanted feature the
            // adapter has, SUBGROUP included).
            subgroup: a.features().contains(wgpu::Features::SUBGROUP),
            max_binding: a.limits().max_storage_buffer_binding_size,
            selected: selected == Some(i),
        })
        .collect();
    if selected.is_none() {
        eprintln!("note: no adapter matches the current --adapter / --backend choice");
    }
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                serde_json::json!({
                    "index": i,
                    "name": r.info.name,
                    "backend": backend_name(r.info.backend),
                    "device_type": device_type(r.info.device_type),
                    "vendor": r.info.vendor,
                    "device": r.info.device,
                    "driver": r.info.driver,
                    "driver_info": r.info.driver_info,
                    // Without the feature the adapter's numbers describe nothing the codec can use.
                    "subgroup_min_size": r.subgroup.then_some(r.info.subgroup_min_size),
                    "subgroup_max_size": r.subgroup.then_some(r.info.subgroup_max_size),
                    "subgroups": r.subgroup,
                    "path": path(r.subgroup),
                    "max_storage_buffer_binding_size": r.max_binding,
                    "selected": r.selected,
                })
            })
            .collect();
        return print_json(&serde_json::json!({ "adapters": list }));
    }
    if rows.is_empty() {
        return print_stdout("no adapters found (is a Vulkan or GL driver installed? see README.md)");
    }
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let sg = if r.subgroup {
            format!("subgroups {}..{}", r.info.subgroup_min_size, r.info.subgroup_max_size)
        } else {
            "no subgroups".to_string()
        };
        let driver = [r.info.driver.as_str(), r.info.driver_info.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        out += &format!(
            "{} [{i}] {}\n      backend {}, {}, driver {}, {sg}, {} path, storage binding {} MiB\n",
            if r.selected { "*" } else { " " },
            r.info.name,
            backend_name(r.info.backend),
            device_type(r.info.device_type),
            if driver.is_empty() { "?" } else { &driver },
            path(r.subgroup),
            r.max_binding >> 20,
        );
    }
    out += "(* = the adapter the other commands use with the current --adapter / --backend / environment)";
    print_stdout(&out)
}

/// The index of the adapter `GpuContext::new` would open: the first name match for `--adapter`, else the
/// one the instance's high-performance request returns, found by its info.
fn selected_index(choice: &AdapterChoice, backends: wgpu::Backends, adapters: &[wgpu::Adapter]) -> Option<usize> {
    match &choice.adapter {
        Some(sub) => {
            let sub = sub.to_ascii_lowercase();
            adapters.iter().position(|a| a.get_info().name.to_ascii_lowercase().contains(&sub))
        }
        None => {
            let inst = instance(backends);
            let a = pollster::block_on(inst.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                apply_limit_buckets: false,
            }))
            .ok()?;
            let info = a.get_info();
            adapters.iter().position(|b| b.get_info() == info)
        }
    }
}

fn path(subgroup: bool) -> &'static str {
    if subgroup {
        "subgroup"
    } else {
        "portable"
    }
}

fn device_type(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::DiscreteGpu => "discrete-gpu",
        wgpu::DeviceType::IntegratedGpu => "integrated-gpu",
        wgpu::DeviceType::VirtualGpu => "virtual-gpu",
        wgpu::DeviceType::Cpu => "cpu",
        wgpu::DeviceType::Other => "other",
    }
}
