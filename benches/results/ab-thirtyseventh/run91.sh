#!/bin/bash
# Thirty-seventh session, call 3 (any card): the forward's squares rounded without NaN canonicalisation
# where a vec holds no NaN (experiments/thirtyseventh/nan-free-square.patch, codec_y) against the kept
# kernels (codec_h), three interleaved pairs of the BF16 fused and plain forward. On an H200 the kept
# code's training-path rows and the Triton anchor come first (issue 15's floors there, as run89.sh).
# Binaries (carry `.gl` and `.devbin`): codec_h (847bee5's `cargo bench -p bitsparse-bench --bench codec
# --no-run`, stripped), codec_y (the same of this session's tree with the patch).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res91
LIMIT=${LIMIT:-330}
. benches/results/device-call.sh
kernel_ab_env
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
  *H200*)
    bench_run t1 codec_h $TRAIN_ROWS,compress
    triton_anchor 150
    ;;
esac
bench_pairs fh codec_h fy codec_y $FWD_ROWS
bench_run fh3 codec_h $FWD_ROWS
bench_run fy3 codec_y $FWD_ROWS
echo total $(($(date +%s) - T0))s
