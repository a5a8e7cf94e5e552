#!/bin/bash
# Twenty-first session, call 3: the committed code (codec_h = 477f78e) where issue 15 stands — BF16
# training-path kernels with the Triton anchor in the same call, BF16 compress / decompress unpacked and
# sign-packed, F16 / F32 training-path kernels, e4m3 — and the A_LATE experiment (codec_a: the F32 fused
# forward's dense `a` stored after the values from a third read of z; experiments/twentyfirst/) against it.
R=/tmp/res41
. benches/results/device-call.sh
.devbin/ps_h --policy unchecked > $R/stats_h.txt 2>&1
.devbin/ps_a --policy unchecked --filter FUSED_FWD > $R/stats_a.txt 2>&1
save_results
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
T=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
FF=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward
bench_run hT codec_h BITSPARSE_BENCH_DTYPES=bf16 $T
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run aF codec_a BITSPARSE_BENCH_DTYPES=f32 $FF
bench_run hF codec_h BITSPARSE_BENCH_DTYPES=f16,f32 $T
bench_run hD codec_h BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
bench_run aF2 codec_a BITSPARSE_BENCH_DTYPES=f32 $FF
bench_run hE codec_h BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress,decompress
echo total $(($(date +%s) - T0))s
