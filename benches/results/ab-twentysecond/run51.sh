#!/bin/bash
# Twenty-second session, call 7: WG256 (codec_x: the plain 8- and 16-bit version-1 decompress in
# workgroups of 256 threads with half the rounds a thread: BF16 two, 8-bit one) against 78704b2
# (codec_c), interleaved x c x c for BF16, then e4m3 sign-packed.
R=/tmp/res51
. benches/results/device-call.sh
.devbin/ps_x --policy unchecked --filter "decompress.wgsl:decompress [" > $R/stats_x.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_SIGN_PACK=off
D=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
bench_run x1 codec_x BITSPARSE_BENCH_DTYPES=bf16 $D
bench_run c1 codec_c BITSPARSE_BENCH_DTYPES=bf16 $D
bench_run x2 codec_x BITSPARSE_BENCH_DTYPES=bf16 $D
bench_run c2 codec_c BITSPARSE_BENCH_DTYPES=bf16 $D
bench_run xE codec_x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D
echo total $(($(date +%s) - T0))s
