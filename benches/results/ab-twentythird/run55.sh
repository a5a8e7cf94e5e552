#!/bin/bash
# Twenty-third session, call 4: the version-2 decoder with a positions tile's mask cleared before the
# descriptor's uniform load (codec_b: one barrier less on the positions tiles' chain) against 9e1105e's
# decoder (codec_c), interleaved b c b c for BF16 at six densities (the last of the session's device
# time).
R=/tmp/res55
LIMIT=200
. benches/results/device-call.sh
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_SIGN_PACK=off
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
bench_run b1 codec_b BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run c1 codec_c BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run b2 codec_b BITSPARSE_BENCH_DTYPES=bf16 $D6
bench_run c2 codec_c BITSPARSE_BENCH_DTYPES=bf16 $D6
echo total $(($(date +%s) - T0))s
