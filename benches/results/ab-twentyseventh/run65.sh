#!/bin/bash
# run64.sh reordered for a short device budget (twenty-eighth session: thirteen refused starts cost most of
# it): the decisive A/B first (o x z y, B G), their repeats next, then the ablation, Burn's logged runs
# and the other dtypes. Same binaries, same settings, same names as run64.sh; LIMIT from the caller
# (default 420). Call with `carry: [".gl", ".devbin"]` and timeout_s of the budget left.
R=/tmp/res64
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
.devbin/ps_h --policy unchecked --filter decompress_v2 > $R/stats_h.txt 2>&1
.devbin/ps_h --policy unchecked --filter TWO_PASS --constants decompress_v2.RANKS=1 > $R/stats_ranks.txt 2>&1
.devbin/ps_h --policy unchecked --filter FUSED_BWD --constants decompress.G_FIRST=1 > $R/stats_gfirst.txt 2>&1
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
O=BITSPARSE_V2_DECODER=one-pass
X=BITSPARSE_V2_DECODER=indexed
Y=BITSPARSE_KERNEL_CONSTANTS=decompress_v2.MASK_FROM_STREAM=1
Z=BITSPARSE_KERNEL_CONSTANTS=decompress_v2.RANKS=1
FB="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
G=BITSPARSE_KERNEL_CONSTANTS=decompress.G_FIRST=1
bench_run o1 codec_h $O BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run x1 codec_h $X BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run z1 codec_h $X $Z BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run B1 codec_h $FB
bench_run G1 codec_h $G $FB
bench_run y1 codec_h $X $Y BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run x2 codec_h $X BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run o2 codec_h $O BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run G2 codec_h $G $FB
bench_run B2 codec_h $FB
bench_run z2 codec_h $X $Z BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run i1 codec_h $X BITSPARSE_BENCH_V2_INDEX_ONLY=1 BITSPARSE_BENCH_DTYPES=bf16 $D6
if [ $(($(date +%s) - T0)) -lt $((LIMIT - 60)) ]; then
  burn_autotune_runs 1 40
  timeout 40 /tmp/burntest two_devices > $R/burn-two-devices.log 2>&1
  echo "burn two devices rc=$?"
  save_results
fi
bench_run xE codec_h $X BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_DENSITIES=0.176,0.05
bench_run oE codec_h $O BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_DENSITIES=0.176,0.05
echo total $(($(date +%s) - T0))s
