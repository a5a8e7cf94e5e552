#!/bin/bash
# NOT RUN: no device machine started for it (the session's device time ran out in refused starts); run81.sh
# asks the same questions against the kept kernels.
# Thirty-third session, call 2 in short form (run79.sh needs more device time than was left): the same
# binary (codec_t: b9131c4 + experiments/thirtythird/knobs-call2.patch) and variants, each op group on
# its own, BF16 ρ = 0.5 / 0.176 / 0.05, unpacked:
#   forward (copy, fused and plain forward): a = all 0, b = FITS_EARLY=1, c = b + STATUS_EARLY=1,
#   d = b + compress LEAN=4, then a and b again;
#   backward (copy, fused and plain backward): a = all 0, e = decompress LEAN=2.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res80
LIMIT=${LIMIT:-200}
. benches/results/device-call.sh
kernel_ab_env
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
bench_run fa1 codec_t $FWD
bench_run fb1 codec_t $FWD BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1
bench_run fc1 codec_t $FWD BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.STATUS_EARLY=1
bench_run fd1 codec_t $FWD BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.LEAN=4
bench_run ba1 codec_t $BWD
bench_run be1 codec_t $BWD BITSPARSE_KERNEL_CONSTANTS=decompress.LEAN=2
bench_run fa2 codec_t $FWD
bench_run fb2 codec_t $FWD BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1
bench_run ba2 codec_t $BWD
bench_run be2 codec_t $BWD BITSPARSE_KERNEL_CONSTANTS=decompress.LEAN=2
echo total $(($(date +%s) - T0))s
