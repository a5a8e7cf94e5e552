#!/bin/bash
# Twenty-second session, call 4: burn-gpt on the H200 with 5f7fe2c's F32 kernels (F32R: the fused
# backward 32-40 % faster than when demos/burn_gpt/results/ was measured), the context-1024 run of
# demos/burn_gpt/results/README.md with 16 measured steps instead of 8.
R=/tmp/res48
# (Since rewritten with device-call.sh's `burn_gpt_run`: burn-gpt gets the same arguments;
# its log, then $R/burn-gpt.log, is now $R/nvidia-h200-ctx1024-pretrained.log.)
. benches/results/device-call.sh
burn_gpt_run nvidia-h200-ctx1024-pretrained --d-model 768 --n-layer 12 --n-head 12 --context 1024 \
  --batch 4 --arena-mb 512 --lr 5e-4 --pretrain 800 --steps 16 --warmup 3 --compare-every 4
echo total $(($(date +%s) - T0))s
