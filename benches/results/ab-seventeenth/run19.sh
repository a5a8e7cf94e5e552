#!/bin/bash
# Seventeenth session, call 2: the committed decoder (d14f006, sign by one shift) and the positions-loop knobs (decompress_v2.OPT bits:
# 1 low parts in a 64-bit window, 2 mask bits per word before the atomicOr, 4 ablation no positions loop, 8 ablation no decode, 16 a vec's codes read as five consecutive words).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress
R=/tmp/res18; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 470 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
NV=BITSPARSE_BENCH_NO_VERIFY=1
K=BITSPARSE_KERNEL_CONSTANTS=decompress_v2.OPT
B=BITSPARSE_BENCH_DTYPES=bf16
run o0 codec_d2 $B BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
run o1 codec_d2 $B $NV $K=1 BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.02,0.01
run o2 codec_d2 $B $NV $K=2 BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.02,0.01
run o3 codec_d2 $B $K=3 BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.02,0.01
run o4 codec_d2 $B $NV $K=4 BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.02,0.01
run o8 codec_d2 $B $NV $K=8
run o16 codec_d2 $B $NV $K=16 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
run o19 codec_d2 $B $K=19 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
run o0b codec_d2 $B $NV BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.02,0.01
run o0sp codec_d2 $B BITSPARSE_BENCH_SIGN_PACK=on
run o0e4 codec_d2 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on
run o16e4 codec_d2 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $NV $K=16
run o0f16 codec_d2 BITSPARSE_BENCH_DTYPES=f16
tar czf $OUT/res18.tgz -C /tmp res18; echo total $(( $(date +%s) - T0 ))s
