#!/bin/bash
# Sixteenth session, call 7: the value-by-value fields from L >= 3 (ABL=256) and L >= 2 (ABL=512) against L >= 5 (default) and 4 (ABL=128).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
R=/tmp/res16; mkdir -p $R
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
run g256 codec_v2g $OPS BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=256
run g512 codec_v2g $OPS BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=512
run g128 codec_v2g $OPS $NV BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=128
run g0 codec_v2g $OPS $NV
run g256b codec_v2g $OPS $NV BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=256
tar czf $OUT/res16.tgz -C /tmp res16; echo total $(( $(date +%s) - T0 ))s
