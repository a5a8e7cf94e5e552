#!/bin/bash
# Sixteenth session, call 5: the version-2 writer with its sparse tiles' Elias-Fano fields value by value (v2e; ABL=64 the per-round form of call 3).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.02,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
R=/tmp/res14; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 300 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null; cp /tmp/o_$name/bench.md $R/$name.md 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
NV=BITSPARSE_BENCH_NO_VERIFY=1
OPS=BITSPARSE_BENCH_OPS=copy,compress
run e0 codec_v2e $OPS
run e64 codec_v2e $OPS $NV BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=64
run e0_sp codec_v2e $OPS BITSPARSE_BENCH_SIGN_PACK=on
run e0_e4m3 codec_v2e $OPS BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both
run e64_e4m3 codec_v2e $OPS BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both $NV BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=64
run e0_f16 codec_v2e $OPS BITSPARSE_BENCH_DTYPES=f16
run e0b codec_v2e $OPS $NV
timeout 40 .devbin/pipeline_stats --policy unchecked --filter compress_v2 --constants compress.SCAN_SLOTS=4,decompress.SCAN_SLOTS=4 > $R/stats.txt 2>&1; echo "stats rc=$?"
tar czf $OUT/res14.tgz -C /tmp res14; echo total $(( $(date +%s) - T0 ))s
