#!/bin/bash
# Thirty-second session, prepared third call: ea896f7's kernels (codec_n, with compress's FITS_EARLY knob: 0 is
# ea896f7's code; 1 lets the claiming thread load the slot's limit beside its claim and pass "fits"
# with the claimed place, instead of every thread loading it atomically after the claim's barrier).
# Binary (carry `.gl` and `.devbin`): codec_n, built from ea896f7 with experiments/thirtysecond/compress-fits-early.patch.
# Not run: no device machine started for it (the session's device time ran out in refusals). To run it
# later: `git apply benches/results/experiments/thirtysecond/compress-fits-early.patch`, then
# `cargo bench -p bitsparse-bench --bench codec --no-run` and strip the binary to .devbin/codec_n; on an
# H200 the Triton anchor (after the first pair) gives the GEMMs for the training-path share.
#   f0 f1, twice: BF16 ρ = 0.5 / 0.176 / 0.05, unpacked: copy, the fused and plain forward and backward
#   (the Triton anchor between the pairs); then e4m3 compress / decompress (both sign modes) and the F16 / F32 training-path rows at ρ = 0.176
#   (the device budget left for this call ran them only as far as LIMIT allowed).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70 (470).
R=/tmp/res77
LIMIT=${LIMIT:-400}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
bench_run f0a codec_n $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=0
bench_run f1a codec_n $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run f0b codec_n $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=0
bench_run f1b codec_n $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1
bench_run e codec_n BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
bench_run F codec_n BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
echo total $(($(date +%s) - T0))s
