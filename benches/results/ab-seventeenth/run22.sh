#!/bin/bash
# Seventeenth session, call 5: decode micro-variants on top of 2651e5d (decompress_v2.OPT bits: 1 lane masks
# by shift and subtract, 2 sign by one shift and a top-bit mask, 4 five-word gathers for 16/32-bit,
# 8 a word's second code by a shift of width times its first bit).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress
R=/tmp/res22; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 200 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
NV=BITSPARSE_BENCH_NO_VERIFY=1
K=BITSPARSE_KERNEL_CONSTANTS=decompress_v2.OPT
B=BITSPARSE_BENCH_DTYPES=bf16
run o0 codec_d5 $B $NV
run o1 codec_d5 $B $NV $K=1
run o2 codec_d5 $B $NV $K=2
run o4 codec_d5 $B $NV $K=4
run o8 codec_d5 $B $NV $K=8
run o15 codec_d5 $B $K=15
run o0b codec_d5 $B $NV
run o1e4 codec_d5 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $NV $K=1
run o0e4 codec_d5 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $NV
tar czf $OUT/res22.tgz -C /tmp res22; echo total $(( $(date +%s) - T0 ))s
