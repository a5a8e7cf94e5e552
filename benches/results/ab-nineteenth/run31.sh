#!/bin/bash
# Nineteenth session, call 2: AL (the fused forward's dense activation computed and stored by the staging,
# after the claim is issued; the load loop keeps only the relu the mask needs) against the committed code,
# BF16 and F16, A B A B; register counts. codec_sd = 552a82f + experiments/eighteenth/shader-dir.patch.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res31; mkdir -p $R
.devbin/ps --policy unchecked --filter compress.wgsl --shaders .devbin/sv/AL > $R/stats_AL.txt 2>&1
echo stats $(( $(date +%s) - T0 ))s
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DTYPES=bf16,f16 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
run() { # name [env...]
  local name=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 300 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/codec_sd --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res31.tgz -C /tmp res31
}
run h1 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward
run AL1 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward BITSPARSE_SHADER_DIR=.devbin/sv/AL
run h2 BITSPARSE_BENCH_OPS=copy,fused_forward
run AL2 BITSPARSE_BENCH_OPS=copy,fused_forward BITSPARSE_SHADER_DIR=.devbin/sv/AL
echo total $(( $(date +%s) - T0 ))s
