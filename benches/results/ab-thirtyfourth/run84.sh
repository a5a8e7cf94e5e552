#!/bin/bash
# Thirty-fourth session, call 2 (cut to what the session's last device time held; the full form, with
# full runs and the Triton anchor, is run85.sh): the forward's square in the gradient's form as code (codec_L: `relu_act_word`, shared by the fused and the
# plain forward) against the kept kernels (codec_k), interleaved, forward only; then, time permitting,
# the backward and the Triton anchor (the training path's share). Carry `.gl` and `.devbin`.
R=/tmp/res84
LIMIT=${LIMIT:-125}
. benches/results/device-call.sh
kernel_ab_env
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
for i in 1 2; do
  bench_run fa$i codec_k $FWD
  bench_run fL$i codec_L $FWD
done
bench_run b0 codec_k $BWD
if [ $(($(date +%s) - T0)) -le "$LIMIT" ]; then
  timeout 45 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
  save_results
fi
echo total $(($(date +%s) - T0))s
