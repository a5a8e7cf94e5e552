#!/bin/bash
# Seventeenth session, call 1: the version-2 decoder's knobs (decompress_v2.OPT bits: 1 SWAR decode,
# 2 subgroup tile find + division-free L, 4 branch-free bit reads, 64 mask in workgroup memory only for
# positions tiles; ablations 8 no decode, 16 no gather or decode), version 1's decompress in every batch.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress
R=/tmp/res17; mkdir -p $R
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
run o0 codec_d1 $B
run o71 codec_d1 $B $K=71
run o1 codec_d1 $B $NV $K=1
run o2 codec_d1 $B $NV $K=2
run o4 codec_d1 $B $NV $K=4
run o64 codec_d1 $B $NV $K=64
run o79 codec_d1 $B $NV $K=79
run o87 codec_d1 $B $NV $K=87
run o71sp codec_d1 $B $K=71 BITSPARSE_BENCH_SIGN_PACK=on
run o71e4 codec_d1 BITSPARSE_BENCH_DTYPES=e4m3 $K=71 BITSPARSE_BENCH_SIGN_PACK=on
run o0e4 codec_d1 BITSPARSE_BENCH_DTYPES=e4m3 $NV BITSPARSE_BENCH_SIGN_PACK=on
run o71f16 codec_d1 BITSPARSE_BENCH_DTYPES=f16 $K=71
tar czf $OUT/res17.tgz -C /tmp res17; echo total $(( $(date +%s) - T0 ))s
