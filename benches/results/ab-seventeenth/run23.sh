#!/bin/bash
# Seventeenth session, call 6: the committed version-2 decoder (53eea77: sign by one shift, second code by a shift of width times the first bit), verified.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress
R=/tmp/res23; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 150 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
run f16b codec_d6 BITSPARSE_BENCH_DTYPES=bf16
run f16sp codec_d6 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=on
run fe4 codec_d6 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on
run ff16 codec_d6 BITSPARSE_BENCH_DTYPES=f16
run fe4u codec_d6 BITSPARSE_BENCH_DTYPES=e4m3
tar czf $OUT/res23.tgz -C /tmp res23; echo total $(( $(date +%s) - T0 ))s
