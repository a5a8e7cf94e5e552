#!/bin/bash
# (Run in the twenty-first session as its call 1: ../../ab-twentyfirst/run39.sh, results call1-*.)
# Prepared for the next session (not run: the twentieth session's device time was spent). Times, each
# against fd1d630 / 87c62eb (the same shaders; codec_n) in the same call, each binary twice, interleaved:
#   GB16 (codec_x: GB16.patch, the F16 backward's grad with f86630c's branching conversions), F16
#   backward kernels;
#   F32R (codec_f: F32R.patch, the F32 fused backward keeps no array across its decode loop: masks in
#   one word, starts packed, both rotated a round at a time), F32 fused and plain backward;
# and the register counts of both (ps_x, ps_f: pipeline_stats built from each patched tree).
# Binaries: `cargo bench -p bitsparse-bench --bench codec --no-run` in each tree, strip the codec-*
# (docs/DEVICE.md); carry [".gl", ".devbin"].
R=/tmp/resN
. benches/results/device-call.sh
.devbin/ps_x --policy unchecked --filter decompress > $R/stats_x.txt 2>&1
.devbin/ps_f --policy unchecked --filter decompress > $R/stats_f.txt 2>&1
save_results
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward
F16=BITSPARSE_BENCH_DTYPES=f16
F32=BITSPARSE_BENCH_DTYPES=f32
bench_run x1 codec_x $F16; bench_run n1 codec_n $F16; bench_run x2 codec_x $F16; bench_run n2 codec_n $F16
bench_run f1 codec_f $F32; bench_run m1 codec_n $F32; bench_run f2 codec_f $F32; bench_run m2 codec_n $F32
