#!/bin/bash
# Thirty-first session, call 3: the pipelines built for each call's modes as committed (872d718: sign
# packing and, for compress chunks of whole tiles, no partial-tile code) plus the same for the
# version-2 writer and decoder (working tree of this call), against d0372e2 (the session's start).
# Binaries (carry `.gl` and `.devbin`): codec_h / ps_h of d0372e2 (`bash
# benches/results/ab-twentyseventh/build-binaries.sh` at that commit), codec_v / ps_v / burntest.xz of
# this call's tree. Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 80.
#   h1 v1 h2 v2  BF16 ρ = 0.5 / 0.176 / 0.05, both sign modes: copy, the fused and plain forward and
#                backward, compress and decompress (versions 1 and 2); then the Triton anchor (six
#                cuBLAS FFN GEMMs), Burn's F32 ReLU² block test and the two-device test on burntest;
#   hE vE        e4m3 compress / decompress, both sign modes;
#   vF           F16 and F32 training-path rows at ρ = 0.176 (codec_v only).
R=/tmp/res73
LIMIT=${LIMIT:-500}
. benches/results/device-call.sh
kernel_ab_env FUSED ps_h ps_v
save_results
O=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward,compress,decompress
bench_pairs h codec_h v codec_v BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both $O
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
if [ $(($(date +%s) - T0)) -lt $((LIMIT - 60)) ]; then
  burn_autotune_runs 1 60
  timeout 60 /tmp/burntest two_devices > $R/burn-two-devices.log 2>&1
  echo "burn two devices rc=$?"
  save_results
fi
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress"
bench_run hE codec_h $E
bench_run vE codec_v $E
bench_run vF codec_v BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
echo total $(($(date +%s) - T0))s
