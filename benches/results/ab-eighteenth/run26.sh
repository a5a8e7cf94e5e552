#!/bin/bash
# Eighteenth session, call 3: driver statistics of every kernel at 6fe44b8 (ps_h2 = 6fe44b8's tool with
# --shaders), of five rewrites of decompress_v2.wgsl (sv/B: ulen before the barrier; C: the final scan under
# a never-false flag; BC both; G: gather and deposit in one loop; H: two halves of rounds), and their times.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res26; mkdir -p $R
.devbin/ps_h2 --policy unchecked > $R/stats_all.txt 2>&1
for v in B C BC G H; do .devbin/ps_h2 --policy unchecked --filter decompress_v2 --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done
echo stats $(( $(date +%s) - T0 ))s
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
run h codec_h
run B codec_B
run BC codec_BC
run G codec_G
run H codec_H
run o0 codec_e1 BITSPARSE_KERNEL_CONSTANTS=decompress_v2.OPT=0
run h2 codec_h
tar czf $OUT/res26.tgz -C /tmp res26; echo total $(( $(date +%s) - T0 ))s
