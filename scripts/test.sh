#!/usr/bin/env bash
# THE test command (README): installs the software GPU drivers the backend tests need (lavapipe for
# Vulkan, llvmpipe for GL) when they are missing, then runs every test target in release mode (lavapipe
# runs the host side faster, and a release build of wgpu is not slower to build than a debug one here).
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh --test cli      # extra arguments go to `cargo test`
#
# CI=true is passed through: there a test that needs a backend fails instead of skipping.
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
