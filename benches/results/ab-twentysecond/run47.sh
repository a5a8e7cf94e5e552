#!/bin/bash
# Twenty-second session, call 3: the committed version-2 decoder (codec_c = 78704b2: small chunks only
# where a positions tile's upper vector has at most 512 bits) against 5f7fe2c (codec_b), interleaved
# c b c b for BF16 at six densities; e4m3 sign-packed, F16 and F32 at four.
# (Since rewritten with device-call.sh's `decoder_ab_env` and `bench_pairs`: the binaries receive the
# same arguments and variables in the same order, checked with stub binaries.)
R=/tmp/res47
. benches/results/device-call.sh
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
bench_pairs c codec_c b codec_b BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run bE codec_b BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run cF codec_c BITSPARSE_BENCH_DTYPES=f16,f32 $D4
bench_run bF codec_b BITSPARSE_BENCH_DTYPES=f16,f32 $D4
echo total $(($(date +%s) - T0))s
