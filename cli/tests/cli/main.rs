//! The `bitsparse` binary from the outside, in one test binary (`harness = false`,
//! `tests/common/harness.rs` at the workspace root): each file of tests once linked on its own. A test
//! that needs an adapter the machine lacks is reported as ignored (a failure under `CI=true`). Tests are
//! named after their module (`cli_io::fifo_input_is_read_once`): `cargo test --test cli cli_io::` runs
//! one file.

#[path = "../common/mod.rs"]
mod common;

/// The fuzzing inputs shared with `files/tests/fuzz_parsers.rs`.
#[path = "../../../files/tests/mutants/mod.rs"]
mod mutants;

mod cli;
mod cli_analyze;
mod cli_bench;
mod cli_fuzz;
mod cli_io;
mod cli_selftest;

fn main() {
    let tests = [
        cli::tests(),
        cli_analyze::tests(),
        cli_bench::tests(),
        cli_fuzz::tests(),
        cli_io::tests(),
        cli_selftest::tests(),
    ];
    common::harness::main(tests.into_iter().flatten().collect())
}
