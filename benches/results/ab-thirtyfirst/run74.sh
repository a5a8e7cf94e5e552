#!/bin/bash
# Thirty-first session, call 4: the pipelines built for each call's modes with the activation fixed
# too (sign packing, ReLU / ReLU², and for compress chunks of whole tiles no partial-tile code; the
# version-2 kernels sign packing and whole tiles) — what call 3 lacked (its fused forward read the
# activation at run time and was slower) — against d0372e2 (the session's start). Binaries (carry
# `.gl` and `.devbin`): codec_h of d0372e2, codec_n and burntest.xz of this call's tree.
#   h1 n1 h2 n2  BF16 ρ = 0.5 / 0.176 / 0.05, both sign modes: copy, the fused and plain forward and
#                backward, compress and decompress (versions 1 and 2); then the Triton anchor (six
#                cuBLAS FFN GEMMs) and Burn's F32 ReLU² block test;
#   hF nF        F16 and F32 training-path rows at ρ = 0.176.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 80.
R=/tmp/res74
LIMIT=${LIMIT:-400}
. benches/results/device-call.sh
kernel_ab_env
O=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward,compress,decompress
bench_pairs h codec_h n codec_n BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both $O
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
F="BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
bench_run hF codec_h $F
bench_run nF codec_n $F
if [ $(($(date +%s) - T0)) -lt $((LIMIT - 30)) ]; then
  burn_autotune_runs 1 60
fi
echo total $(($(date +%s) - T0))s
