#!/bin/bash
# Twenty-second session, call 2: burn-gpt on the H200 with 5f7fe2c's F32 kernels (F32R: the fused
# backward 32-40 % faster than when demos/burn_gpt/results/ was measured), the context-256 run of
# demos/burn_gpt/results/README.md with 20 measured steps instead of 10.
R=/tmp/res46
# (Since rewritten with device-call.sh's `burn_gpt_run`: burn-gpt gets the same arguments;
# its log, then $R/burn-gpt.log, is now $R/nvidia-h200-ctx256-pretrained.log.)
. benches/results/device-call.sh
burn_gpt_run nvidia-h200-ctx256-pretrained --d-model 768 --n-layer 12 --n-head 12 --context 256 \
  --batch 16 --arena-mb 512 --lr 5e-4 --pretrain 1500 --steps 20 --warmup 3 --compare-every 5
echo total $(($(date +%s) - T0))s
