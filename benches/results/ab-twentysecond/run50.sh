#!/bin/bash
# Twenty-second session, call 6: WG64 (codec_w: the 8-bit version-1 decompress in workgroups of 64
# threads, four rounds a thread like BF16, instead of 128 threads and two rounds) against 78704b2
# (codec_c), interleaved w c w c, e4m3 both sign modes, then e5m2.
R=/tmp/res50
. benches/results/device-call.sh
.devbin/ps_w --policy unchecked --filter "decompress.wgsl:decompress [BITS8" > $R/stats_w.txt 2>&1
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_SIGN_PACK=both
D=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05,0.01
bench_run w1 codec_w BITSPARSE_BENCH_DTYPES=e4m3 $D
bench_run c1 codec_c BITSPARSE_BENCH_DTYPES=e4m3 $D
bench_run w2 codec_w BITSPARSE_BENCH_DTYPES=e4m3 $D
bench_run c2 codec_c BITSPARSE_BENCH_DTYPES=e4m3 $D
bench_run w5 codec_w BITSPARSE_BENCH_DTYPES=e5m2 $D BITSPARSE_BENCH_SIGN_PACK=off
bench_run c5 codec_c BITSPARSE_BENCH_DTYPES=e5m2 $D BITSPARSE_BENCH_SIGN_PACK=off
echo total $(($(date +%s) - T0))s
