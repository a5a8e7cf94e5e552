#!/bin/bash
# Nineteenth session, call 5: F32 and the arena's plain decompress keep their clamps (codec_c = the code
# after 3a18df2) — register counts, and F32 decompress / fused backward beside 552a82f (codec_sd).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res34; mkdir -p $R
.devbin/ps --policy unchecked --filter decompress > $R/stats_c.txt 2>&1
tar czf $OUT/res34.tgz -C /tmp res34
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 150 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res34.tgz -C /tmp res34
}
F="BITSPARSE_BENCH_DTYPES=f32 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress,fused_backward"
run cF codec_c $F
run hF codec_sd $F
echo total $(( $(date +%s) - T0 ))s
