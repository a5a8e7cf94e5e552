#!/bin/bash
# Thirty-fourth session, call 1: run81.sh's questions (the thirty-third session's prepared call, which got
# no machine) plus the fused backward built for whether it writes `a` (WRITE_A_MODE, this session).
# Binaries (carry `.gl` and `.devbin`):
#   codec_k — ae87f02 + experiments/thirtythird/knobs-next.patch (built in the thirty-third session);
#   codec_m — the same patch on this session's tree with `Modes::write_a` (the fused backward's pipelines
#             built with and without the dense `a`, WRITE_A_MODE 0 / 1); every knob at its default, its
#             kernels are codec_k's but for that mode;
#   ps_m — pipeline_stats with the knobs and WRITE_A_MODE; gpu_t — the GPU tests of this session's tree (fused, arena, pooled on the
#          H200: the special values through the fused kernels, CI runs them on lavapipe only).
#   a = codec_k, all knobs 0 (the kept kernels); m = codec_m (the write_a mode); c = STATUS_EARLY=1,
#   d = compress LEAN=4, e = decompress LEAN=2, g = decompress DEPOSIT8=1 (e4m3, both sign modes).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res82
LIMIT=${LIMIT:-490}
. benches/results/device-call.sh
kernel_ab_env
FIX=compress.ACT_MODE=1,compress.SIGN_MODE=0,compress.ALL_FULL=1,decompress.ACT_MODE=1,decompress.SIGN_MODE=0
for v in a: c:,compress.STATUS_EARLY=1 d:,compress.LEAN=4 e:,decompress.LEAN=2 w0:,decompress.WRITE_A_MODE=0 w1:,decompress.WRITE_A_MODE=1; do
  .devbin/ps_m --policy unchecked --filter FUSED --constants "$FIX${v#*:}" > "$R/stats_${v%%:*}.txt" 2>&1
done
for v in 0 1; do
  .devbin/ps_m --policy unchecked --filter "decompress [BITS8,SUBGROUP]" --constants decompress.SIGN_MODE=0,decompress.DEPOSIT8=$v > "$R/stats_g$v.txt" 2>&1
done
for f in fused arena pooled; do
  XDG_RUNTIME_DIR=/tmp timeout 120 .devbin/gpu_t "$f" > "$R/gputests_$f.txt" 2>&1
  echo "gpu tests $f rc=$? $(grep 'test result' "$R/gputests_$f.txt")"
done
save_results
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress"
bench_run a0 codec_k $O
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
for i in 1 2; do
  bench_run ba$i codec_k $BWD
  bench_run bm$i codec_m $BWD
  bench_run fc$i codec_k $FWD BITSPARSE_KERNEL_CONSTANTS=compress.STATUS_EARLY=1
  bench_run fd$i codec_k $FWD BITSPARSE_KERNEL_CONSTANTS=compress.LEAN=4
  bench_run fa$i codec_k $FWD
  bench_run ea$i codec_k $E
  bench_run eg$i codec_k $E BITSPARSE_KERNEL_CONSTANTS=decompress.DEPOSIT8=1
  bench_run be$i codec_k $BWD BITSPARSE_KERNEL_CONSTANTS=decompress.LEAN=2
done
echo total $(($(date +%s) - T0))s
