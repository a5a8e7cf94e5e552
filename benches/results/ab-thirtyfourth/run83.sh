#!/bin/bash
# Thirty-fourth session, call 2: the forward's square in the gradient's form (compress LEAN bit 2), which
# call 1 (an H100) measured 5-8 % faster in the fused forward where the thirty-third session's H200 call
# saw it, together with STATUS_EARLY, 5 % slower: the driver's registers of the two together (never
# recorded), an interleaved A/B, and full runs of both with the Triton anchor (the training path's share).
# Binaries as run82.sh (codec_k, ps_m in .devbin; carry `.gl` and `.devbin`), and codec_L: this session's
# tree with that square as code in `relu_act_word`, which the plain forward (plain_act.wgsl) shares, so
# the plain forward is timed with it too (the knob reached the compress only).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 60.
R=/tmp/res83
LIMIT=${LIMIT:-280}
. benches/results/device-call.sh
kernel_ab_env
FIX=compress.ACT_MODE=1,compress.SIGN_MODE=0,compress.ALL_FULL=1
for v in a: d:,compress.LEAN=4 cd:,compress.LEAN=4,compress.STATUS_EARLY=1; do
  .devbin/ps_m --policy unchecked --filter "compress [SUBGROUP,ARENA,FUSED_FWD,STAGE16,UNORDERED]" --constants "$FIX${v#*:}" > "$R/stats_${v%%:*}.txt" 2>&1
done
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
bench_run a0 codec_k $O
bench_run L0 codec_L $O
timeout 120 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
for i in 1 2; do
  bench_run fa$i codec_k $FWD
  bench_run fL$i codec_L $FWD
done
echo total $(($(date +%s) - T0))s
