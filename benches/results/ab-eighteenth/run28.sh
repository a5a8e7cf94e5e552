#!/bin/bash
# Eighteenth session, call 5: sv/D1G = version 1's decompress gathering each round in the loop that
# deposits it (plain, sign-packed, FP8 and F32 paths; the fused backward as F1) + the version-2 decoder in
# one loop (G), against 6fe44b8 (codec_sd without a shader directory), every output verified.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res28; mkdir -p $R
.devbin/ps_h2 --policy unchecked --filter decompress --shaders .devbin/sv/D1G > $R/stats_D1G.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 330 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
D=BITSPARSE_SHADER_DIR=.devbin/sv/D1G
P="BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_SIGN_PACK=off"
S="BITSPARSE_BENCH_OPS=copy,decompress,fused_backward,plain_backward BITSPARSE_BENCH_SIGN_PACK=on"
E="BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_SIGN_PACK=on"
run bh codec_sd $P BITSPARSE_BENCH_DTYPES=bf16
run bd codec_sd $P BITSPARSE_BENCH_DTYPES=bf16 $D
run eh codec_sd $E BITSPARSE_BENCH_DTYPES=e4m3
run ed codec_sd $E BITSPARSE_BENCH_DTYPES=e4m3 $D
run sh codec_sd $S BITSPARSE_BENCH_DTYPES=bf16
run sd codec_sd $S BITSPARSE_BENCH_DTYPES=bf16 $D
run fh codec_sd $P BITSPARSE_BENCH_DTYPES=f32
run fd codec_sd $P BITSPARSE_BENCH_DTYPES=f32 $D
run hd codec_sd $P BITSPARSE_BENCH_DTYPES=f16 $D
run bd2 codec_sd $P BITSPARSE_BENCH_DTYPES=bf16 $D
run bh2 codec_sd $P BITSPARSE_BENCH_DTYPES=bf16
tar czf $OUT/res28.tgz -C /tmp res28; echo total $(( $(date +%s) - T0 ))s
