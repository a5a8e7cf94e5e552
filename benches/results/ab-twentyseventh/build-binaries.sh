#!/bin/bash
# Builds (here, not on the device) what `run64.sh` carries in `.devbin/`: codec_h and ps_h (the bench and
# pipeline_stats of the checked-out commit; both version-2 decoders are in it, chosen per run by
# BITSPARSE_V2_DECODER) and burntest.xz (Burn's MLP-block test binary). Run from the repository root.
set -eu
mkdir -p .devbin .gl
grep -qx '/.devbin/' .git/info/exclude || printf '/.gl/\n/.devbin/\n' >> .git/info/exclude
bin=$(cargo bench -p bitsparse-bench --bench codec --no-run 2>&1 | sed -n 's/.*Executable codec.rs (\(.*\))/\1/p')
strip -o .devbin/codec_h "$bin"
cargo build --release -p bitsparse-tools --bin pipeline_stats
strip -o .devbin/ps_h target/release/pipeline_stats
bin=$(cargo test --release -p bitsparse-burn --no-run 2>&1 | sed -n 's/.*Executable tests\/burn\/main.rs (\(.*\))/\1/p')
strip -o /tmp/burntest-stripped "$bin"
xz -T2 -6 -c /tmp/burntest-stripped > .devbin/burntest.xz
ls -la .devbin
du -sh .devbin .gl
