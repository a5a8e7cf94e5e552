#!/bin/bash
# Thirty-first session, call 1: the twenty-ninth session's standing rows (run66.sh: BF16 training-path
# rows and the Triton anchor, compress/decompress v1 and v2 in both sign modes, Burn's F32 ReLU² block
# test twice and the two-device test, F16/F32 training-path rows, e4m3) on d0372e2's binaries (`bash
# benches/results/ab-twentyseventh/build-binaries.sh`; carry `.gl` and `.devbin`), into /tmp/res71.
R=/tmp/res71 exec bash benches/results/ab-twentyninth/run66.sh
