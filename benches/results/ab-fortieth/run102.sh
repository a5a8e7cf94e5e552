#!/bin/bash
# Prepared in the fortieth session, for the next H200 call (on another card it stops before its
# set-up): the kept code of 166c0d3 on an H200, where the host picks the square's NaN-flags form
# (SQUARE_NAN_FLAGS=1), never timed there as this binary (call 3 timed the same build as codec_R):
# every floor's rows, the Triton anchor, e4m3, then the training-path rows with the other form forced
# (x) between two of the default (k), interleaved. Binary: codec_k as run101.sh says. Judge with
# `python3 benches/results/floors.py s1.json --anchor triton.jsonl` (and e1.json, t*.json);
# `python3 benches/results/ab-twentysixth/compare.py DIR t x`. Call with timeout_s ≈ LIMIT + 70.
R=/tmp/res102
ONLY_GPU=H200
LIMIT=${LIMIT:-330}
. benches/results/device-call.sh
kernel_ab_env
bench_run s1 codec_k $FLOOR_ROWS
triton_anchor 150
bench_run e1 codec_k $E4M3_ROWS
X="BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=0,forward.SQUARE_NAN_FLAGS=0"
bench_run t1 codec_k $TRAIN_ROWS
bench_run x1 codec_k $TRAIN_ROWS $X
bench_run t2 codec_k $TRAIN_ROWS
bench_run x2 codec_k $TRAIN_ROWS $X
echo total $(($(date +%s) - T0))s
