#!/bin/bash
# Eighteenth session, call 6: the committed code (codec_c) beside 6fe44b8 (codec_h): the version-2 decoder
# (one loop) and the fused backward (one round at a time), BF16, verified; results written as they come.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=$OUT/res29; mkdir -p $R
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_DTYPES=bf16
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 100 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
V2="BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01"
FB="BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05"
run cv2 codec_c $V2
run cfb codec_c $FB
run hv2 codec_h $V2
run hfb codec_h $FB
echo total $(( $(date +%s) - T0 ))s
