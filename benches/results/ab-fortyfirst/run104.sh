#!/bin/bash
# Binaries: build104.sh (beside this script).
# Forty-first session, for an H200 (on another card it stops before its set-up): the forward's square in
# forms 1-4 (codec_Q, experiments/fortieth/fwd-square-forms-knob.patch: 2 the unsigned-min square, 3 the
# square of r in the product form, 4 the square of r in the flags form; 1 the kept H200 form, the
# baseline), each forced through the kernel constants, two interleaved passes, with the driver's counts;
# between the passes the training-path rows of the kept code (codec_k, 166c0d3, which takes form 1 on an H200)
# and the Triton anchor. In each pass after the forms, codec_Z: the kept code of 3e055e4 with
# experiments/thirtyeighth/fwd-restage-B.patch (the fused forward's relu(z) kept in workgroup memory for
# the staging's second read instead of re-read through L1; +8.6 / +4.7 / +5.4 % on an H100 with 89
# registers, thirty-eighth session), which takes form 1 on an H200 as the kept code does: compare
# `… DIR f1 z`. (run102.sh's backward A/B, WRITE_A, was dropped: on an H100 it changed nothing,
# call1-h100.) Judge with `python3 benches/results/floors.py DIR/t1.json --anchor DIR/triton.jsonl`,
# `python3 benches/results/ab-twentysixth/compare.py DIR f1 f2` (f3, f4). Call with timeout_s ≈ LIMIT +
# 100 (on an H100 a backward run took 41-46 s).
R=/tmp/res104
ONLY_GPU=H200
LIMIT=${LIMIT:-470}
. benches/results/device-call.sh
kernel_ab_env
for f in 1 2 3 4; do
  compress_stats "f$f" --shaders .devbin/shaders_Q --constants "compress.SQUARE_NAN_FLAGS=$f"
done
save_results
compress_stats z --shaders .devbin/shaders_Z --constants "compress.SQUARE_NAN_FLAGS=1"
save_results
forms() {
  for f in 1 2 3 4; do
    bench_run "f$f$1" codec_Q $FWD_ROWS "BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=$f,forward.SQUARE_NAN_FLAGS=$f"
  done
  bench_run "z$1" codec_Z $FWD_ROWS
}
forms A
bench_run t1 codec_k $TRAIN_ROWS
triton_anchor 150
forms B
echo total $(($(date +%s) - T0))s
