#!/bin/bash
# Prepared in the fortieth session, for the next H200 call (on another card it stops before its
# set-up): the kept code of 166c0d3 on an H200, where the host picks the square's NaN-flags form
# (SQUARE_NAN_FLAGS=1), never timed there as this binary (call 3 timed the same build as codec_R):
# every floor's rows, the Triton anchor, e4m3, then the training-path rows with the other form forced
# (x) after one of the default (t); then the backward rows of codec_W
# (experiments/fortieth/bwd-write-a-mode.patch on 315ab42: the fused backward's `a` output fixed per
# pipeline, WRITE_A, as sign packing and the activation are; GPU suite 147 passed on lavapipe, a mutant
# that never writes `a` fails 9 fused tests) against codec_k, interleaved, with the driver's counts.
# Binaries: codec_k as run101.sh says, codec_W the same build with the patch, shaders_W its shaders/.
# Judge with `python3 benches/results/floors.py s1.json --anchor triton.jsonl` (and e1.json, t*.json);
# `python3 benches/results/ab-twentysixth/compare.py DIR t x`, `… DIR b W`. Call with timeout_s ≈
# LIMIT + 70.
R=/tmp/res102
ONLY_GPU=H200
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
kernel_ab_env
F=decompress.SIGN_MODE=0,decompress.ACT_MODE=1
for w in 0 1; do
  .devbin/ps_x --policy unchecked --shaders .devbin/shaders_k --filter "decompress.wgsl:decompress [SUBGROUP,ARENA,FUSED_BWD]" --constants "$F" >> "$R/stats_bwd_k.txt" 2>&1
  .devbin/ps_x --policy unchecked --shaders .devbin/shaders_W --filter "decompress.wgsl:decompress [SUBGROUP,ARENA,FUSED_BWD]" --constants "$F,decompress.WRITE_A=$w" >> "$R/stats_bwd_W.txt" 2>&1
done
bench_run s1 codec_k $FLOOR_ROWS
triton_anchor 150
bench_run e1 codec_k $E4M3_ROWS
X="BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=0,forward.SQUARE_NAN_FLAGS=0"
bench_run t1 codec_k $TRAIN_ROWS
bench_run x1 codec_k $TRAIN_ROWS $X
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
bench_pairs b codec_k W codec_W $BWD
echo total $(($(date +%s) - T0))s
