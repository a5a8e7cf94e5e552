#!/bin/bash
# Twenty-second session, call 4: burn-gpt on the H200 with 5f7fe2c's F32 kernels (F32R: the fused
# backward 32-40 % faster than when demos/burn_gpt/results/ was measured), the context-1024 run of
# demos/burn_gpt/results/README.md with 16 measured steps instead of 8.
R=/tmp/res48
. benches/results/device-call.sh
xz -dc .devbin/burn-gpt.xz > /tmp/burn-gpt && chmod +x /tmp/burn-gpt
t0=$(date +%s)
/tmp/burn-gpt --d-model 768 --n-layer 12 --n-head 12 --context 1024 --batch 4 --arena-mb 512 --lr 5e-4 \
  --pretrain 800 --steps 16 --warmup 3 --compare-every 4 --json --out $R/nvidia-h200-ctx1024-pretrained.json \
  --plot $R/nvidia-h200-ctx1024-pretrained.svg > $R/burn-gpt.log 2>&1
echo "burn-gpt rc=$? $(($(date +%s) - t0))s"
save_results
echo total $(($(date +%s) - T0))s
