#!/bin/bash
# Sixteenth session, call 2: ablations of the new version-2 writer (compress_v2.ABL bits).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
R=/tmp/res11; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null; cp /tmp/o_$name/bench.md $R/$name.md 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
NV=BITSPARSE_BENCH_NO_VERIFY=1
OPS=BITSPARSE_BENCH_OPS=copy,compress
run a0 codec_v2b $OPS
for a in 1 2 4 16 17 3; do run a$a codec_v2b $OPS $NV BITSPARSE_KERNEL_CONSTANTS=compress_v2.ABL=$a; done
run a0b codec_v2b $OPS $NV
tar czf $OUT/res11.tgz -C /tmp res11; echo total $(( $(date +%s) - T0 ))s
