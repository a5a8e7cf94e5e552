#!/bin/bash
# Twenty-third session, call 3 (call 2 ran it with the F16 default set before pre-training: NaN by step
# 100, see PERFORMANCE.md): burn-gpt on the H200 in F16 (`--dtype f16`: the model pre-trained in F32,
# then the four modes on a second device whose default type is F16; the whole model, and the
# BitSparse MLPs on their F16 fused kernels), the context-256 run of demos/burn_gpt/results/README.md
# (the twenty-second session's call 2 ran it in F32) with the same arguments otherwise.
R=/tmp/res54
. benches/results/device-call.sh
burn_gpt_run nvidia-h200-ctx256-pretrained-f16 --dtype f16 --d-model 768 --n-layer 12 --n-head 12 --context 256 \
  --batch 16 --arena-mb 512 --lr 5e-4 --pretrain 1500 --steps 20 --warmup 3 --compare-every 5
echo total $(($(date +%s) - T0))s
