#!/bin/bash
# NOT RUN: no device machine started for it; superseded by run80.sh (shorter), which did not run either.
# Thirty-third session, call 2: b9131c4's kernels (the BF16 ReLU² gradient that canonicalises NaN
# products, kept after call 1) with the knobs of experiments/thirtythird/knobs-call2.patch (codec_t):
# compress FITS_EARLY, STATUS_EARLY, LEAN bit 2 (the forward's square), decompress LEAN bit 1 (the
# backward's square of `a`); all 0 is b9131c4's code.
#   a = all 0, b = FITS_EARLY=1: a pair, then c, d, e below, then the pair again (the device budget left
#   for this call may cut the second pair), BF16 ρ = 0.5 / 0.176 / 0.05, unpacked, copy and the fused
#   and plain forward and backward, the Triton anchor after the first pair (the six GEMMs of the
#   training-path share); then the forward alone for c = FITS_EARLY + STATUS_EARLY and
#   d = FITS_EARLY + compress LEAN=4 (call 1 had both at once +5 %), and the backward alone for
#   e = decompress LEAN=2 (call 1 had it with the gradient's change, with `a` slower than the gradient's alone).
# Binary (carry `.gl` and `.devbin`): at b9131c4 `git apply benches/results/experiments/thirtythird/knobs-call2.patch`,
# `cargo bench -p bitsparse-bench --bench codec --no-run`, strip the binary to .devbin/codec_t.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res79
LIMIT=${LIMIT:-360}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
bench_run a1 codec_t $O
bench_run b1 codec_t $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run c1 codec_t $FWD BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.STATUS_EARLY=1
bench_run d1 codec_t $FWD BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.LEAN=4
bench_run e1 codec_t $BWD BITSPARSE_KERNEL_CONSTANTS=decompress.LEAN=2
bench_run a2 codec_t $O
bench_run b2 codec_t $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1
echo total $(($(date +%s) - T0))s
