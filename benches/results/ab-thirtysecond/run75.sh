#!/bin/bash
# Thirty-second session, call 1: how the arena kernels read their slot descriptor (CTRL_LOADS, a knob of
# experiments/thirtysecond/ctrl-loads.patch: 0 every thread loads base and status atomically — the
# committed code —, 1 plain loads through a second binding of `ctrl`, 2 one thread's atomic loads and a
# barrier) and the fused backward built for whether it writes `a` (codec_y = codec_x + write-a-mode).
# Binaries (carry `.gl` and `.devbin`): codec_x and ps_x (ctrl-loads.patch on cca6a8f), codec_y.
#   x0 x1 x2 y0 y1, twice: BF16 ρ = 0.5 / 0.176 / 0.05, unpacked: copy, the fused and plain forward and
#   backward (xK: codec_x with CTRL_LOADS=K in both kernels; yK: codec_y likewise); the Triton anchor
#   after the first round; then, if time is left, e4m3 compress / decompress (both sign modes; no arena
#   there, so no knob) and the F16 / F32 training-path rows at ρ = 0.176 with CTRL_LOADS 0 and 1.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 80 (540).
R=/tmp/res75
LIMIT=${LIMIT:-460}
. benches/results/device-call.sh
kernel_ab_env FUSED ps_x
for k in 1 2; do
  .devbin/ps_x --policy unchecked --filter FUSED --constants "compress.CTRL_LOADS=$k,decompress.CTRL_LOADS=$k" > "$R/stats_x$k.txt" 2>&1
done
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
c() { echo "BITSPARSE_KERNEL_CONSTANTS=compress.CTRL_LOADS=$1,decompress.CTRL_LOADS=$1"; }
round() {
  bench_run x0$1 codec_x $O "$(c 0)"
  bench_run x1$1 codec_x $O "$(c 1)"
  bench_run x2$1 codec_x $O "$(c 2)"
  bench_run y0$1 codec_y $O "$(c 0)"
  bench_run y1$1 codec_y $O "$(c 1)"
}
round a
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
round b
bench_run e codec_x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
F="BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
bench_run xF0 codec_x $F "$(c 0)"
bench_run xF1 codec_x $F "$(c 1)"
echo total $(($(date +%s) - T0))s
