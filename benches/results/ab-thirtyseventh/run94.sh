#!/bin/bash
# Prepared in the thirty-seventh session (its device time ran out), for any card: the staging's second
# read of the tile from workgroup memory instead of through L1 (experiments/thirtyseventh/
# smem-restage.patch: each thread keeps its own vecs in `wg_z` as it first reads them; the version-1
# compress, the fused forward and the version-2 writer), against the kept kernels — the driver's
# register and shared-memory counts, then interleaved timings. Call 5 of that session found the fused
# forward 1.6 × slower with L1 cut to 28 KB, so its re-read lives on L1 hits; this read needs none. On
# an H200 the kept code's training-path rows and the Triton anchor come first (issue 15's floors there).
# Binaries (carry `.gl` and `.devbin`; rebuild them in a fresh checkout):
#   codec_h — `cargo bench -p bitsparse-bench --bench codec --no-run` of c6865d3 or later (kernels of
#             b3614a5), the `target/release/deps/codec-*` executable, stripped;
#   codec_s — the same with the patch applied;
#   ps_x    — `cargo build --release -p bitsparse-tools` (target/release/pipeline_stats), stripped;
#   shaders_h, shaders_s — `git archive HEAD shaders | tar -x` (then `mv shaders .devbin/shaders_h`),
#             and the same tree with the patch, for `--shaders`.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res94
LIMIT=${LIMIT:-330}
. benches/results/device-call.sh
kernel_ab_env
for v in h s; do
  compress_stats "$v" --shaders ".devbin/shaders_$v"
done
save_results
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
  *H200*)
    bench_run t1 codec_h $TRAIN_ROWS,compress
    triton_anchor 120
    ;;
esac
bench_pairs h codec_h s codec_s BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,compress,fused_forward,plain_forward
bench_run e codec_h BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress
bench_run es codec_s BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress
echo total $(($(date +%s) - T0))s
