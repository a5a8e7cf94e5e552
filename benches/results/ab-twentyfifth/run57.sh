#!/bin/bash
# Prepared in the twenty-fourth session, not yet run (no device was lent that session): burn-gpt on the
# H200 with `--dtype f16` in mixed precision (F32 master weights and AdamW moments, F16 compute, dynamic
# loss scaling; 145511c), the context-256 run of demos/burn_gpt/results/README.md with the twenty-third
# session's arguments (its pure-F16 run, `ab-twentythird/run54.sh`, went NaN from the second step).
#
# Build first (here): `cargo build --release -p burn-gpt --bin burn-gpt`, strip it and `xz -T2 -6` it to
# `.devbin/burn-gpt.xz` (95 MB stripped is past the 64 MiB a call carries); fetch the loader debs into
# `.gl/` (docs/DEVICE.md); run through the device tool with `carry: [".gl", ".devbin"]`. What to read in
# the JSON: every mode's losses finite and close to the F32 run's, `measurements.*.skipped_steps` (0 or
# a few at the start), the step medians (`step_ms_*`: F16 BitSparse against F16 dense, and against the
# twenty-second session's F32 figures, 151.2 / 151.7 ms), and the bytes per token.
R=/tmp/res57
. benches/results/device-call.sh
burn_gpt_run nvidia-h200-ctx256-pretrained-mixed-f16 --dtype f16 --d-model 768 --n-layer 12 --n-head 12 --context 256 \
  --batch 16 --arena-mb 512 --lr 5e-4 --pretrain 1500 --steps 20 --warmup 3 --compare-every 5
echo total $(($(date +%s) - T0))s
