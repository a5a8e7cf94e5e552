#!/bin/bash
# Twenty-second session, call 5: SCATTER (codec_s: a version-2 positions tile of at most 1024 values,
# 8- and 16-bit elements, rebuilt in workgroup memory from its values loaded by rank; no mask, second
# scan or gather) against 78704b2 (codec_c), interleaved s c s c for BF16 at six densities; e4m3
# sign-packed and F16 at four.
# (Since rewritten with device-call.sh's `decoder_ab_env` and `bench_pairs`: the binaries receive the
# same arguments and variables in the same order, checked with stub binaries.)
R=/tmp/res49
. benches/results/device-call.sh
.devbin/ps_s --policy unchecked --filter decompress_v2 > $R/stats_s.txt 2>&1
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
bench_pairs s codec_s c codec_c BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run sE codec_s BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4
bench_run sF codec_s BITSPARSE_BENCH_DTYPES=f16 $D4
bench_run cF codec_c BITSPARSE_BENCH_DTYPES=f16 $D4
echo total $(($(date +%s) - T0))s
