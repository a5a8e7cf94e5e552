#!/bin/bash
# Prepared in the thirty-first session, not run: the fused backward built for whether it writes the
# dense `a` (write-a-mode.patch: WRITE_A_MODE, kernels::Modes::write_a) against the committed kernels,
# interleaved n1 w1 n2 w2 (BF16, ρ = 0.5 / 0.176 / 0.05, fused and plain backward), then nF wF (F16 and
# F32 at ρ = 0.176, the training path's four kernels: the committed kernels' first F16 / F32 rows on the
# H200 since they are built per mode). Build with `bash benches/results/experiments/thirtyfirst/build.sh`;
# carry `.gl` and `.devbin`; timeout_s ≈ LIMIT + 80 (an H200 runs a bench run about 1.5 × as long as
# an H100 did in that session).
R=/tmp/res_w
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
kernel_ab_env
bench_pairs n codec_n w codec_w BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward BITSPARSE_BENCH_DTYPES=bf16
F="BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
bench_run nF codec_n $F
bench_run wF codec_w $F
echo total $(($(date +%s) - T0))s
