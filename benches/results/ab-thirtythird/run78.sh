#!/bin/bash
# Thirty-third session, call 1: a891040's kernels (codec_s: built from e6732c9, whose kernels are a891040's,
# with experiments/thirtythird/status-early-lean.patch: the thirty-second session's compress knob
# FITS_EARLY, this session's compress knob STATUS_EARLY and decompress knob LEAN (bit 0 the BF16 ReLU²
# gradient, bit 1 the square, NaNs canonicalised before rounding); all 0 is e6732c9's code).
#   x = all 0 (the committed kernels); y = FITS_EARLY=1 STATUS_EARLY=1, compress LEAN=4 (the forward's square), decompress LEAN=3;
#   z = FITS_EARLY=1, decompress LEAN=1.
#   The compress knobs touch the fused forward only, the decompress LEAN the fused backward only.
#   x y, the Triton anchor, x y again: BF16 ρ = 0.5 / 0.176 / 0.05, unpacked: copy, the fused and plain
#   forward and backward; then z once, e4m3 compress / decompress (both sign modes), and the F16 / F32
#   training-path rows at ρ = 0.176, as far as LIMIT allows.
# Binary (carry `.gl` and `.devbin`): `git apply benches/results/experiments/thirtythird/status-early-lean.patch`,
# `cargo bench -p bitsparse-bench --bench codec --no-run`, strip the binary to .devbin/codec_s.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res78
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
bench_run x0a codec_s $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=0,compress.STATUS_EARLY=0,decompress.LEAN=0
bench_run y0a codec_s $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.STATUS_EARLY=1,compress.LEAN=4,decompress.LEAN=3
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run x0b codec_s $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=0,compress.STATUS_EARLY=0,decompress.LEAN=0
bench_run y0b codec_s $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.STATUS_EARLY=1,compress.LEAN=4,decompress.LEAN=3
bench_run z0a codec_s $O BITSPARSE_KERNEL_CONSTANTS=compress.FITS_EARLY=1,compress.STATUS_EARLY=0,decompress.LEAN=1
bench_run e codec_s BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
bench_run F codec_s BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
echo total $(($(date +%s) - T0))s
