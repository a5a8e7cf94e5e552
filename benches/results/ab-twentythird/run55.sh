#!/bin/bash
# Twenty-third session, call 4: the version-2 decoder with a positions tile's mask cleared before the
# descriptor's uniform load (codec_b: one barrier less on the positions tiles' chain) against 9e1105e's
# decoder (codec_c), interleaved b c b c for BF16 at six densities (the last of the session's device
# time).
# (Since rewritten with device-call.sh's `decoder_ab_env` and `bench_pairs`: the binaries receive the
# same arguments and variables in the same order, checked with stub binaries.)
R=/tmp/res55
LIMIT=200
. benches/results/device-call.sh
decoder_ab_env
bench_pairs b codec_b c codec_c BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
echo total $(($(date +%s) - T0))s
