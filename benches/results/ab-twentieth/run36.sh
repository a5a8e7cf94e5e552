#!/bin/bash
# Twentieth session, call 2: the committed code with the packed workgroup scan (codec_c = f86630c): the
# training-path kernels (BF16, F16, F32) with the Triton anchor in the same call, BF16 compress and
# decompress unpacked and sign-packed, e4m3, register counts; then train_ffn's steady-state step times.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
R=/tmp/res36; mkdir -p $R
.devbin/ps --policy unchecked > $R/stats_c.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
run() { # name [env...]
  local name=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 500 ]; then echo "$name skipped"; return; fi
  local t0=$(date +%s)
  env "$@" .devbin/codec_c --no-progress --out /tmp/o_$name > $R/$name.log 2>&1
  local rc=$?
  cp /tmp/o_$name/bench.json $R/$name.json 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s"
  tar czf $OUT/res36.tgz -C /tmp res36
}
T="BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
run cT BITSPARSE_BENCH_DTYPES=bf16 $T
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$? $(( $(date +%s) - T0 ))s
tar czf $OUT/res36.tgz -C /tmp res36
run cD BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
run cE BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress,decompress
run cF BITSPARSE_BENCH_DTYPES=f16,f32 $T
run cT2 BITSPARSE_BENCH_DTYPES=bf16 $T
if [ $(( $(date +%s) - T0 )) -lt 480 ]; then
  timeout 100 .devbin/train_ffn --d 256 --layers 8 --tokens 4096 --context 4 --lr 2e-3 --steps 400 --log-every 100 \
    --fp8 none --json --plot /tmp/ffn.svg > $R/train_ffn.json 2> $R/train_ffn.err; echo train_ffn rc=$? $(( $(date +%s) - T0 ))s
fi
tar czf $OUT/res36.tgz -C /tmp res36
echo total $(( $(date +%s) - T0 ))s
