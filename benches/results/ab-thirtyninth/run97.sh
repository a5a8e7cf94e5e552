#!/bin/bash
# Thirty-ninth session: on an H200 only, every floor of issues 15 and 16 for the kept kernels in one
# call (no H200 has timed them since b3614a5's square, thirty-fourth session): BF16 compress, decompress
# (versions 1 and 2, both sign modes), fused and plain forward and backward; the Triton anchor; e4m3
# compress and decompress in both sign modes; a second BF16 run if the limit allows. On another card
# it stops before its set-up (its start is all it costs). Binary: codec_h (the kept kernels; run96.sh's
# header says how to rebuild it). Judge with `python3 benches/results/floors.py s1.json --anchor
# triton.jsonl` (and e1.json).
R=/tmp/res97
ONLY_GPU=H200
LIMIT=${LIMIT:-300}
. benches/results/device-call.sh
kernel_ab_env
bench_run s1 codec_h $FLOOR_ROWS
triton_anchor 150
bench_run e1 codec_h $E4M3_ROWS
bench_run s2 codec_h $FLOOR_ROWS
echo total $(($(date +%s) - T0))s
