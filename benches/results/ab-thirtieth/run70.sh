#!/bin/bash
# Thirtieth session, call 3 (short budget): direct `u16` value stores (BITSPARSE_STAGING=direct) against
# the `u16` slots (default) for the BF16 fused forward and compress now that LANE_MASK took the
# unordered compress's first barrier and its workgroup mask away (the thirteenth session measured
# direct BF16 stores 23 % slower at ρ = 0.176 with both). One binary, codec_q (b486e5a), s1 d1 s2 d2.
R=/tmp/res70
LIMIT=${LIMIT:-200}
. benches/results/device-call.sh
kernel_ab_env
export BITSPARSE_BENCH_DTYPES=bf16
export BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward
for i in 1 2; do
  bench_run s$i codec_q
  bench_run d$i codec_q BITSPARSE_STAGING=direct
done
echo total $(($(date +%s) - T0))s
