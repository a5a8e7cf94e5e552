#!/bin/bash
# Twenty-ninth session, call 2: where issues 15 and 16 stand with this session's decisions (the one-pass
# version-2 decoder only, each fused-backward round's g loaded before its gathers), all on this commit's
# binaries (`bash benches/results/ab-twentyseventh/build-binaries.sh`; carry `.gl` and `.devbin`):
#   hT  the training path's rows (BF16; copy, fused and plain forward and backward, dL/dz and with `a`) at
#       ρ = 0.5 / 0.176 / 0.05, then the Triton anchor (six cuBLAS FFN GEMMs) in the same call;
#   hD  compress and decompress, versions 1 and 2, both sign modes; then, if time allows, Burn's F32
#       ReLU² block test twice with cubecl's autotune decisions (which matmul kernels the two twins run),
#       the two-device Burn test, F16/F32 training-path rows (hF) and e4m3 (hE).
# Runs past LIMIT seconds (default 380) are skipped: call with timeout_s ≈ LIMIT + 70. R names the results
# folder (/tmp/res66 by default; the thirty-first session's run71.sh sets /tmp/res71).
R=${R:-/tmp/res66}
LIMIT=${LIMIT:-380}
. benches/results/device-call.sh
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
.devbin/ps_h --policy unchecked --filter FUSED_BWD > $R/stats_bwd.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
T=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
bench_run hT codec_h BITSPARSE_BENCH_DTYPES=bf16 $T
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run hD codec_h BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
if [ $(($(date +%s) - T0)) -lt $((LIMIT - 90)) ]; then
  burn_autotune_runs 2 40
  timeout 60 /tmp/burntest two_devices > $R/burn-two-devices.log 2>&1
  echo "burn two devices rc=$?"
  save_results
fi
bench_run hF codec_h BITSPARSE_BENCH_DTYPES=f16,f32 $T
bench_run hE codec_h BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
echo total $(($(date +%s) - T0))s
