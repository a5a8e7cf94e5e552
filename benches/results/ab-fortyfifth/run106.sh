#!/bin/bash
# Forty-fifth session, for an H200 with little device time left (on another card it stops before its
# set-up): run104.sh's restage A/B first (its squares' forms 2-4 left out), then the kept code's training
# path with the anchor. The kept
# code's forward (codec_Q with the H200's form forced, as run104's f1) against
# experiments/thirtyeighth/fwd-restage-B.patch (codec_Z), interleaved f1A zA f1B zB; then t1 (codec_k,
# the training-path rows) and the Triton anchor. Binaries: ../ab-fortyfirst/build104.sh. Judge with
# `python3 benches/results/ab-twentysixth/compare.py DIR f1 z` and `python3 benches/results/floors.py
# DIR/t1.json --anchor DIR/triton.jsonl`. Call with timeout_s ≈ LIMIT + 150.
R=/tmp/res106
ONLY_GPU=H200
LIMIT=${LIMIT:-200}
. benches/results/device-call.sh
kernel_ab_env
K="BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=1,forward.SQUARE_NAN_FLAGS=1"
for p in A B; do
  bench_run "f1$p" codec_Q $FWD_ROWS "$K"
  bench_run "z$p" codec_Z $FWD_ROWS
done
bench_run t1 codec_k $TRAIN_ROWS
[ $(($(date +%s) - T0)) -le "$LIMIT" ] && triton_anchor 120
echo total $(($(date +%s) - T0))s
