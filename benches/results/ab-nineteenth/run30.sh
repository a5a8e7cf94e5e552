#!/bin/bash
# Nineteenth session, call 1: the committed code's training-path kernels and the Triton anchor in one
# call; register counts and times of rewrites read at run time from sv/<variant> (codec_sd = 552a82f +
# experiments/eighteenth/shader-dir.patch): K (staging carry in workgroup memory: compress, writer),
# GB (fused backward loads every round's g first), FL (fused forward loads every round's z first), KFL.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=$OUT/res30; mkdir -p $R
.devbin/ps --policy unchecked > $R/stats_all.txt 2>&1
for v in K FL KFL; do .devbin/ps --policy unchecked --filter compress --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done
.devbin/ps --policy unchecked --filter decompress.wgsl --shaders .devbin/sv/GB > $R/stats_GB.txt 2>&1
echo stats $(( $(date +%s) - T0 ))s
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_TILE_ORDER=unordered
run() { # name [env...]
  local name=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 470 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/codec_sd --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
D3="BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05"
run base $D3 BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward,fused_backward,plain_backward
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$? $(( $(date +%s) - T0 ))s
run K $D3 BITSPARSE_BENCH_OPS=copy,compress,fused_forward BITSPARSE_SHADER_DIR=.devbin/sv/K
run GB $D3 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward BITSPARSE_SHADER_DIR=.devbin/sv/GB
run FL $D3 BITSPARSE_BENCH_OPS=copy,fused_forward BITSPARSE_SHADER_DIR=.devbin/sv/FL
run KFL $D3 BITSPARSE_BENCH_OPS=copy,compress,fused_forward BITSPARSE_SHADER_DIR=.devbin/sv/KFL
run base2 $D3 BITSPARSE_BENCH_OPS=copy,compress,fused_forward
echo total $(( $(date +%s) - T0 ))s
