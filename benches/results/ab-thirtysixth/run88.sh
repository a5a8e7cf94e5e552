#!/bin/bash
# Thirty-sixth session, call 2: the forward's square canonicalises a NaN with one unsigned min
# (`square_pair` in shaders/lib/act.wgsl: a square's sign bit is set only when it is a NaN, and IEEE
# arithmetic returns quiet NaNs, so every NaN square is at least 0x7fc00000 as unsigned) instead of
# nan_canon32's compare and select, against the kept code, on whatever card comes.
# Binaries (carry `.gl` and `.devbin`): codec_h (847bee5), codec_n (847bee5 + square_pair), both
# `cargo bench -p bitsparse-bench --bench codec --no-run`, stripped; codec_k as in run86.sh.
#   any card: fh/fn interleaved pairs of the BF16 fused and plain forward (three pairs on an H100);
#   an H200 also: the kept code's full training-path rows (h0) and the Triton anchor first, e4m3 (e0).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res88
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)
LIMIT=${LIMIT:-250}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress"
case "$gpu" in
  *H200*)
    bench_run h0 codec_h $O
    timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
    save_results
    bench_pairs fh codec_h fn codec_n $FWD
    bench_run e0 codec_h $E
    ;;
  *)
    bench_pairs fh codec_h fn codec_n $FWD
    bench_run fh3 codec_h $FWD
    bench_run fn3 codec_n $FWD
    ;;
esac
echo total $(($(date +%s) - T0))s
