#!/bin/bash
# Prepared for the next session (not run: the twentieth session's device time was spent). Times, each
# against fd1d630 / 87c62eb (the same shaders; codec_n) in the same call, each binary twice, interleaved:
#   GB16 (codec_x: GB16.patch, the F16 backward's grad with f86630c's branching conversions), F16
#   backward kernels;
#   F32R (codec_f: F32R.patch, the F32 fused backward keeps no array across its decode loop: masks in
#   one word, starts packed, both rotated a round at a time), F32 fused and plain backward;
# and the register counts of both (ps_x, ps_f: pipeline_stats built from each patched tree).
# Binaries: `cargo bench -p bitsparse-bench --bench codec --no-run` in each tree, strip the codec-*
# (docs/DEVICE.md); carry [".gl", ".devbin"].
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/resN; mkdir -p $R
.devbin/ps_x --policy unchecked --filter decompress > $R/stats_x.txt 2>&1
.devbin/ps_f --policy unchecked --filter decompress > $R/stats_f.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward
run() { # name bin dtype
  if [ $(( $(date +%s) - T0 )) -gt 480 ]; then echo "$1 skipped"; return; fi
  BITSPARSE_BENCH_DTYPES=$3 .devbin/$2 --no-progress --out /tmp/o_$1 > $R/$1.log 2>&1; echo "$1 rc=$? $(( $(date +%s) - T0 ))s"
  cp /tmp/o_$1/bench.json $R/$1.json 2>/dev/null
  tar czf $OUT/resN.tgz -C /tmp resN
}
run x1 codec_x f16; run n1 codec_n f16; run x2 codec_x f16; run n2 codec_n f16
run f1 codec_f f32; run m1 codec_n f32; run f2 codec_f f32; run m2 codec_n f32
