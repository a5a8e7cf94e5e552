#!/bin/bash
# Thirty-fifth session: issue 15's floors with the kept code on the H200, the Triton anchor in the same
# call, and the thirty-fourth session's forward square (b3614a5) against the kernels before it. Call 1
# (run85.sh, `call1-h100/`) came as an H100 and measured all of this there, so on any card but an H200
# this script stops before the loader set-up (a call that lands on an H100 costs its start only).
# Binaries (carry `.gl` and `.devbin`): codec_k and codec_h as in ../ab-thirtyfourth/run85.sh.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70 (LIMIT=400: about 330 s of runs).
R=/tmp/res86
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)
case "$gpu" in
  *H200*) ;;
  *) echo "$gpu: not an H200, nothing run"; exit 0 ;;
esac
LIMIT=${LIMIT:-400}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress"
bench_run h0 codec_h $O
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run e0 codec_h $E
# DEPOSIT8 (knobs-next.patch; +5 to +10 % on the H100, which moves e4m3's bytes at 0.71-0.86 of its
# copy) on the H200, where e4m3's decompress takes about the H100's time at 0.53-0.70 of a faster copy.
for i in 1 2; do
  bench_run ek$i codec_k $E
  bench_run eg$i codec_k $E BITSPARSE_KERNEL_CONSTANTS=decompress.DEPOSIT8=1
done
bench_pairs fa codec_k fh codec_h $FWD
bench_run h9 codec_h $O
echo total $(($(date +%s) - T0))s
