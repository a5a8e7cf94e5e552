//! The conformance suite behind `bitsparse selftest`: the GPU codec of an adapter against the CPU
//! reference, both ways, on every dtype × sign mode × path (subgroup where the adapter has it, and
//! portable) × edge lengths × densities × special bit patterns, plus the chunked (lowered binding limit)
//! and 2-D dispatch (lowered workgroup limit) paths and the sign-bit error.
//!
//! Why a library module: a cross-vendor rig runs it through the CLI on every adapter it has, and the
//! tests run the same function on lavapipe, so what the rig checks is what CI checks.
//!
//! A case passes when the GPU's compact stream equals the CPU reference's byte for byte (format v1
//! streams are deterministic), the CPU decodes the GPU stream to the input, and the GPU decodes the CPU
//! stream to the input. A panic inside wgpu (its default handler panics on validation errors) is caught
//! and counted as that case's failure, so one broken adapter cannot stop the others from being tested.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use crate::format::{DType, Options, TILE};
use crate::host::context::{backend_name, GpuContext};
use crate::{cpu, host, Codec, CodecConfig, CodecPath, Error};

/// Lengths every dtype × sign mode × path is tried at (edges of a word, of a tile, several tiles).
pub const LENGTHS: [usize; 9] = [0, 1, 31, 32, 33, 4095, 4096, 4097, 3 * 4096 + 77];
/// Densities tried on a multi-tile tensor.
pub const DENSITIES: [f64; 7] = [0.0, 1e-4, 0.005, 0.01, 0.176, 0.5, 1.0];
/// Length of the density cases.
pub const DENSITY_LENGTH: usize = 9 * 4096 + 5;

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct SuiteOptions {
    /// Add the large cases: one tensor per element width past the device's real storage-binding size.
    pub full: bool,
}

/// Outcome of one adapter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every case passed.
    Pass,
    /// At least one case failed.
    Fail,
    /// The device could not be opened (`request_device` failed). A codec that cannot be built on an
    /// opened device is a failure, not this: the library promises to run on every adapter.
    Unavailable,
}

impl Status {
    /// `pass`, `fail`, `unavailable`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Unavailable => "unavailable",
        }
    }
}

/// Which codec configuration a case uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The device's own limits.
    Default,
    /// A storage-binding limit lowered to a few tiles, so a small tensor takes the chunked path.
    Chunked,
    /// A workgroups-per-dimension limit lowered to 5, so a small tensor takes the 2-D dispatch path.
    Dispatch2d,
}

/// The data of a case.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Data {
    /// `cpu::synthetic_bits(n, density)` (sign bits cleared under sign packing).
    Bits {
        /// Elements.
        n: usize,
        /// Nominal density.
        density: f64,
        /// Seed of the generator.
        seed: u64,
    },
    /// Every bit pattern of the element width (only the positive ones under sign packing).
    AllPatterns,
    /// A ReLU² tensor with one −0.0 in its second tile, compressed with sign packing: must be refused
    /// with `Error::SignBitSet` at that index.
    SignBitError,
}

/// One case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Codec path.
    pub path: CodecPath,
    /// Codec configuration.
    pub variant: Variant,
    /// Element type.
    pub dtype: DType,
    /// Sign packing.
    pub sign_pack: bool,
    /// Input.
    pub data: Data,
}

impl Case {
    /// A one-line name for reports.
    pub fn name(&self) -> String {
        let data = match self.data {
            Data::Bits { n, density, .. } => format!("n={n} density={density}"),
            Data::AllPatterns => "all bit patterns".to_string(),
            Data::SignBitError => "sign bit under --sign-pack is refused".to_string(),
        };
        let variant = match self.variant {
            Variant::Default => "",
            Variant::Chunked => " chunked",
            Variant::Dispatch2d => " dispatch-2d",
        };
        format!(
            "{}{variant} {} {} {data}",
            self.path.name(),
            self.dtype,
            if self.sign_pack { "sign-packed" } else { "plain" }
        )
    }
}

/// A failed case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// [`Case::name`].
    pub case: String,
    /// CodecPath name.
    pub path: &'static str,
    /// Element type name.
    pub dtype: &'static str,
    /// What went wrong.
    pub message: String,
}

/// One cell of the pass/fail matrix: a path and dtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// CodecPath name (`subgroup`, `portable`).
    pub path: &'static str,
    /// Element type name.
    pub dtype: &'static str,
    /// Cases run.
    pub cases: u64,
    /// Cases failed.
    pub failed: u64,
}

/// The result of one adapter.
#[derive(Clone, Debug)]
pub struct AdapterResult {
    /// Adapter name.
    pub name: String,
    /// Backend name (`vulkan`, `gl`, …).
    pub backend: String,
    /// Outcome.
    pub status: Status,
    /// Cases run.
    pub cases: u64,
    /// Failed cases.
    pub failures: Vec<Failure>,
    /// Pass/fail counts per path and dtype.
    pub matrix: Vec<Cell>,
    /// Paths tested.
    pub paths: Vec<&'static str>,
    /// Why the adapter is unavailable.
    pub reason: Option<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// The paths an opened device is tested on: subgroup where it has the feature, and always portable.
pub fn paths(device: &wgpu::Device) -> Vec<CodecPath> {
    let mut v = Vec::new();
    if device.features().contains(wgpu::Features::SUBGROUP) {
        v.push(CodecPath::Subgroup);
    }
    v.push(CodecPath::Portable);
    v
}

/// Every case for `paths`. `max_binding` (the device's storage-binding size) sizes the `full` cases.
pub fn cases(paths: &[CodecPath], options: &SuiteOptions, max_binding: u64) -> Vec<Case> {
    let mut v = Vec::new();
    for &path in paths {
        for dtype in DType::ALL {
            for sign_pack in [false, true] {
                let mk = |variant, data| Case { path, variant, dtype, sign_pack, data };
                for (i, &n) in LENGTHS.iter().enumerate() {
                    v.push(mk(Variant::Default, Data::Bits { n, density: 0.176, seed: i as u64 }));
                }
                for (i, &density) in DENSITIES.iter().enumerate() {
                    v.push(mk(Variant::Default, Data::Bits { n: DENSITY_LENGTH, density, seed: 100 + i as u64 }));
                }
                v.push(mk(Variant::Default, Data::AllPatterns));
                if sign_pack {
                    v.push(mk(Variant::Default, Data::SignBitError));
                }
                v.push(mk(Variant::Chunked, Data::Bits { n: 17 * 4096 + 1001, density: 0.3, seed: 7 }));
                v.push(mk(Variant::Dispatch2d, Data::Bits { n: 23 * 4096 + 3, density: 0.176, seed: 8 }));
            }
        }
        if options.full {
            // Past the real binding size, once per element width, on each path.
            for dtype in [DType::Bf16, DType::E4m3, DType::F32] {
                let n = (max_binding / dtype.bytes()) as usize + TILE as usize + 3;
                v.push(Case {
                    path,
                    variant: Variant::Default,
                    dtype,
                    sign_pack: false,
                    data: Data::Bits { n, density: 0.176, seed: 9 },
                });
            }
        }
    }
    v
}

fn input(case: &Case) -> Vec<u8> {
    let dtype = case.dtype;
    let eb = dtype.bytes() as usize;
    let mut d = match case.data {
        Data::Bits { n, density, seed } => cpu::synthetic_bits(n, density, dtype, seed),
        Data::AllPatterns => {
            if eb == 4 {
                all_patterns32().into_iter().flat_map(u32::to_le_bytes).collect()
            } else if eb == 2 {
                (0..=u16::MAX).flat_map(|v| v.to_le_bytes()).collect()
            } else {
                // Every byte, spread over more than two tiles in a scrambled order.
                (0..3 * TILE as usize + 17).map(|i| (i * 37 % 256) as u8).collect()
            }
        }
        Data::SignBitError => {
            let mut d = cpu::synthetic_relu2(3 * TILE as usize + 5, 0.3, dtype, 7);
            let i = sign_error_index();
            d[i * eb..(i + 1) * eb].fill(0);
            d[(i + 1) * eb - 1] = 0x80;
            return d;
        }
    };
    if case.sign_pack {
        for e in d.chunks_mut(eb) {
            e[eb - 1] &= 0x7f;
        }
    }
    d
}

/// The 32-bit "all patterns": 2^32 elements are too many, so every byte value in every byte position
/// (alone in its word, so that words with a zero 16-bit half are covered), the special patterns of
/// `cpu::SPECIAL32` (−0.0, ±∞, NaN payloads of both signs, subnormals), then scrambled full words,
/// spread over more than two tiles.
fn all_patterns32() -> Vec<u32> {
    let mut v: Vec<u32> = (0..4).flat_map(|k| (1..=255u32).map(move |b| b << (8 * k))).collect();
    v.extend(cpu::SPECIAL32);
    let mut i = 0u32;
    while v.len() < 3 * TILE as usize + 17 {
        v.push(i.wrapping_mul(0x9E37_79B9) ^ (i << 7));
        v.push(0);
        i += 1;
    }
    v
}

fn sign_error_index() -> usize {
    TILE as usize + 1234
}

/// Runs one case; `Err` says what went wrong.
pub fn run_case(ctx: &GpuContext, codec: &Codec, case: &Case) -> std::result::Result<(), String> {
    let bytes = input(case);
    let options = Options { sign_pack: case.sign_pack };
    let (dev, q) = (&ctx.device, &ctx.queue);
    if case.data == Data::SignBitError {
        // Both writers, version 1 and version 2.
        let check = |got: crate::Result<Vec<u8>>, what: &str| match got {
            Err(Error::SignBitSet { index }) if index == Some(sign_error_index() as u64) => Ok(()),
            Err(Error::SignBitSet { index }) => {
                Err(format!("{what}: SignBitSet at {index:?}, expected element {}", sign_error_index()))
            }
            Err(e) => Err(format!("{what}: expected SignBitSet, got: {e}")),
            Ok(_) => {
                Err(format!("{what}: a value with its sign bit set was compressed under sign packing without an error"))
            }
        };
        check(host::compress_to_vec(codec, dev, q, &bytes, case.dtype, options), "version 1")?;
        return check(host::compress_v2_to_vec(codec, dev, q, &bytes, case.dtype, options), "version 2");
    }
    let cpu_stream = cpu::compress(&bytes, case.dtype, options).map_err(|e| format!("CPU compress: {e}"))?;
    let gpu_stream =
        host::compress_to_vec(codec, dev, q, &bytes, case.dtype, options).map_err(|e| format!("GPU compress: {e}"))?;
    if gpu_stream != cpu_stream {
        let first = gpu_stream.iter().zip(&cpu_stream).position(|(a, b)| a != b);
        return Err(format!(
            "GPU stream differs from the CPU reference (lengths {} vs {}, first differing byte {})",
            gpu_stream.len(),
            cpu_stream.len(),
            first.map_or("past the shorter one".to_string(), |f| f.to_string())
        ));
    }
    let back = cpu::decompress(&gpu_stream).map_err(|e| format!("CPU decode of the GPU stream: {e}"))?;
    if back != bytes {
        return Err("CPU decode of the GPU stream differs from the input".into());
    }
    let back = host::decompress_to_vec(codec, dev, q, &cpu_stream)
        .map_err(|e| format!("GPU decode of the CPU stream: {e}"))?;
    if back != bytes {
        return Err("GPU decode of the CPU stream differs from the input".into());
    }
    // Format version 2: the GPU's version-2 writer (in pieces under `Chunked`'s lowered binding limit)
    // and the transcode of its version-1 stream both equal the CPU's version-2 stream, and the GPU's
    // version-2 decoder gives the input back. (The decode not under `Chunked`: it works on whole
    // 16-tile groups, and every real device's bindings hold hundreds.)
    let gpu_v2 = host::compress_v2_to_vec(codec, dev, q, &bytes, case.dtype, options)
        .map_err(|e| format!("GPU compress v2: {e}"))?;
    let cpu_v2 = cpu::compress_v2(&bytes, case.dtype, options).map_err(|e| format!("CPU compress v2: {e}"))?;
    if gpu_v2 != cpu_v2 {
        return Err("the GPU's version-2 stream differs from the CPU's".into());
    }
    if case.variant != Variant::Chunked {
        let v2 = cpu::transcode_v1(&gpu_stream).map_err(|e| format!("transcode to version 2: {e}"))?;
        if v2 != cpu_v2 {
            return Err("version 2 of the GPU stream differs from the CPU's version-2 stream".into());
        }
        let back = host::decompress_to_vec(codec, dev, q, &v2)
            .map_err(|e| format!("GPU decode of the version-2 stream: {e}"))?;
        if back != bytes {
            return Err("GPU decode of the version-2 stream differs from the input".into());
        }
    }
    Ok(())
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

fn codec_for(device: &wgpu::Device, path: CodecPath, variant: Variant) -> crate::Result<Codec> {
    let mut cfg = CodecConfig { force_portable: path == CodecPath::Portable, ..Default::default() };
    match variant {
        Variant::Default => {}
        Variant::Chunked => cfg.max_binding_bytes = Some(3 * 8192 + 512),
        Variant::Dispatch2d => cfg.max_workgroups_per_dim = Some(5),
    }
    let codec = Codec::with_config(device, cfg)?;
    if codec.path() != path {
        return Err(Error::Unsupported(format!("asked for the {} path, got {}", path.name(), codec.path().name())));
    }
    Ok(codec)
}

/// Runs the suite on an opened device. `progress(done, total, case)` is called before each case, and
/// once more with `None` at the end.
pub fn run_on(
    ctx: &GpuContext,
    options: &SuiteOptions,
    progress: &mut dyn FnMut(usize, usize, Option<&Case>),
) -> AdapterResult {
    let t0 = Instant::now();
    let paths = paths(&ctx.device);
    let limits = ctx.device.limits();
    let max_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let list = cases(&paths, options, max_binding);
    let mut codecs: Vec<((CodecPath, Variant), std::result::Result<Codec, String>)> = Vec::new();
    let mut matrix: Vec<Cell> = Vec::new();
    let mut failures = Vec::new();
    for (i, case) in list.iter().enumerate() {
        progress(i, list.len(), Some(case));
        let key = (case.path, case.variant);
        if !codecs.iter().any(|(k, _)| *k == key) {
            let built = catch_unwind(AssertUnwindSafe(|| codec_for(&ctx.device, case.path, case.variant)))
                .map_err(|p| format!("panic: {}", panic_message(p.as_ref())))
                .and_then(|r| r.map_err(|e| format!("building the codec: {e}")));
            codecs.push((key, built));
        }
        let codec = codecs.iter().find(|(k, _)| *k == key).map(|(_, c)| c.clone()).unwrap_or(Err("no codec".into()));
        let outcome = codec.and_then(|codec| {
            catch_unwind(AssertUnwindSafe(|| run_case(ctx, &codec, case)))
                .unwrap_or_else(|p| Err(format!("panic: {}", panic_message(p.as_ref()))))
        });
        let cell = match matrix.iter_mut().position(|c| c.path == case.path.name() && c.dtype == case.dtype.name()) {
            Some(j) => &mut matrix[j],
            None => {
                matrix.push(Cell { path: case.path.name(), dtype: case.dtype.name(), cases: 0, failed: 0 });
                let last = matrix.len() - 1;
                &mut matrix[last]
            }
        };
        cell.cases += 1;
        if let Err(message) = outcome {
            cell.failed += 1;
            failures.push(Failure { case: case.name(), path: case.path.name(), dtype: case.dtype.name(), message });
        }
    }
    progress(list.len(), list.len(), None);
    AdapterResult {
        name: ctx.info.name.clone(),
        backend: backend_name(ctx.info.backend).to_string(),
        status: if failures.is_empty() && !list.is_empty() { Status::Pass } else { Status::Fail },
        cases: list.len() as u64,
        failures,
        matrix,
        paths: paths.iter().map(|p| p.name()).collect(),
        reason: None,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Opens `adapter` (every wanted feature it has) and runs the suite; a device that cannot be opened is
/// [`Status::Unavailable`].
pub fn run_adapter(
    adapter: wgpu::Adapter,
    options: &SuiteOptions,
    progress: &mut dyn FnMut(usize, usize, Option<&Case>),
) -> AdapterResult {
    let info = adapter.get_info();
    let t0 = Instant::now();
    let opened = catch_unwind(AssertUnwindSafe(|| GpuContext::from_adapter(adapter, wgpu::Features::empty())))
        .unwrap_or_else(|p| Err(Error::NoAdapter(format!("panic: {}", panic_message(p.as_ref())))));
    match opened {
        Ok(ctx) => run_on(&ctx, options, progress),
        Err(e) => AdapterResult {
            name: info.name.clone(),
            backend: backend_name(info.backend).to_string(),
            status: Status::Unavailable,
            cases: 0,
            failures: Vec::new(),
            matrix: Vec::new(),
            paths: Vec::new(),
            reason: Some(e.to_string()),
            seconds: t0.elapsed().as_secs_f64(),
        },
    }
}

/// Whether a selftest over `results` succeeds: at least one adapter available and every available one
/// passing.
pub fn overall_ok(results: &[AdapterResult]) -> bool {
    results.iter().any(|r| r.status != Status::Unavailable) && results.iter().all(|r| r.status != Status::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_covers_the_matrix() {
        let c = cases(&[CodecPath::Subgroup, CodecPath::Portable], &SuiteOptions::default(), 1 << 27);
        for path in [CodecPath::Subgroup, CodecPath::Portable] {
            for dtype in DType::ALL {
                for sign_pack in [false, true] {
                    let of = |f: &dyn Fn(&Case) -> bool| {
                        c.iter()
                            .filter(|k| k.path == path && k.dtype == dtype && k.sign_pack == sign_pack && f(k))
                            .count()
                    };
                    for &n in &LENGTHS {
                        assert_eq!(
                            of(&|k| matches!(k.data, Data::Bits { n: m, .. } if m == n)
                                && k.variant == Variant::Default),
                            1
                        );
                    }
                    for &d in &DENSITIES {
                        assert!(of(&|k| matches!(k.data, Data::Bits { density, .. } if density == d)) >= 1);
                    }
                    assert_eq!(of(&|k| k.data == Data::AllPatterns), 1);
                    assert_eq!(of(&|k| k.variant == Variant::Chunked), 1);
                    assert_eq!(of(&|k| k.variant == Variant::Dispatch2d), 1);
                    assert_eq!(of(&|k| k.data == Data::SignBitError), sign_pack as usize);
                }
            }
        }
        let full = cases(&[CodecPath::Portable], &SuiteOptions { full: true }, 1 << 27);
        assert!(full.iter().any(|k| matches!(k.data, Data::Bits { n, .. } if n as u64 * 2 > 1 << 27)));
    }

    #[test]
    fn sign_packed_inputs_have_no_sign_bits_and_specials_cover_every_pattern() {
        for dtype in DType::ALL {
            let c = Case {
                path: CodecPath::Portable,
                variant: Variant::Default,
                dtype,
                sign_pack: false,
                data: Data::AllPatterns,
            };
            let d = input(&c);
            let eb = dtype.bytes() as usize;
            let mut seen = std::collections::HashSet::new();
            for e in d.chunks(eb) {
                seen.insert(e.to_vec());
            }
            if eb == 4 {
                for k in 0..4 {
                    for b in 0..=255u8 {
                        assert!(d.chunks(4).any(|e| e[k] == b), "f32 byte {k} value {b:#x}");
                    }
                }
                for special in cpu::SPECIAL32 {
                    assert!(seen.contains(special.to_le_bytes().as_slice()), "f32 special {special:#x}");
                }
            } else {
                assert_eq!(seen.len(), 1 << dtype.bits(), "{dtype}");
            }
            let c = Case { sign_pack: true, ..c };
            assert!(input(&c).chunks(eb).all(|e| e[eb - 1] & 0x80 == 0));
        }
    }

    #[test]
    fn overall_needs_one_available_and_no_failure() {
        let mk = |status| AdapterResult {
            name: String::new(),
            backend: String::new(),
            status,
            cases: 0,
            failures: vec![],
            matrix: vec![],
            paths: vec![],
            reason: None,
            seconds: 0.0,
        };
        assert!(!overall_ok(&[]));
        assert!(!overall_ok(&[mk(Status::Unavailable)]));
        assert!(overall_ok(&[mk(Status::Unavailable), mk(Status::Pass)]));
        assert!(!overall_ok(&[mk(Status::Pass), mk(Status::Fail)]));
    }
}
