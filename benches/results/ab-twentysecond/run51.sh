#!/bin/bash
# Twenty-second session, call 7: WG256 (codec_x: the plain 8- and 16-bit version-1 decompress in
# workgroups of 256 threads with half the rounds a thread: BF16 two, 8-bit one) against 78704b2
# (codec_c), interleaved x c x c for BF16, then e4m3 sign-packed.
# (Since rewritten with device-call.sh's `decoder_ab_env` and `bench_pairs`: the binaries receive the
# same arguments and variables in the same order, checked with stub binaries.)
R=/tmp/res51
. benches/results/device-call.sh
.devbin/ps_x --policy unchecked --filter "decompress.wgsl:decompress [" > $R/stats_x.txt 2>&1
decoder_ab_env
D=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05
bench_pairs x codec_x c codec_c BITSPARSE_BENCH_DTYPES=bf16 $D
bench_run xE codec_x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D
bench_run cE codec_c BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D
echo total $(($(date +%s) - T0))s
