#!/bin/bash
# Fortieth session, call 4 (an H100): call 3's R against the kept kernels on the other card. On the
# H200 (call 3) R, the forward's square as before b3614a5, was -5.6 to -7.0 % in the fused forward
# and -3.8 to -5.1 % in the plain forward; b3614a5 itself was -6 to -8 % in the fused forward on an
# H100 (thirty-fourth session), before 8f7bfd3 moved its rounding into bf16_pair. Binaries as
# run99.sh says. Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res100
LIMIT=${LIMIT:-150}
. benches/results/device-call.sh
kernel_ab_env
for v in h R; do
  compress_stats "$v" --shaders ".devbin/shaders_$v"
done
save_results
bench_pairs h codec_h R codec_R $FWD_ROWS
bench_run h3 codec_h $FWD_ROWS
bench_run R3 codec_R $FWD_ROWS
echo total $(($(date +%s) - T0))s
