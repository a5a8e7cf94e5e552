#!/bin/bash
# Prepared for the next session (not run: the device time was spent): GB16 (codec_x: the F16 backward's grad with
# f86630c's branching conversions, the forward's act without branches as committed;
# ../experiments/twentieth/GB16.patch) against the committed fd1d630 (codec_n), F16 backward kernels.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
# Build codec_x with GB16.patch applied and codec_n from fd1d630 (docs/DEVICE.md for the binaries).
R=/tmp/res39; mkdir -p $R
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DTYPES=f16
export BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward
for name in x1 n1 x2 n2; do
  if [ $(( $(date +%s) - T0 )) -gt 110 ]; then echo "$name skipped"; continue; fi
  bin=codec_${name:0:1}
  .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s) - T0 ))s"
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  tar czf $OUT/res39.tgz -C /tmp res39
done
