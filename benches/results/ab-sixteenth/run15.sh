#!/bin/bash
# Sixteenth session, call 6: the value-by-value Elias-Fano fields from L >= 4 (ABL=128) against L >= 5 (v2f).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.1,0.05,0.04
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
R=/tmp/res15; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 200 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null; cp /tmp/o_$name/bench.md $R/$name.md 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
NV=BITSPARSE_BENCH_NO_VERIFY=1
OPS=BITSPARSE_BENCH_OPS=copy,compress
run f128 codec_v2f $OPS BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=128
run f0 codec_v2f $OPS $NV
run f128b codec_v2f $OPS $NV BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=128
run f0b codec_v2f $OPS $NV
tar czf $OUT/res15.tgz -C /tmp res15; echo total $(( $(date +%s) - T0 ))s
