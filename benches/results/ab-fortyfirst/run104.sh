#!/bin/bash
# Forty-first session, for an H200 (on another card it stops before its set-up): the forward's square in
# forms 1-4 (codec_Q, experiments/fortieth/fwd-square-forms-knob.patch: 2 the unsigned-min square, 3 the
# square of r in the product form, 4 the square of r in the flags form; 1 the kept H200 form, the
# baseline), each forced through the kernel constants, two interleaved passes, with the driver's counts;
# between the passes the training-path rows of the kept code (codec_k, 166c0d3, which takes form 1 on an H200)
# and the Triton anchor. (run102.sh's backward A/B, WRITE_A, was dropped: on an H100 it changed nothing,
# call1-h100.) Judge with `python3 benches/results/floors.py DIR/t1.json --anchor DIR/triton.jsonl`,
# `python3 benches/results/ab-twentysixth/compare.py DIR f1 f2` (f3, f4). Call with timeout_s ≈ LIMIT +
# 100 (a forward run takes about 35 s, a training-path run about 60).
R=/tmp/res104
ONLY_GPU=H200
LIMIT=${LIMIT:-440}
. benches/results/device-call.sh
kernel_ab_env
for f in 1 2 3 4; do
  compress_stats "f$f" --shaders .devbin/shaders_Q --constants "compress.SQUARE_NAN_FLAGS=$f"
done
save_results
forms() {
  for f in 1 2 3 4; do
    bench_run "f$f$1" codec_Q $FWD_ROWS "BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=$f,forward.SQUARE_NAN_FLAGS=$f"
  done
}
forms A
bench_run t1 codec_k $TRAIN_ROWS
triton_anchor 150
forms B
bench_run t2 codec_k $TRAIN_ROWS
echo total $(($(date +%s) - T0))s
