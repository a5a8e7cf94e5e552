#!/bin/bash
# Forty-first session, on whichever card a call gets (an H100 came for run104.sh's H200 and was still
# warm): run104.sh's backward A/B alone — codec_W (experiments/fortieth/bwd-write-a-mode.patch, the fused
# backward's `a` output a pipeline constant, WRITE_A) against codec_k, interleaved, with the driver's
# counts. `python3 benches/results/ab-twentysixth/compare.py DIR b W`. Call with timeout_s ≈ LIMIT + 60.
R=/tmp/res105
LIMIT=${LIMIT:-150}
. benches/results/device-call.sh
kernel_ab_env
F=decompress.SIGN_MODE=0,decompress.ACT_MODE=1
for w in 0 1; do
  .devbin/ps_x --policy unchecked --shaders .devbin/shaders_k --filter "decompress.wgsl:decompress [SUBGROUP,ARENA,FUSED_BWD]" --constants "$F" >> "$R/stats_bwd_k.txt" 2>&1
  .devbin/ps_x --policy unchecked --shaders .devbin/shaders_W --filter "decompress.wgsl:decompress [SUBGROUP,ARENA,FUSED_BWD]" --constants "$F,decompress.WRITE_A=$w" >> "$R/stats_bwd_W.txt" 2>&1
done
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
bench_pairs b codec_k W codec_W $BWD
bench_run b3 codec_k $BWD
bench_run W3 codec_W $BWD
echo total $(($(date +%s) - T0))s
