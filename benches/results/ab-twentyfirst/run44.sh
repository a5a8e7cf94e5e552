#!/bin/bash
# Twenty-first session, call 6: SPARSE (codec_s: tiles with at most compress.SPARSE_STAGE_MAX values stage
# them value by value, one loop per thread over every set bit of its rounds) — the same binary with the
# knob at 0 (off: 477f78e's staging), 512 (the default as built) and 4096 (every tile of at most one
# round's slots), BF16 compress (both sign modes) and fused forward.
R=/tmp/res44
. benches/results/device-call.sh
export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_DTYPES=bf16
export BITSPARSE_BENCH_OPS=copy,compress,fused_forward
K=BITSPARSE_KERNEL_CONSTANTS=compress.SPARSE_STAGE_MAX
bench_run s0 codec_s $K=0; bench_run s512 codec_s $K=512; bench_run s4096 codec_s $K=4096; bench_run s0b codec_s $K=0
