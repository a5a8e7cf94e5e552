#!/bin/bash
# Twenty-third session, call 1: the version-2 decoder building a positions tile's mask word by word
# (codec_p: every thread finds its word's window of Elias–Fano upper bits by a binary search over the
# zeros and sets its elements' bits in its own register; no workgroup atomics) against 9e1105e
# (codec_c), interleaved p c p c for BF16 at six densities; e4m3 sign-packed, F16 and F32 at four;
# the driver's register and shared-memory counts of both decoders.
# (Since rewritten with device-call.sh's `decoder_ab_env` and `bench_pairs`: the binaries receive the
# same arguments and variables in the same order, checked with stub binaries.)
R=/tmp/res52
. benches/results/device-call.sh
.devbin/ps_c --policy unchecked --filter decompress_v2 > $R/stats_c.txt 2>&1
.devbin/ps_p --policy unchecked --filter decompress_v2 > $R/stats_p.txt 2>&1
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
bench_pairs p codec_p c codec_c BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run pE codec_p BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run pF codec_p BITSPARSE_BENCH_DTYPES=f16,f32 $D4
bench_run cF codec_c BITSPARSE_BENCH_DTYPES=f16,f32 $D4
echo total $(($(date +%s) - T0))s
