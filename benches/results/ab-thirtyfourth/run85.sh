#!/bin/bash
# Prepared for the next session (this one had no H200): the thirty-fourth session's kept forward square
# (b3614a5, measured on an H100 only) against the kernels before it, on the H200, with the Triton anchor
# in the same call — issue 15's floors with the kept code.
# Binaries (carry `.gl` and `.devbin`; built at the end of the thirty-fourth session):
#   codec_k — ae87f02 + experiments/thirtythird/knobs-next.patch, every knob 0 (the kernels before b3614a5);
#   codec_h — 8f7bfd3 (b3614a5's square, `bf16_pair` since; `cargo bench -p bitsparse-bench --bench codec
#             --no-run`, stripped);
#   gpu_t — the GPU tests at 8f7bfd3 (fused, arena, pooled on the device: the special values through the
#           new square on NVIDIA; the GL-backend tests fail there, the device's GL adapter opens no device).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res85
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
kernel_ab_env
gpu_tests gpu_t fused arena pooled
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress"
bench_run a0 codec_k $O
bench_run h0 codec_h $O
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
for i in 1 2; do
  bench_run fa$i codec_k $FWD
  bench_run fh$i codec_h $FWD
done
bench_run e0 codec_h $E
bench_run h9 codec_h $O
echo total $(($(date +%s) - T0))s
