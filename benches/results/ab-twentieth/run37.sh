#!/bin/bash
# Twentieth session, call 3: codec_n = 0156498 (the F16 activation math without branches, committed) plus
# the uncommitted P32 (F32's round starts and the direct compress's prefixes kept packed in four registers:
# ../experiments/twentieth/P32.patch) against codec_c = f86630c in the same call; F16 and F32 kernels, the
# BF16 training path as a control; register counts.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res37; mkdir -p $R
.devbin/ps_n --policy unchecked > $R/stats_n.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 480 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res37.tgz -C /tmp res37
}
T="BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
run nF codec_n BITSPARSE_BENCH_DTYPES=f16,f32 $T
run cF codec_c BITSPARSE_BENCH_DTYPES=f16,f32 $T
run n32 codec_n BITSPARSE_BENCH_DTYPES=f32 BITSPARSE_BENCH_OPS=copy,compress,decompress
run c32 codec_c BITSPARSE_BENCH_DTYPES=f32 BITSPARSE_BENCH_OPS=copy,compress,decompress
run nT codec_n BITSPARSE_BENCH_DTYPES=bf16 $T
run nF2 codec_n BITSPARSE_BENCH_DTYPES=f16,f32 $T
echo total $(( $(date +%s) - T0 ))s
