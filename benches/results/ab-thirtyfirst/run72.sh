#!/bin/bash
# Thirty-first session, call 2: the codec kernels specialised by override constants (one binary,
# .devbin/codec_k and ps_k of the working tree with the SIGN_MODE / ACT_MODE / ALL_FULL knobs; carry
# `.gl` and `.devbin`), interleaved b1 s1 f1 b2 s2 f2. The knobs (TUNABLE entries `compress.SIGN_MODE`
# ... and `ACT_MODE`) existed only in that working tree: 872d718 made the host choose the modes for
# each call (kernels.rs `Modes`), without ACT_MODE and without ALL_FULL for the decompress, and this
# script no longer runs against later commits.
#   b  no constants: sign packing, the activation and the partial tile tested at run time (today);
#   s  compress and decompress built for unpacked values and ReLU² (SIGN_MODE=0, ACT_MODE=1);
#   f  s and built for dispatches without a partial tile (ALL_FULL=1; 201M = 49,152 whole tiles).
# BF16, unordered, ρ = 0.5 / 0.176 / 0.05, copy, the fused and plain forward and backward, compress and
# decompress. Every output is verified bit-exact after timing (a wrong knob shows in bench.md's notes).
R=/tmp/res72
LIMIT=${LIMIT:-520}
. benches/results/device-call.sh
S=compress.SIGN_MODE=0,compress.ACT_MODE=1,decompress.SIGN_MODE=0,decompress.ACT_MODE=1
F=$S,compress.ALL_FULL=1,decompress.ALL_FULL=1
kernel_ab_env
.devbin/ps_k --policy unchecked --filter FUSED > $R/stats_b.txt 2>&1
.devbin/ps_k --policy unchecked --filter FUSED --constants $S > $R/stats_s.txt 2>&1
.devbin/ps_k --policy unchecked --filter FUSED --constants $F > $R/stats_f.txt 2>&1
save_results
O=BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward,compress,decompress
for i in 1 2; do
  bench_run b$i codec_k BITSPARSE_BENCH_DTYPES=bf16 $O
  bench_run s$i codec_k BITSPARSE_BENCH_DTYPES=bf16 $O BITSPARSE_KERNEL_CONSTANTS=$S
  bench_run f$i codec_k BITSPARSE_BENCH_DTYPES=bf16 $O BITSPARSE_KERNEL_CONSTANTS=$F
done
echo total $(($(date +%s) - T0))s
