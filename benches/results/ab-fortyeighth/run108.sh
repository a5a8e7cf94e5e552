#!/bin/bash
# Forty-eighth session: one call for whatever card comes. On an H200, ../ab-fortyfirst/run104.sh (its
# A/Bs, the training path with the anchor; LIMIT passes through; carry [".gl", ".devbin"]). Elsewhere,
# whether the release profile's opt-level 0 for Burn's CPU backend, the turso crates and three unused
# cubek crates (a1cba25) changes the trainer: burn-gpt built before it (o, .devbin48/burn-gpt-o.xz) and
# after it (n, burn-gpt-n.xz), both stripped, alternated o n o n, each a fresh process and a fresh cubecl
# environment (so each autotunes and writes its cache through turso), 12 layers at d = 768, context 256,
# batch 16, no pre-training, 3 warm-up and 10 measured steps in all four modes. Compare `step_ms_*` and
# each process's wall time (its log's last line). Carry [".gl", ".devbin48"]; timeout_s ≈ LIMIT + 150.
ON_H200=benches/results/ab-fortyfirst/run104.sh
R=/tmp/res108
LIMIT=${LIMIT:-300}
. benches/results/device-call.sh
nvidia-smi --query-gpu=name --format=csv,noheader > "$R/gpu.txt" 2>&1
for b in o n; do xz -dc ".devbin48/burn-gpt-$b.xz" > "/tmp/burn-gpt-$b" && chmod +x "/tmp/burn-gpt-$b"; done
for run in o1 n1 o2 n2; do
  [ $(($(date +%s) - T0)) -le "$LIMIT" ] || { echo "$run skipped"; continue; }
  b=${run:0:1}
  t0=$(date +%s%N)
  CUBECL_ENVIRONMENT="env-$run" timeout 200 "/tmp/burn-gpt-$b" --d-model 768 --n-layer 12 --n-head 12 \
    --context 256 --batch 16 --arena-mb 512 --pretrain 0 --steps 10 --warmup 3 \
    --json --out "$R/$run.json" > "$R/$run.log" 2>&1
  rc=$?
  echo "wall $(( ($(date +%s%N) - t0) / 1000000 )) ms rc=$rc" >> "$R/$run.log"
  echo "$run rc=$rc $(tail -1 "$R/$run.log")"
  save_results
done
echo total $(($(date +%s) - T0))s
