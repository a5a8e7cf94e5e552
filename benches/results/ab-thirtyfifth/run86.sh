#!/bin/bash
# Thirty-fifth session: issue 15's floors with the kept code on the H200, the Triton anchor in the same
# call, and the thirty-fourth session's forward square (b3614a5) against the kernels before it. Call 1
# (run85.sh, `call1-h100/`) came as an H100 and measured all of this there, so on any card but an H200
# this script stops before the loader set-up (a call that lands on an H100 costs its start only).
# Binaries (carry `.gl` and `.devbin`): codec_k and codec_h as in ../ab-thirtyfourth/run85.sh.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70 (LIMIT=400: about 330 s of runs).
R=/tmp/res86
ONLY_GPU=H200
LIMIT=${LIMIT:-400}
. benches/results/device-call.sh
kernel_ab_env
bench_run h0 codec_h $TRAIN_ROWS
triton_anchor 150
bench_run e0 codec_h $E4M3_DEC_ROWS
# DEPOSIT8 (knobs-next.patch; +5 to +10 % on the H100, which moves e4m3's bytes at 0.71-0.86 of its
# copy) on the H200, where e4m3's decompress takes about the H100's time at 0.53-0.70 of a faster copy.
for i in 1 2; do
  bench_run ek$i codec_k $E4M3_DEC_ROWS
  bench_run eg$i codec_k $E4M3_DEC_ROWS BITSPARSE_KERNEL_CONSTANTS=decompress.DEPOSIT8=1
done
bench_pairs fa codec_k fh codec_h $FWD_ROWS
bench_run h9 codec_h $TRAIN_ROWS
echo total $(($(date +%s) - T0))s
