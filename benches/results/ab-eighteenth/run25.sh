#!/bin/bash
# Eighteenth session, call 2: why codec_e1 with OPT=0 (6fe44b8 + the positions-by-word patch, knob off)
# decodes version 2 8-9 % faster than 6fe44b8: the driver's statistics of both, and workgroup memory that
# is allocated but never used (PAD knob, codec_pad = 6fe44b8 + lib/pad.wgsl in compress, decompress and
# decompress_v2) at 0 / 1 / 2 / 4 / 8 KB.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res25; mkdir -p $R
.devbin/ps_h --policy unchecked --filter decompress > $R/stats_h.txt 2>&1
.devbin/ps_e1 --policy unchecked --filter decompress_v2 --constants decompress_v2.OPT=0 > $R/stats_e1_o0.txt 2>&1
.devbin/ps_e1 --policy unchecked --filter decompress_v2 --constants decompress_v2.OPT=1 > $R/stats_e1_o1.txt 2>&1
for p in 1 4 8; do .devbin/ps_pad --policy unchecked --filter compress --constants compress.PAD=$p,decompress.PAD=$p,decompress_v2.PAD=$p > $R/stats_pad$p.txt 2>&1; done
.devbin/ps_pad --policy unchecked --filter compress > $R/stats_pad0.txt 2>&1
echo stats $(( $(date +%s) - T0 ))s
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=off
export BITSPARSE_BENCH_TILE_ORDER=unordered BITSPARSE_BENCH_OPS=copy,compress,decompress BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
run() { # name bin [env...]
  local name=$1 bin=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/$bin --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
}
K=BITSPARSE_KERNEL_CONSTANTS
pad() { echo compress.PAD=$1,decompress.PAD=$1,decompress_v2.PAD=$1; }
run p0 codec_pad $K=$(pad 0)
run p1 codec_pad $K=$(pad 1)
run p2 codec_pad $K=$(pad 2)
run p4 codec_pad $K=$(pad 4)
run p8 codec_pad $K=$(pad 8)
run h codec_h
run o0 codec_e1 $K=decompress_v2.OPT=0
run p4b codec_pad $K=$(pad 4)
run p15 codec_pad $K=$(pad 15)
tar czf $OUT/res25.tgz -C /tmp res25; echo total $(( $(date +%s) - T0 ))s
