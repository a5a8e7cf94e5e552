//! What a benchmark run sweeps, and the defaults that depend on the adapter.
//!
//! Every sweep axis is optional: `None` means "the default for this adapter", so the same config gives a
//! long sweep on a real GPU and one that ends in minutes on a CPU adapter (docs/CONVENTIONS.md: sizes ≤ 16M
//! elements, ≥ 5 repetitions there). Environment variables (`BITSPARSE_BENCH_*`) fill the fields a
//! program left empty, so `cargo bench` and `bitsparse bench` can be steered the same way.

use bitsparse::error::{Error, Result};
use bitsparse::format::DType;
use bitsparse::host::context::AdapterChoice;
use bitsparse::TileOrder;

use super::op::Op;

/// The headline shape of issue 4: 65536 tokens × 3072 hidden units.
pub const HEADLINE_ELEMENTS: u64 = 65536 * 3072;
/// Nominal densities of the sweep (issue 4).
pub const DENSITIES: [f64; 6] = [0.5, 0.3, 0.176, 0.1, 0.05, 0.01];
/// Largest size docs/CONVENTIONS.md allows in the default sweep of a CPU adapter. The default stops at 4M:
/// with every op (nine cases per BF16 batch) 16M took 5.7 minutes on a loaded 2-core lavapipe machine.
pub const CPU_MAX_ELEMENTS: u64 = 16 << 20;

/// A benchmark run's settings.
#[derive(Clone, Debug, Default)]
pub struct BenchConfig {
    /// Adapter to open (environment applied by [`bitsparse::host::context::GpuContext::new`]).
    pub adapter: AdapterChoice,
    /// Tiny sweep for smoke tests (a few seconds on lavapipe).
    pub quick: bool,
    /// Element types; default bf16 and e4m3.
    pub dtypes: Option<Vec<DType>>,
    /// Sign packing settings; default both.
    pub sign_pack: Option<Vec<bool>>,
    /// Tile orders of the compress and fused-forward rows; default both.
    pub tile_orders: Option<Vec<TileOrder>>,
    /// Nominal densities; default [`DENSITIES`].
    pub densities: Option<Vec<f64>>,
    /// Tensor sizes in elements; default 1M … 201M (≤ 16M on CPU adapters).
    pub sizes: Option<Vec<u64>>,
    /// Operations; default all. Ops without an implementation yet produce no rows.
    pub ops: Option<Vec<Op>>,
    /// Timed repetitions per op and batch; default 25 (5 on CPU adapters).
    pub reps: Option<u32>,
    /// Untimed repetitions before timing; default 3 (1 on CPU adapters).
    pub warmup: Option<u32>,
    /// Seconds of copies run right before each batch to bring the GPU clocks up; default 0.3 (0 on
    /// CPU adapters, which have no clocks to raise).
    pub spin_up_s: Option<f64>,
    /// Seed of the synthetic data.
    pub seed: u64,
    /// Check every codec op's output once, after timing (round trip and value-word count).
    pub verify: bool,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// The config with every default filled in for one adapter.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// Element types.
    pub dtypes: Vec<DType>,
    /// Sign packing settings.
    pub sign_pack: Vec<bool>,
    /// Tile orders of the compress and fused-forward rows.
    pub tile_orders: Vec<TileOrder>,
    /// Nominal densities.
    pub densities: Vec<f64>,
    /// Sizes in elements, ascending.
    pub sizes: Vec<u64>,
    /// Operations.
    pub ops: Vec<Op>,
    /// Timed repetitions.
    pub reps: u32,
    /// Warm-up repetitions.
    pub warmup: u32,
    /// Spin-up seconds.
    pub spin_up_s: f64,
}

impl BenchConfig {
    /// The full default sweep with verification and a progress bar.
    pub fn new() -> BenchConfig {
        BenchConfig { verify: true, progress: true, seed: 1, ..Default::default() }
    }

    /// The tiny sweep used by smoke tests.
    pub fn quick() -> BenchConfig {
        BenchConfig { quick: true, ..BenchConfig::new() }
    }

    /// Fills empty fields from `BITSPARSE_BENCH_QUICK` (1/true), `BITSPARSE_BENCH_SIZES`,
    /// `BITSPARSE_BENCH_DENSITIES`, `BITSPARSE_BENCH_DTYPES`, `BITSPARSE_BENCH_OPS` (comma lists),
    /// `BITSPARSE_BENCH_SIGN_PACK` (`on`, `off` or `both`), `BITSPARSE_BENCH_TILE_ORDER` (`ordered`, `unordered` or `both`), `BITSPARSE_BENCH_REPS` and `BITSPARSE_BENCH_NO_VERIFY`.
    pub fn with_env(mut self) -> Result<BenchConfig> {
        let var = |k: &str| std::env::var(k).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        if let Some(q) = var("BITSPARSE_BENCH_QUICK") {
            self.quick |= is_true(&q);
        }
        if self.sizes.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_SIZES") {
                self.sizes = Some(parse_list(&s, "BITSPARSE_BENCH_SIZES", parse_size)?);
            }
        }
        if self.densities.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_DENSITIES") {
                self.densities = Some(parse_list(&s, "BITSPARSE_BENCH_DENSITIES", |x| {
                    x.parse::<f64>().ok().filter(|d| (0.0..=1.0).contains(d))
                })?);
            }
        }
        if self.dtypes.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_DTYPES") {
                self.dtypes = Some(parse_list(&s, "BITSPARSE_BENCH_DTYPES", DType::from_name)?);
            }
        }
        if self.ops.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_OPS") {
                self.ops = Some(parse_list(&s, "BITSPARSE_BENCH_OPS", Op::from_name)?);
            }
        }
        if self.sign_pack.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_SIGN_PACK") {
                self.sign_pack = Some(match s.to_ascii_lowercase().as_str() {
                    "on" | "1" | "true" => vec![true],
                    "off" | "0" | "false" => vec![false],
                    "both" => vec![false, true],
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "BITSPARSE_BENCH_SIGN_PACK=`{s}` (expected on, off or both)"
                        )))
                    }
                });
            }
        }
        if self.tile_orders.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_TILE_ORDER") {
                self.tile_orders = Some(match s.to_ascii_lowercase().as_str() {
                    "both" => vec![TileOrder::Ordered, TileOrder::Unordered],
                    one => vec![TileOrder::parse(one).map_err(|_| {
                        Error::InvalidArgument(format!(
                            "BITSPARSE_BENCH_TILE_ORDER=`{s}` (expected ordered, unordered or both)"
                        ))
                    })?],
                });
            }
        }
        if self.reps.is_none() {
            if let Some(s) = var("BITSPARSE_BENCH_REPS") {
                self.reps = Some(
                    s.parse()
                        .ok()
                        .filter(|&r| r > 0)
                        .ok_or_else(|| Error::InvalidArgument(format!("BITSPARSE_BENCH_REPS=`{s}`")))?,
                );
            }
        }
        if var("BITSPARSE_BENCH_NO_VERIFY").is_some_and(|v| is_true(&v)) {
            self.verify = false;
        }
        Ok(self)
    }

    /// Fills in the defaults for an adapter (`cpu`: a CPU adapter such as lavapipe).
    pub fn resolve(&self, cpu: bool) -> Result<Resolved> {
        let (sizes, reps, warmup, spin) = match (self.quick, cpu) {
            (true, _) => (vec![1 << 16, 1 << 18], 3, 1, 0.0),
            (false, true) => (vec![1 << 20, 4 << 20], 5, 1, 0.0),
            (false, false) => (vec![1 << 20, 4 << 20, 16 << 20, 64 << 20, HEADLINE_ELEMENTS], 25, 3, 0.3),
        };
        let mut sizes = self.sizes.clone().unwrap_or(sizes);
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.contains(&0) {
            return Err(Error::InvalidArgument("benchmark sizes must be positive".into()));
        }
        let densities =
            self.densities
                .clone()
                .unwrap_or_else(|| if self.quick { vec![0.5, 0.176, 0.01] } else { DENSITIES.to_vec() });
        let r = Resolved {
            dtypes: self.dtypes.clone().unwrap_or_else(|| vec![DType::Bf16, DType::E4m3]),
            sign_pack: self.sign_pack.clone().unwrap_or_else(|| vec![false, true]),
            tile_orders: self.tile_orders.clone().unwrap_or_else(|| vec![TileOrder::Ordered, TileOrder::Unordered]),
            densities,
            sizes,
            ops: self.ops.clone().unwrap_or_else(|| Op::ALL.to_vec()),
            reps: self.reps.unwrap_or(reps).max(1),
            warmup: self.warmup.unwrap_or(warmup),
            spin_up_s: self.spin_up_s.unwrap_or(spin).max(0.0),
        };
        if r.dtypes.is_empty() || r.sign_pack.is_empty() || r.densities.is_empty() || r.ops.is_empty() {
            return Err(Error::InvalidArgument("a benchmark sweep axis is empty".into()));
        }
        Ok(r)
    }
}

fn is_true(s: &str) -> bool {
    matches!(s.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

/// Parses `1M`, `16m`, `4k`, `201326592` or `65536x3072`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    if let Some((a, b)) = s.split_once('x') {
        return parse_size(a)?.checked_mul(parse_size(b)?);
    }
    let (num, mul) = match s.strip_suffix('m') {
        Some(n) => (n, 1u64 << 20),
        None => match s.strip_suffix('k') {
            Some(n) => (n, 1 << 10),
            None => (s.as_str(), 1),
        },
    };
    num.parse::<u64>().ok()?.checked_mul(mul).filter(|&v| v > 0)
}

fn parse_list<T>(s: &str, what: &str, f: impl Fn(&str) -> Option<T>) -> Result<Vec<T>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| f(x).ok_or_else(|| Error::InvalidArgument(format!("{what}: cannot parse `{x}`"))))
        .collect()
}

/// The codec's A/B knobs from the environment, for the bench, the CLI and the device runs (the library
/// itself reads no environment): `BITSPARSE_STAGING` (`auto`, `words`, `halves`, `direct`),
/// `BITSPARSE_KERNEL_CONSTANTS` (e.g. `compress.LOOKBACK_PER_LANE=4`) and `BITSPARSE_CHECKED_SHADERS`
/// (`1`/`true`: wgpu's runtime checks back on, a debugging aid).
pub fn codec_config_from_env() -> Result<bitsparse::CodecConfig> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    Ok(bitsparse::CodecConfig {
        staging: var("BITSPARSE_STAGING").map(|v| bitsparse::Staging::parse(&v)).transpose()?,
        kernel_constants: var("BITSPARSE_KERNEL_CONSTANTS"),
        checked_shaders: var("BITSPARSE_CHECKED_SHADERS").is_some_and(|v| is_true(&v)),
        ..bitsparse::CodecConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("65536x3072"), Some(HEADLINE_ELEMENTS));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("abc"), None);
    }

    #[test]
    fn cpu_default_is_reduced() {
        let r = BenchConfig::new().resolve(true).unwrap();
        assert!(r.sizes.iter().all(|&s| s <= CPU_MAX_ELEMENTS));
        assert!(r.reps >= 5);
        let g = BenchConfig::new().resolve(false).unwrap();
        assert!(g.sizes.iter().any(|&s| s >= 200_000_000));
        assert!(g.reps >= 20);
    }
}
