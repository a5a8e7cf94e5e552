#!/bin/bash
# Twentieth session, call 1: the nineteenth session's prepared experiments (PS, PS2: the packed workgroup
# scan; U16: the plain 16-bit decompress reads values as u16 halves) beside the committed code (13b5c51),
# through codec_sd (13b5c51 + ../experiments/eighteenth/shader-dir.patch; without a shader directory it
# runs the committed shaders); also the committed sign-packed and e4m3 compress, not re-timed since the
# eighteenth session. Register counts of every pipeline for each variant.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res35; mkdir -p $R
.devbin/ps --policy unchecked > $R/stats_h.txt 2>&1
for v in PS PS2 U16; do .devbin/ps --policy unchecked --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done
tar czf $OUT/res35.tgz -C /tmp res35
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
run() { # name [env...]
  local name=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 500 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/codec_sd --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res35.tgz -C /tmp res35
}
ALL="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,compress,decompress,fused_forward,fused_backward"
U="BITSPARSE_BENCH_DTYPES=bf16,f16 BITSPARSE_BENCH_OPS=copy,decompress"
run h $ALL
run PS $ALL BITSPARSE_SHADER_DIR=.devbin/sv/PS
run PS2 $ALL BITSPARSE_SHADER_DIR=.devbin/sv/PS2
run U16 $U BITSPARSE_SHADER_DIR=.devbin/sv/U16
run hU $U
run h2 $ALL
run hsp BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=on BITSPARSE_BENCH_OPS=copy,compress,decompress
run he BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress,decompress
echo total $(( $(date +%s) - T0 ))s
