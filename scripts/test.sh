#!/usr/bin/env bash
# THE test command (README): installs the software GPU drivers the backend tests need (lavapipe for
# Vulkan, llvmpipe for GL) when they are missing, then runs every test target in release mode (lavapipe
# runs the host side faster, and a release build of wgpu is not slower to build than a debug one here).
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh --test cli      # extra arguments go to `cargo test`
#   bash scripts/test.sh --test gpu -- arena::   # the GPU tests of one file (tests/gpu/arena.rs)
#
# The GPU test binaries (tests/gpu, cli/tests/cli, demos' train_ffn, benches' bench_smoke, tools'
# pipeline_stats) run on the harness of tests/common/harness.rs: a test whose adapter is missing is
# reported as `ignored` with the reason, and a `SKIPPED:` line says how many. CI=true is passed
# through: there such a test fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/packages.sh
bitsparse_setup

if [ $# -gt 0 ]; then
    exec cargo test --release --workspace "$@"
fi
# Every member of the workspace (docs/ARCHITECTURE.md): library unit tests, binaries' unit tests, each
# member's tests/*.rs and the examples (built, and their #[test]s run). Benchmarks are left to `cargo
# bench` (benches/tests/bench_smoke.rs covers them): a harness-less bench binary would run its whole
# sweep here. --no-fail-fast: one failing file must not hide the others' results.
status=0
cargo test --release --workspace --no-fail-fast --lib --bins --tests --examples || status=$?
cargo test --release --workspace --no-fail-fast --doc || status=$?
exit "$status"
