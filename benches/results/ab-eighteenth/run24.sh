#!/bin/bash
# Eighteenth session, call 1: the two prepared knob patches (decompress_v2.OPT=1 positions tiles per mask word;
# decompress.TAKE bits) in one binary (codec_e1 = 6fe44b8 + both patches), and 6fe44b8 itself (codec_h).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_OPS=copy,decompress
D6=0.5,0.176,0.1,0.05,0.02,0.01
D3=0.5,0.176,0.05
R=/tmp/res24; mkdir -p $R
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 480 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
K=BITSPARSE_KERNEL_CONSTANTS
run h   codec_h  BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DENSITIES=$D6
run o0  codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DENSITIES=$D6 $K=decompress_v2.OPT=0
run o1  codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DENSITIES=$D6 $K=decompress_v2.OPT=1
run sp00 codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=0,decompress_v2.OPT=0
run sp31 codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=3,decompress_v2.OPT=1
run sp11 codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=1,decompress_v2.OPT=1
run sp20 codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=2,decompress_v2.OPT=0
run e00 codec_e1 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=0,decompress_v2.OPT=0
run e31 codec_e1 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=3,decompress_v2.OPT=1
run e11 codec_e1 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=1,decompress_v2.OPT=1
run e20 codec_e1 BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_DENSITIES=$D3 $K=decompress.TAKE=2,decompress_v2.OPT=0
run o1b codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DENSITIES=$D6 $K=decompress_v2.OPT=1
run o0b codec_e1 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DENSITIES=$D6 $K=decompress_v2.OPT=0
tar czf $OUT/res24.tgz -C /tmp res24; echo total $(( $(date +%s) - T0 ))s
