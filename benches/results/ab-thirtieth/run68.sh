#!/bin/bash
# Thirtieth session, call 1. Binaries (`.devbin/`, carried with `.gl`): codec_h / ps_h built at 7de113e
# (`bash benches/results/ab-twentyseventh/build-binaries.sh`), codec_q / ps_q the same with LANE_MASK
# (the unordered subgroup compress builds its mask words with subgroup shuffles and stores them from
# registers: no workgroup mask, no barrier before the loads, no mask store after the scan).
#   h/q   interleaved A/B (h1 q1 h2 q2): BF16 compress and fused forward (plain forward beside),
#         ρ = 0.5 / 0.176 / 0.05, unordered;
#   qT    the training path's rows with q (fused and plain forward and backward, dL/dz and with `a`),
#         then the Triton anchor (six cuBLAS FFN GEMMs) in the same call;
#   p/g/G compress_v2.POSITIONS_GAIN = 0 / 8 / 64 (version-2 writer and decoder), BF16 at six densities;
#   qD    compress and decompress, both sign modes, BF16 and e4m3 (q);
#   hF/qF F32 and F16 compress and fused forward, one run each.
# Runs past LIMIT seconds (default 480) are skipped: call with timeout_s ≈ LIMIT + 80.
R=/tmp/res68
LIMIT=${LIMIT:-480}
. benches/results/device-call.sh
kernel_ab_env UNORDERED ps_h ps_q
F=BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward
T=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
bench_pairs h codec_h q codec_q BITSPARSE_BENCH_DTYPES=bf16 $F
bench_run qT codec_q BITSPARSE_BENCH_DTYPES=bf16 $T
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.3,0.176,0.1,0.05,0.01
for v in p:0 g:8 G:64; do
  bench_run ${v%%:*}1 codec_q BITSPARSE_KERNEL_CONSTANTS=compress_v2.POSITIONS_GAIN=${v#*:} \
    BITSPARSE_BENCH_DTYPES=bf16 $D6 BITSPARSE_BENCH_OPS=copy,compress,decompress
done
bench_run qD codec_q BITSPARSE_BENCH_DTYPES=bf16,e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
bench_run hF codec_h BITSPARSE_BENCH_DTYPES=f32,f16 $F
bench_run qF codec_q BITSPARSE_BENCH_DTYPES=f32,f16 $F
echo total $(($(date +%s) - T0))s
