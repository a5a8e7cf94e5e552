#!/bin/bash
# Twenty-first session, call 5: the BF16 kernels' skeletons with 477f78e's code (timing only; codec_k =
# experiments/twentyfirst/ablate-skeletons.patch: the compress and fused forward without staging and value
# stores, the fused backward without its stream gathers and g loads, both replaced by cheap arithmetic on
# the mask and indices so the decode and math stay), beside the committed kernels (codec_h).
R=/tmp/res43
. benches/results/device-call.sh
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DTYPES=bf16
bench_run k1 codec_k BITSPARSE_BENCH_NO_VERIFY=1 BITSPARSE_BENCH_OPS=copy,compress,fused_forward,fused_backward
bench_run h1 codec_h BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward,fused_backward,plain_backward
