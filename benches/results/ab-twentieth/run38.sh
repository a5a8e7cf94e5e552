#!/bin/bash
# Twentieth session, call 4: the F16 math without branches but with the backward's early out for r <= 0
# kept (codec_n = the working tree after 0156498: lib/act.wgsl's grad_f16) against f86630c (codec_c), F16
# training-path kernels, each binary twice, interleaved.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res38; mkdir -p $R
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DTYPES=f16
export BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
for name in n1 c1 n2 c2; do
  if [ $(( $(date +%s) - T0 )) -gt 300 ]; then echo "$name skipped"; continue; fi
  bin=codec_${name:0:1}
  .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s) - T0 ))s"
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  tar czf $OUT/res38.tgz -C /tmp res38
done
