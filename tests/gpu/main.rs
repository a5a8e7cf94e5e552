//! The core's GPU tests in one binary (`harness = false`, `tests/common/harness.rs`): a test whose
//! adapter is missing is reported as ignored, with the reason (a failure under `CI=true`). One binary
//! instead of one per file: each linked wgpu on its own. A test is named after its module
//! (`arena::arena_overflow_at_reservation`), so `cargo test --test gpu arena::` runs one file's tests.
//!
//! The host-sync counts are per thread (`bitsparse::host::sync::thread_host_syncs`): tests running in
//! parallel in this process cannot move each other's counts, and the library records on the caller's
//! thread (`no_host_sync::no_host_sync_core_spawns_no_threads`).

#[path = "../common/mod.rs"]
mod common;

mod arena;
mod chunked;
mod embedding;
mod errors;
mod f32_codec;
mod fp8_storage;
mod fused_dtypes;
mod gl_backend;
mod golden_v1;
mod golden_v2;
mod gpu_codec;
mod multi_device;
mod no_host_sync;
mod pooled;
mod unordered;
mod v2_compress;
mod v2_decode;

fn main() {
    let tests = [
        arena::tests(),
        chunked::tests(),
        embedding::tests(),
        errors::tests(),
        f32_codec::tests(),
        fp8_storage::tests(),
        fused_dtypes::tests(),
        gl_backend::tests(),
        golden_v1::tests(),
        golden_v2::tests(),
        gpu_codec::tests(),
        multi_device::tests(),
        no_host_sync::tests(),
        pooled::tests(),
        unordered::tests(),
        v2_compress::tests(),
        v2_decode::tests(),
    ];
    common::harness::main(tests.into_iter().flatten().collect())
}
