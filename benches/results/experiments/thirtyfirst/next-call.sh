#!/bin/bash
# Prepared in the thirty-first session, not run: the fused backward built for whether it writes the
# dense `a` (write-a-mode.patch: WRITE_A_MODE, kernels::Modes::write_a) against the committed kernels,
# BF16 / F16 / F32, ρ = 0.5 / 0.176 / 0.05, fused and plain backward, interleaved n1 w1 n2 w2. Build with
# `bash benches/results/experiments/thirtyfirst/build.sh`; carry `.gl` and `.devbin`; timeout_s ≈ LIMIT
# + 80 (an H200 runs a bench run about 1.5 × as long as an H100).
R=/tmp/res_w
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward BITSPARSE_BENCH_DTYPES=bf16,f16,f32"
bench_pairs n codec_n w codec_w $O
echo total $(($(date +%s) - T0))s
