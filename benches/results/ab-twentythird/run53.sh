#!/bin/bash
# Twenty-third session, call 2 (burn-gpt of 1cb0724's `--dtype f16`, the device default set to F16
# before pre-training; the losses went NaN by pre-training step 100): burn-gpt on the H200 in F16 (`--dtype f16`: the whole model, and the
# BitSparse MLPs on their F16 fused kernels), the context-256 run of demos/burn_gpt/results/README.md
# (the twenty-second session's call 2 ran it in F32) with the same arguments otherwise.
R=/tmp/res53
. benches/results/device-call.sh
burn_gpt_run nvidia-h200-ctx256-pretrained-f16 --dtype f16 --d-model 768 --n-layer 12 --n-head 12 --context 256 \
  --batch 16 --arena-mb 512 --lr 5e-4 --pretrain 1500 --steps 20 --warmup 3 --compare-every 5
echo total $(($(date +%s) - T0))s
