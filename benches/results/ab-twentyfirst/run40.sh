#!/bin/bash
# Twenty-first session, call 2: every 32-bit kernel without arrays indexed by the round (codec_y: the
# plain F32 decompress gathers and decodes a round at a time from rotated masks and packed starts, as
# the fused backward of call 1; the direct-store compress and fused forward place values from the
# same rotation) against 50714dd (codec_n), F32, interleaved y n y; register counts of codec_y's tree.
R=/tmp/res40
. benches/results/device-call.sh
.devbin/ps_y --policy unchecked --filter BITS32 > $R/stats_y.txt 2>&1
save_results
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off BITSPARSE_BENCH_DTYPES=f32
export BITSPARSE_BENCH_OPS=copy,compress,decompress,fused_forward,plain_forward,fused_backward,plain_backward
bench_run y1 codec_y; bench_run n1 codec_n; bench_run y2 codec_y
