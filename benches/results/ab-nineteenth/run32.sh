#!/bin/bash
# Nineteenth session, call 3: the committed code's training-path kernels with the Triton anchor in the same
# call; NC (timing only: the decoders' gather loads without the clamp to the binding) against the committed
# decoders, BF16 (unpacked and sign-packed) and e4m3. codec_sd = 552a82f + experiments/eighteenth/shader-dir.patch.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res32; mkdir -p $R
.devbin/ps --policy unchecked --filter decompress.wgsl --shaders .devbin/sv/NC > $R/stats_NC.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
run() { # name [env...]
  local name=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/codec_sd --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res32.tgz -C /tmp res32
}
run base BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward,fused_backward,plain_backward
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$? $(( $(date +%s) - T0 ))s
tar czf $OUT/res32.tgz -C /tmp res32
D="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress,fused_backward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress"
run hd $D
run NCd $D BITSPARSE_SHADER_DIR=.devbin/sv/NC
run he $E
run NCe $E BITSPARSE_SHADER_DIR=.devbin/sv/NC
echo total $(( $(date +%s) - T0 ))s
