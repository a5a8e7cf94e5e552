//! The headless benchmark harness behind `cargo bench` and `bitsparse bench`.
//!
//! [`run`] opens the chosen adapter and sweeps dtype × sign packing × density × size × op; each op's
//! GPU time comes from timestamp queries (median of the timed repetitions after warm-up and a clock
//! spin-up), and each batch also times a WGSL copy shader interleaved with the kernels, so every row can
//! say which fraction of the copy bandwidth it reaches (`copy_fraction`). The result is the JSON of
//! `docs/CONVENTIONS.md` ([`BenchReport`]); [`write_outputs`] adds a Markdown table and two SVG plots.
//!
//! Why a library and not only the `cargo bench` target (`benches/codec.rs`): the CLI's `bitsparse bench`
//! runs the same sweep, and a test (`benches/tests/bench_smoke.rs`) runs it on lavapipe.

mod case;
pub mod config;
mod copy;
pub mod data;
mod fused;
mod gpu;
pub mod op;
mod plot;
pub mod report;
pub mod roofline;
mod runner;
pub mod timer;

pub use config::{codec_config_from_env, parse_size, BenchConfig, HEADLINE_ELEMENTS};
pub use op::Op;
pub use report::{adapter_slug, default_out_dir, write_outputs, AdapterReport, BenchReport, Row};
pub use runner::{adapter_report, is_cpu_adapter, run, run_on};
