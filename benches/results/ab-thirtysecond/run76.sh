#!/bin/bash
# Thirty-second session, call 2: the decompress reading its slot descriptor with plain loads (codec_n,
# ctrl declared `array<u32>` in decompress.wgsl) against cca6a8f's per-thread atomic loads (codec_x with
# CTRL_LOADS=0, which is cca6a8f's code), and codec_n's G0_EARLY knob (round 0's g loaded first).
# Binaries (carry `.gl` and `.devbin`): codec_x (ctrl-loads.patch on cca6a8f), codec_n (this tree).
#   x0 n0 n1, twice: BF16 ρ = 0.5 / 0.176 / 0.05, unpacked: copy, the fused and plain forward and
#   backward; the Triton anchor after the first round; then e4m3 compress / decompress (both sign
#   modes) and the F16 / F32 training-path rows at ρ = 0.176 (codec_n).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 80 (540).
R=/tmp/res76
LIMIT=${LIMIT:-460}
. benches/results/device-call.sh
kernel_ab_env
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
round() {
  bench_run x0$1 codec_x $O BITSPARSE_KERNEL_CONSTANTS=compress.CTRL_LOADS=0,decompress.CTRL_LOADS=0
  bench_run n0$1 codec_n $O BITSPARSE_KERNEL_CONSTANTS=decompress.G0_EARLY=0
  bench_run n1$1 codec_n $O BITSPARSE_KERNEL_CONSTANTS=decompress.G0_EARLY=1
}
round a
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
round b
bench_run e codec_n BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress
bench_run F codec_n BITSPARSE_BENCH_DTYPES=f16,f32 BITSPARSE_BENCH_DENSITIES=0.176 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward
echo total $(($(date +%s) - T0))s
