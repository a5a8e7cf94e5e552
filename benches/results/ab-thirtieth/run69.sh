#!/bin/bash
# Thirtieth session, call 2. Binaries (`.devbin/`, carried with `.gl`): codec_q / ps_q (b486e5a: LANE_MASK)
# and codec_l / ps_l (the same plus LANE_SCAN — each subgroup loads the tile's whole mask and scans it
# with subgroup operations, no workgroup scan and no barrier in the decompress and the fused backward —
# and the version-2 writer's positions margin, format::v2::POSITIONS_GAIN = 8).
#   q/l   interleaved A/B (q1 l1 q2 l2): BF16 decompress (both sign modes) and fused backward (plain
#         backward beside), ρ = 0.5 / 0.176 / 0.05;
#   lT    the training path's rows with l, then the Triton anchor in the same call;
#   qE/lE e4m3 decompress, F32 decompress and fused backward, one run each;
#   lV    version 1 and 2 compress and decompress with l at six densities.
# Runs past LIMIT seconds (default 480) are skipped: call with timeout_s ≈ LIMIT + 80.
R=/tmp/res69
LIMIT=${LIMIT:-480}
. benches/results/device-call.sh
kernel_ab_env decompress ps_q ps_l
B=BITSPARSE_BENCH_OPS=copy,decompress,fused_backward,plain_backward
T=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
bench_pairs q codec_q l codec_l BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both $B
bench_run lT codec_l BITSPARSE_BENCH_DTYPES=bf16 $T
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run qE codec_q BITSPARSE_BENCH_DTYPES=e4m3,f32 $B
bench_run lE codec_l BITSPARSE_BENCH_DTYPES=e4m3,f32 $B
bench_run lV codec_l BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_DENSITIES=0.5,0.3,0.176,0.1,0.05,0.01 BITSPARSE_BENCH_OPS=copy,compress,decompress
echo total $(($(date +%s) - T0))s
