#!/bin/bash
# Prepared in the thirty-seventh session (its device time ran out), for any card: two reads moved from
# L1 into workgroup memory, against the kept kernels — the driver's register and shared-memory counts,
# then interleaved timings.
#  - experiments/thirtyseventh/smem-restage.patch: the staging's second read of the tile (version-1
#    compress, fused forward, version-2 writer) from `wg_z`, where each thread keeps the vecs it first
#    reads (8 KB a workgroup). Call 5 of that session found the fused forward 1.6 × slower with L1 cut
#    to 28 KB: its re-read lives on L1 hits, and this one needs none.
#  - experiments/thirtyseventh/v2-decoder-data-staged.patch: the version-2 decoder's gathers from the
#    tile's data words copied into `wg_data` (2 KB) where they fit (mask and positions tiles of 16- and
#    8-bit elements up to ρ ≈ 0.25), instead of two global reads an output word.
# On an H200 the kept code's training-path rows and the Triton anchor come first (issue 15's floors).
# Binaries (carry `.gl` and `.devbin`; rebuild them in a fresh checkout):
#   codec_h — `cargo bench -p bitsparse-bench --bench codec --no-run` of c6865d3 or later (kernels of
#             b3614a5), the `target/release/deps/codec-*` executable, stripped;
#   codec_s — the same with both patches applied;
#   ps_x    — `cargo build --release -p bitsparse-tools` (target/release/pipeline_stats), stripped;
#   shaders_h, shaders_s — `git archive HEAD shaders | tar -x` (then `mv shaders .devbin/shaders_h`),
#             and the same tree with both patches, for `--shaders`.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res94
LIMIT=${LIMIT:-330}
. benches/results/device-call.sh
kernel_ab_env
for v in h s; do
  compress_stats "$v" --shaders ".devbin/shaders_$v"
  .devbin/ps_x --policy unchecked --shaders ".devbin/shaders_$v" --filter "decompress_v2.wgsl:decompress_v2 [SUBGROUP]" --constants decompress_v2.SIGN_MODE=0 >> "$R/stats_$v.txt" 2>&1
done
save_results
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
  *H200*)
    bench_run t1 codec_h $TRAIN_ROWS,compress
    triton_anchor 120
    ;;
esac
bench_pairs h codec_h s codec_s BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,compress,decompress,fused_forward,plain_forward
bench_run e codec_h BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress,decompress
bench_run es codec_s BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,compress,decompress
echo total $(($(date +%s) - T0))s
