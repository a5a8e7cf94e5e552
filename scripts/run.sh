#!/usr/bin/env bash
# THE main-job command (README): installs the software GPU drivers when missing, then runs the
# quickstart demo (demos/quickstart.rs) on the default adapter: a synthetic ReLU² tensor at ~18% density
# is compressed and decompressed on the GPU, checked bit-exact, and the ratio, the entropy bound and the
# share of it reached, and the throughput are printed. Extra arguments go to the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/packages.sh
bitsparse_setup
exec cargo run --release --example quickstart -- "$@"
