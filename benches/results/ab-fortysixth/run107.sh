#!/bin/bash
# Forty-sixth session: one call for whatever card comes. On an H200, ../ab-fortyfirst/run104.sh (its
# A/Bs and the training path with the anchor; LIMIT passes through). On an H100 — a call naming
# nvidia-h200 gets one while H100s are lent — the kept code's standing table of both issues' floors on
# that card, as the thirty-sixth session's run87.sh took it for 847bee5 (HEAD's kernels are 3e055e4's
# since): every row of a floor in the same call as its copy (FLOOR_ROWS: BF16 copy, compress and
# decompress of versions 1 and 2, fused and plain forward and backward, both sign modes) twice, s1 and
# s2, around the Triton anchor; e4m3's codec in both sign modes (e1). Binary: .devbin/codec_k
# (../ab-fortyfirst/build104.sh). Judge with `python3 benches/results/floors.py DIR/s1.json --anchor
# DIR/triton.jsonl` (s2, e1). No run starts past LIMIT seconds (the anchor too, as in run106.sh), and one
# run takes at most 150 s: call with timeout_s ≈ LIMIT + 150, carry [".gl", ".devbin"].
ON_H200=benches/results/ab-fortyfirst/run104.sh
R=/tmp/res107
LIMIT=${LIMIT:-300}
. benches/results/device-call.sh
kernel_ab_env
bench_run s1 codec_k $FLOOR_ROWS
[ $(($(date +%s) - T0)) -le "$LIMIT" ] && triton_anchor 150
bench_run e1 codec_k $E4M3_ROWS
bench_run s2 codec_k $FLOOR_ROWS
echo total $(($(date +%s) - T0))s
