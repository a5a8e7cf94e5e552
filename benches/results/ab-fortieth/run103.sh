#!/bin/bash
# Prepared in the fortieth session, for an H200 (on another card it stops before its set-up): the
# forward's square in forms the H100 timed slower, now that the H200 was found to prefer a form the H100
# does not (fortieth session, call 3). One binary, codec_Q
# (experiments/fortieth/fwd-square-forms-knob.patch on 1ca57ff: SQUARE_NAN_FLAGS 2 the unsigned-min
# square, 3 the square of r in the product form, 4 the square of r in the flags form; 1 the kept H200
# form, the baseline), each form forced through the kernel constants, two interleaved passes, with the
# driver's counts. GPU suite on lavapipe: the every-value test passes with all five forms; a mutant of
# form 4 without its canonical NaN fails it. Compare with `python3
# benches/results/ab-twentysixth/compare.py DIR f1 f2` (f3, f4). Call with timeout_s ≈ LIMIT + 70.
R=/tmp/res103
ONLY_GPU=H200
LIMIT=${LIMIT:-230}
. benches/results/device-call.sh
kernel_ab_env
for f in 1 2 3 4; do
  compress_stats "f$f" --shaders .devbin/shaders_Q --constants "compress.SQUARE_NAN_FLAGS=$f"
done
save_results
for pass in A B; do
  for f in 1 2 3 4; do
    bench_run "f$f$pass" codec_Q $FWD_ROWS "BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=$f,forward.SQUARE_NAN_FLAGS=$f"
  done
done
echo total $(($(date +%s) - T0))s
