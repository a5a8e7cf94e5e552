#!/bin/bash
# Prepared for the next session (not run): one device call that times PS, PS2 and U16 against the committed
# code. Set-up here: build a bench binary with ../eighteenth/shader-dir.patch applied (in a worktree; touch
# its sources first, shared target directory: docs/DEVICE.md) as .devbin/codec_sd, `pipeline_stats` as
# .devbin/ps, and the three shader directories as .devbin/sv/{PS,PS2,U16} (a copy of shaders/ with the
# patch applied: `cp -r shaders X && (cd X && patch -p2 < .../PS.patch)`); carry [".gl", ".devbin"].
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/resN; mkdir -p $R
for v in PS PS2 U16; do .devbin/ps --policy unchecked --filter compress --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done
tar czf $OUT/resN.tgz -C /tmp resN
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
run() { # name [env...]
  local name=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 480 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/codec_sd --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/resN.tgz -C /tmp resN
}
ALL="BITSPARSE_BENCH_OPS=copy,compress,decompress,fused_forward,fused_backward"
run h $ALL
run PS $ALL BITSPARSE_SHADER_DIR=.devbin/sv/PS
run PS2 $ALL BITSPARSE_SHADER_DIR=.devbin/sv/PS2
run U16 BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_SHADER_DIR=.devbin/sv/U16
run h2 $ALL
echo total $(( $(date +%s) - T0 ))s
