#!/bin/bash
# Eighteenth session, call 4: register counts and times of rewrites read at run time from sv/<variant>
# (codec_sd = 6fe44b8 + BITSPARSE_SHADER_DIR, experiments/shader-dir.patch): the version-2 decoder's final
# scan in a block (C: under a never-set flag; C2: under `enc != 3`; GC2: C2 with gather and deposit in one
# loop) and the fused backward's gathers one round at a time (F1), its mask loads and scan in a block (F3),
# both (F13).
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res27; mkdir -p $R
.devbin/ps_h2 --policy unchecked > $R/stats_all.txt 2>&1
for v in C C2 GC2; do .devbin/ps_h2 --policy unchecked --filter decompress_v2 --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done
for v in F1 F3 F13; do .devbin/ps_h2 --policy unchecked --filter decompress.wgsl --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done
echo stats $(( $(date +%s) - T0 ))s
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_TILE_ORDER=unordered
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
V2="BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01"
FB="BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05"
run fbh codec_sd $FB
run fbF1 codec_sd $FB BITSPARSE_SHADER_DIR=.devbin/sv/F1
run fbF3 codec_sd $FB BITSPARSE_SHADER_DIR=.devbin/sv/F3
run fbF13 codec_sd $FB BITSPARSE_SHADER_DIR=.devbin/sv/F13
run h codec_sd $V2
run C codec_sd $V2 BITSPARSE_SHADER_DIR=.devbin/sv/C
run C2 codec_sd $V2 BITSPARSE_SHADER_DIR=.devbin/sv/C2
run GC2 codec_sd $V2 BITSPARSE_SHADER_DIR=.devbin/sv/GC2
run fbh2 codec_sd $FB
run C2b codec_sd $V2 BITSPARSE_SHADER_DIR=.devbin/sv/C2
tar czf $OUT/res27.tgz -C /tmp res27; echo total $(( $(date +%s) - T0 ))s
