//! The BitSparse MLP inside Burn's autodiff, on Burn's own wgpu device (lavapipe here), in one test binary
//! (`harness = false`, `tests/common/harness.rs` at the workspace root): a test whose adapter is missing is
//! reported as ignored (a failure under `CI=true`).
//!
//! Burn's wgpu runtime is initialised once per process, so every test shares one Burn device; each test
//! makes its own [`bitsparse_burn::BitSparse`] context (own arena). The tests run one at a time: the
//! host-synchronisation counts are process-wide.

#[path = "../../../tests/common/mod.rs"]
mod common;

mod devices;
mod mlp;
mod reference;

fn main() {
    // One at a time: shared device, process-wide counters, and lavapipe has 2 cores to give.
    std::env::set_var("RUST_TEST_THREADS", "1");
    common::harness::main(mlp::tests().into_iter().chain(devices::tests()).collect())
}
