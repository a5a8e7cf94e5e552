#!/bin/bash
# Prepared in the twenty-ninth session for the next one: the version-2 writer's POSITIONS_GAIN (a
# positions tile only where it is smaller than the mask tile by more than N/64; 0 is the CPU encoder's
# choice). The one-pass decoder decodes mask tiles at version 1's speed (H100: 0.2410 against 0.2447 ms
# at ρ = 0.5) but positions tiles far slower (0.2909 against 0.1988 at 0.176, where they save ~7 % of
# a tile); with N = 8 (12.5 %) the tiles between ρ ≈ 0.13 and 0.3 become mask tiles, with N = 64 all
# but the sparsest. Decode time and size (`ratio`, `bound_fraction`) of each, interleaved, BF16 at six
# densities (p0 g8 g64 p0 g8 g64), then e4m3 and F32 once each. Binaries:
# `bash benches/results/ab-twentyseventh/build-binaries.sh` (codec_h, ps_h; burntest.xz unused here),
# carried with `carry: [".gl", ".devbin"]`; `timeout_s` ≈ LIMIT + 70.
R=/tmp/res67
LIMIT=${LIMIT:-400}
. benches/results/device-call.sh
decoder_ab_env
export BITSPARSE_BENCH_OPS=copy,compress,decompress
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.3,0.176,0.1,0.05,0.01
P0=BITSPARSE_KERNEL_CONSTANTS=compress_v2.POSITIONS_GAIN=0
G8=BITSPARSE_KERNEL_CONSTANTS=compress_v2.POSITIONS_GAIN=8
G64=BITSPARSE_KERNEL_CONSTANTS=compress_v2.POSITIONS_GAIN=64
for i in 1 2; do
  bench_run p$i codec_h $P0 BITSPARSE_BENCH_DTYPES=bf16 $D6
  bench_run g$i codec_h $G8 BITSPARSE_BENCH_DTYPES=bf16 $D6
  bench_run G$i codec_h $G64 BITSPARSE_BENCH_DTYPES=bf16 $D6
done
for v in p:$P0 g:$G8; do
  bench_run ${v%%:*}E codec_h ${v#*:} BITSPARSE_BENCH_DTYPES=e4m3,f32 BITSPARSE_BENCH_DENSITIES=0.3,0.176,0.1
done
echo total $(($(date +%s) - T0))s
