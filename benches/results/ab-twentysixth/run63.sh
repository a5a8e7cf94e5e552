#!/bin/bash
# Twenty-sixth session, call 3: which matmul kernels Burn's autotune picks when the F32 ReLU² block test
# fails on the H200 (it passed in call 1 and failed in call 2). Burn's block-test binary of f62aa0c
# (.devbin/burntest.xz), `train_bit_identical_burn_f32_relu2` three times, each with cubecl's log and no
# persistent autotune cache (every run tunes afresh).
R=/tmp/res63
. benches/results/device-call.sh
burn_autotune_runs 3
echo total $(($(date +%s) - T0))s
