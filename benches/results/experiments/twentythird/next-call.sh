#!/bin/bash
# Prepared in the twenty-third session, not yet run (no device time was left): SGRANK,
# `v2-decoder-subgroup-ranks.patch` (applies to f667631), against f667631, s c s c for BF16 at six
# densities, e4m3 sign-packed at four, and both decoders' register counts.
#
# Build first (here): at f667631 `cargo bench -p bitsparse-bench --bench codec --no-run`, strip
# `target/release/deps/codec-*` into `.devbin/codec_c`, and `cargo build --release -p bitsparse-tools
# --bin pipeline_stats`, stripped into `.devbin/ps_c`; then `git apply` the patch and build both again
# into `.devbin/codec_s` / `.devbin/ps_s`. Run through the device tool with `carry: [".gl", ".devbin"]`
# (loader debs in `.gl/`, docs/DEVICE.md).
#
# SGRANK: the version-2 decoder's last scan (each mask word's rank) written without the scan's second
# barrier and without the barrier after the ranks' store: every word stores its rank within its
# subgroup, every subgroup its total, one barrier; a reader adds the totals of the subgroups before its
# word (4 broadcast loads a round on the H200). Two barriers fewer on every tile's chain (mask tiles
# too), four shared loads more a round. The version-2 and golden-file GPU tests pass with it on lavapipe
# (subgroups of 8: 16 totals); counting one subgroup too few fails 10 of the 16 version-2 tests.
R=/tmp/res56
. benches/results/device-call.sh
.devbin/ps_c --policy unchecked --filter decompress_v2 > $R/stats_c.txt 2>&1
.devbin/ps_s --policy unchecked --filter decompress_v2 > $R/stats_s.txt 2>&1
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
bench_pairs s codec_s c codec_c BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run sE codec_s BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
echo total $(($(date +%s) - T0))s
