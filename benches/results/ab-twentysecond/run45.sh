#!/bin/bash
# Twenty-second session, call 1: the version-2 decoder reading a positions tile's upper bits in chunks
# of 1-32 bits a thread (codec_c) against 5f7fe2c (codec_b, one 32-bit word a thread), interleaved;
# BF16 at six densities, then F16 / e4m3 sign-packed / F32 at three.
# (Since rewritten with device-call.sh's `decoder_ab_env` and `bench_pairs`: the binaries receive the
# same arguments and variables in the same order, checked with stub binaries.)
R=/tmp/res45
. benches/results/device-call.sh
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D3=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
bench_pairs b codec_b c codec_c BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run bE codec_b BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D3
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D3
bench_run bF codec_b BITSPARSE_BENCH_DTYPES=f16,f32 $D3
bench_run cF codec_c BITSPARSE_BENCH_DTYPES=f16,f32 $D3
echo total $(($(date +%s) - T0))s
