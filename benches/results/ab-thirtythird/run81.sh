#!/bin/bash
# Never ran: its questions ran in the thirty-fourth session's call 1 (../ab-thirtyfourth/run82.sh, on an
# H100), which repeats these lines with one more binary.
# Prepared for the next session (not run: this session's device time ran out in refused starts). The
# question call 1 left open: which of STATUS_EARLY and the forward's square in the gradient's form
# (compress LEAN bit 2) made call 1's `y` fused forward 5 % slower, whether either helps alone, and the
# backward's square of `a` (decompress LEAN bit 1) on top of the kept gradient; and DEPOSIT8 (8-bit
# elements take their values by per-element shifts and one byte mask instead of take_values' serial
# loop: e4m3 decompress, 0.581 of copy at ρ = 0.176 in call 1 against its 0.65 floor).
# Binaries (carry `.gl` and `.devbin`; built at the end of the thirty-third session and left in .devbin):
# at ae87f02 (or any later commit with the same kernels)
# `git apply benches/results/experiments/thirtythird/knobs-next.patch`,
# `cargo bench -p bitsparse-bench --bench codec --no-run`, strip the binary to .devbin/codec_k;
# `cargo build --release -p bitsparse-tools --bin pipeline_stats`, strip it to .devbin/ps_k (the driver's
# register counts of each variant's fused pipelines, built for the modes the bench's calls fix); and at
# ae87f02 itself `cargo test --release -p bitsparse --test gpu --no-run`, strip the binary to .devbin/gpu_t:
# the fused, arena and pooled GPU tests on the H200 (the special values — NaNs of both signs, ±∞, ±0 —
# through the fused kernels, whose gradient since b9131c4 takes its NaNs from the multiply; CI runs them
# on lavapipe only).
#   a = all 0 (ae87f02's kernels), c = STATUS_EARLY=1, d = compress LEAN=4, e = decompress LEAN=2,
#   g = decompress DEPOSIT8=1 (e4m3 and e5m2 copy and decompress, both sign modes);
#   full runs of a (with the Triton anchor: the training-path share of the kept code), then the
#   forward alone for a c d and the backward alone for a e, twice, BF16 ρ = 0.5 / 0.176 / 0.05, unpacked.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res81
LIMIT=${LIMIT:-420}
. benches/results/device-call.sh
kernel_ab_env
FIX=compress.ACT_MODE=1,compress.SIGN_MODE=0,compress.ALL_FULL=1,decompress.ACT_MODE=1,decompress.SIGN_MODE=0
for v in a: c:,compress.STATUS_EARLY=1 d:,compress.LEAN=4 e:,decompress.LEAN=2; do
  .devbin/ps_k --policy unchecked --filter FUSED --constants "$FIX${v#*:}" > "$R/stats_${v%%:*}.txt" 2>&1
done
for v in 0 1; do
  .devbin/ps_k --policy unchecked --filter "decompress [BITS8,SUBGROUP]" --constants decompress.SIGN_MODE=0,decompress.DEPOSIT8=$v > "$R/stats_g$v.txt" 2>&1
done
E="BITSPARSE_BENCH_DTYPES=e4m3,e5m2 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress"
for f in fused arena pooled; do
  XDG_RUNTIME_DIR=/tmp timeout 120 .devbin/gpu_t "$f" > "$R/gputests_$f.txt" 2>&1
  echo "gpu tests $f rc=$? $(grep 'test result' "$R/gputests_$f.txt")"
done
save_results
O="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
BWD="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward"
bench_run a0 codec_k $O
timeout 150 python3 benches/anchors/triton_anchor.py > $R/triton.jsonl 2> $R/triton.err; echo triton rc=$?
save_results
for i in 1 2; do
  bench_run fa$i codec_k $FWD
  bench_run fc$i codec_k $FWD BITSPARSE_KERNEL_CONSTANTS=compress.STATUS_EARLY=1
  bench_run fd$i codec_k $FWD BITSPARSE_KERNEL_CONSTANTS=compress.LEAN=4
  bench_run ba$i codec_k $BWD
  bench_run be$i codec_k $BWD BITSPARSE_KERNEL_CONSTANTS=decompress.LEAN=2
  bench_run ea$i codec_k $E
  bench_run eg$i codec_k $E BITSPARSE_KERNEL_CONSTANTS=decompress.DEPOSIT8=1
done
bench_run a9 codec_k $O
echo total $(($(date +%s) - T0))s
