#!/bin/bash
# Thirty-sixth session: one call for whatever card comes. On an H200, ../ab-thirtyfifth/run86.sh (issue
# 15's floors with the kept code, the Triton anchor, DEPOSIT8 and the forward square's A/B). On any
# other card — five calls this session asked for an H200 and got an H100 — the kept code's standing
# table of both issues' floors on that card, every row of a floor in the same call as its copy: BF16
# copy, compress and decompress (versions 1 and 2), fused and plain forward and backward, both sign
# modes, twice (s1, s2) around the Triton anchor; e4m3 compress and decompress, both sign modes (e1).
# Binaries (carry `.gl` and `.devbin`): codec_h (847bee5: `cargo bench -p bitsparse-bench --bench codec
# --no-run`, stripped), codec_k (ae87f02 + experiments/thirtythird/knobs-next.patch) for run86.sh.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)
case "$gpu" in
  *H200*) exec bash benches/results/ab-thirtyfifth/run86.sh ;;
esac
R=/tmp/res87
LIMIT=${LIMIT:-300}
. benches/results/device-call.sh
kernel_ab_env
A="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress,fused_forward,plain_forward,fused_backward,plain_backward"
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress"
bench_run s1 codec_h $A
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
bench_run e1 codec_h $E
bench_run s2 codec_h $A
echo total $(($(date +%s) - T0))s
