#!/bin/bash
# Nineteenth session, call 4: the committed decoders (codec_c = 3a18df2: gathers clamped only in tiles near
# the binding's end) beside 552a82f (codec_sd without a shader directory = 552a82f's shaders): BF16
# unpacked and sign-packed, e4m3, F32 and F16; the training-path kernels with the Triton anchor in the same
# call; register counts.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res33; mkdir -p $R
.devbin/ps --policy unchecked --filter decompress > $R/stats_c.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 470 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res33.tgz -C /tmp res33
}
D="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress,fused_backward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress"
F="BITSPARSE_BENCH_DTYPES=f32,f16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,decompress,fused_backward"
T="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
run c1 codec_c $D
run h1 codec_sd $D
run ce codec_c $E
run he codec_sd $E
run cbase codec_c $T
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$? $(( $(date +%s) - T0 ))s
tar czf $OUT/res33.tgz -C /tmp res33
run cF codec_c $F
run hF codec_sd $F
run c2 codec_c $D
echo total $(( $(date +%s) - T0 ))s
