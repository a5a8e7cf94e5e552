#!/bin/bash
# Twenty-sixth session, call 1. Binaries: `bash benches/results/experiments/twentysixth/build-binaries.sh`
# (BASE 1c495d7 = HEAD at the session's start):
#   c  HEAD.
#   m  the version-2 decoder with one mask path (`v2-decoder-one-mask-path.patch`): a mask tile writes its
#      words and their ranks into the arrays a positions tile fills (wg_mask, wg_first), so the output
#      reads every tile alike (two branches instead of three) and wg_rank (1 KB) is gone: the direct
#      ranks' +1.2 % at ρ = 0.5 was the price of the third branch and that array.
#   t  version 1's 16-bit deposit (`decompress-take16-shift.patch`, plain decompress and fused backward):
#      the gathered word shifted up a lane when only the high element takes a value, then the empty lanes
#      masked (bit i of the round bits to a lane of ones) — fewer instructions than three selects.
#   e  version 1's 8-bit deposit without a loop (`decompress-8bit-deposit.patch`, FP8 decompress): the
#      version-2 decoder's form (three data-dependent shifts, a lane mask by multiply) instead of a
#      loop of two selects per element; PERFORMANCE.md guessed it "not much shorter" without measuring.
# First Burn's MLP-block bit-identity tests (the binary of this session's burn/tests, which now names
# every differing gradient) with cubecl's logs (autotune decisions, compiled kernels), and once with
# autotune at its minimal level: on the H200 the ReLU² tests without checkpointing fail (call 3 of the
# twenty-fifth session), on lavapipe they pass.
R=/tmp/res61
LIMIT=500
. benches/results/device-call.sh
for x in c m t e; do .devbin/ps_$x --policy unchecked --filter decompress > $R/stats_$x.txt 2>&1; done
xz -dc .devbin/burntest.xz > /tmp/burntest && chmod +x /tmp/burntest
for t in f32_relu2 f32_relu f32_relu2_checkpointed f16_relu2; do
  CUBECL_DEBUG_LOG=$R/cubecl-$t.log timeout 120 /tmp/burntest --exact mlp::train_bit_identical_burn_$t > $R/burn-$t.log 2>&1
  echo "burn $t rc=$?"
done
CUBECL_AUTOTUNE_LEVEL=minimal timeout 120 /tmp/burntest train_bit_identical > $R/burn-minimal.log 2>&1
echo "burn minimal rc=$?"
save_results
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
for i in 1 2; do
  for x in c m t; do bench_run $x$i codec_$x BITSPARSE_BENCH_DTYPES=bf16 $D6; done
done
for x in e c m; do bench_run ${x}E codec_$x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both $D4; done
bench_run eE2 codec_e BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both $D4
for x in t c; do
  bench_run ${x}B codec_$x BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 \
    BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward
done
for x in m c; do bench_run ${x}F codec_$x BITSPARSE_BENCH_DTYPES=f16,f32 $D4; done
echo total $(($(date +%s) - T0))s
