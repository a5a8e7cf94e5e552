#!/bin/bash
# Seventeenth session, call 3: a positions tile's low parts staged in workgroup memory (decompress_v2.OPT=1)
# against the committed decoder (0fd55a9, OPT=0); the committed code's standing (compress, decompress,
# fused and plain kernels) and the Triton anchor in the same call.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress
R=/tmp/res20; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
NV=BITSPARSE_BENCH_NO_VERIFY=1
K=BITSPARSE_KERNEL_CONSTANTS=decompress_v2.OPT
B=BITSPARSE_BENCH_DTYPES=bf16
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
run a0 codec_d3 $B BITSPARSE_BENCH_OPS=copy,compress,decompress
run a1 codec_d3 $B $K=1 $D6
run a0b codec_d3 $B $NV $D6
run a1b codec_d3 $B $NV $K=1 $D6
run a1sp codec_d3 $B $K=1 BITSPARSE_BENCH_SIGN_PACK=on
run a0sp codec_d3 $B $NV BITSPARSE_BENCH_SIGN_PACK=on
run a1e4 codec_d3 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $K=1
run a0e4 codec_d3 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $NV
run a1f16 codec_d3 BITSPARSE_BENCH_DTYPES=f16 $K=1
run fused codec_d3 $B BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_OPS=copy,fused_forward,fused_backward,plain_forward,plain_backward
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
tar czf $OUT/res20.tgz -C /tmp res20; echo total $(( $(date +%s) - T0 ))s
