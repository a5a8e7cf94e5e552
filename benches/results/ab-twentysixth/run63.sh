#!/bin/bash
# Twenty-sixth session, call 3: which matmul kernels Burn's autotune picks when the F32 ReLU² block test
# fails on the H200 (it passed in call 1 and failed in call 2). Burn's block-test binary of f62aa0c
# (.devbin/burntest.xz), `train_bit_identical_burn_f32_relu2` three times, each with cubecl's log and no
# persistent autotune cache (every run tunes afresh).
R=/tmp/res63
. benches/results/device-call.sh
xz -dc .devbin/burntest.xz > /tmp/burntest && chmod +x /tmp/burntest
for i in 1 2 3; do
  CUBECL_AUTOTUNE_CACHE=0 CUBECL_DEBUG_LOG=/tmp/cubecl-$i.log timeout 120 /tmp/burntest --exact mlp::train_bit_identical_burn_f32_relu2 > $R/burn-f32-relu2-$i.log 2>&1
  echo "run $i rc=$?"
  grep -E "^Fastest result|^Autotune\[" /tmp/cubecl-$i.log > $R/autotune-$i.txt
  save_results
done
echo total $(($(date +%s) - T0))s
