#!/bin/bash
# Twenty-first session, call 1: the twentieth session's prepared call, run as it stands (GB16 and F32R
# against 50714dd's shaders, each binary twice, interleaved; register counts of both patched trees).
# Its results here are call1-<name>.json and call1-stats_{x,f}.txt.
exec bash benches/results/experiments/twentieth/next-call.sh "$@"
