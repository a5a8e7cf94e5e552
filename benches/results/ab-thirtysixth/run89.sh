#!/bin/bash
# Thirty-sixth session, last call (about 260 device seconds left): on an H200 only, the kept code's
# training-path rows (BF16 fused and plain forward and backward, ρ = 0.5 / 0.176 / 0.05) and the Triton
# anchor in the same call — issue 15's training-path floor with b3614a5's square, never timed there. On
# another card it stops before its set-up. Binary: codec_h (847bee5), as in run87.sh.
R=/tmp/res89
ONLY_GPU=H200
LIMIT=${LIMIT:-100}
. benches/results/device-call.sh
kernel_ab_env
bench_run h0 codec_h $TRAIN_ROWS
triton_anchor 100
echo total $(($(date +%s) - T0))s
