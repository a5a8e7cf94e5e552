#!/bin/bash
# Fortieth session, call 5 (any card; an H200 preferred): the square's form as an override constant
# (SQUARE_NAN_FLAGS in shaders/lib/act.wgsl, set by the host per adapter: 1 on an H200) checked
# against the builds it replaces: the driver's counts of both forms (fused and plain forward), then
# codec_k (this commit: the adapter's form), codec_h (the form of b3614a5 only) and codec_R (the flags
# form only), and codec_k with the other form forced, interleaved. Binaries: codec_k = `cargo bench -p
# bitsparse-bench --bench codec --no-run` at this commit, stripped; shaders_k = its shaders/; codec_h
# and codec_R as run99.sh says. Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res101
LIMIT=${LIMIT:-200}
. benches/results/device-call.sh
kernel_ab_env
for f in 0 1; do
  compress_stats "k$f" --shaders .devbin/shaders_k --constants "compress.SQUARE_NAN_FLAGS=$f"
  .devbin/ps_x --policy unchecked --shaders .devbin/shaders_k --filter "plain_act.wgsl:forward" --constants "forward.SQUARE_NAN_FLAGS=$f" >> "$R/stats_k$f.txt" 2>&1
done
save_results
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
  *H200*) OTHER=0 ;;
  *) OTHER=1 ;;
esac
X="BITSPARSE_KERNEL_CONSTANTS=compress.SQUARE_NAN_FLAGS=$OTHER,forward.SQUARE_NAN_FLAGS=$OTHER"
bench_run k1 codec_k $FWD_ROWS
bench_run h1 codec_h $FWD_ROWS
bench_run x1 codec_k $FWD_ROWS $X
bench_run R1 codec_R $FWD_ROWS
bench_run k2 codec_k $FWD_ROWS
bench_run x2 codec_k $FWD_ROWS $X
echo total $(($(date +%s) - T0))s
