#!/bin/bash
# Twenty-first session, call 4: ROT1 (codec_r: the 32-bit direct-store compress and fused forward keep
# no round-indexed array at all — the rounds' masks gathered into one word in the first pass, the counts
# packed from it, the values placed from it and the packed starts) against 477f78e (codec_h), F32,
# interleaved r h r; register counts of codec_r's tree.
R=/tmp/res42
. benches/results/device-call.sh
.devbin/ps_r --policy unchecked --filter BITS32 > $R/stats_r.txt 2>&1
save_results
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DTYPES=f32
export BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward
bench_run r1 codec_r; bench_run h1 codec_h; bench_run r2 codec_r
