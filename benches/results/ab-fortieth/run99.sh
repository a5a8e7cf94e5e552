#!/bin/bash
# Fortieth session, call 3 (any card; an H200 preferred): two one-function changes of
# shaders/lib/act.wgsl against the kept kernels, interleaved, with the driver's register counts and the
# Triton anchor:
#  - B, experiments/fortieth/bwd-act-word-bf16-pair.patch (codec_B, shaders_B): the fused backward's
#    dense `a` (act_word) squares with bf16_pair's NaNs from the product, as the forward (b3614a5) and
#    the gradient already do. GPU suite 146 passed on lavapipe; a mutant without the NaN replacement
#    fails two fused tests.
#  - R, experiments/fortieth/fwd-square-before-b3614a5.patch (codec_R, shaders_R): the forward's
#    square as before b3614a5 (-6 to -8 % on the H100; never timed alone on an H200).
# Binaries (carry `.gl` and `.devbin`): codec_X = `cargo bench -p bitsparse-bench --bench codec
# --no-run` with the patch applied to HEAD, stripped; shaders_X = `git archive HEAD shaders` + the
# patch. Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res99
LIMIT=${LIMIT:-330}
. benches/results/device-call.sh
kernel_ab_env
for v in h B R; do
  .devbin/ps_x --policy unchecked --shaders ".devbin/shaders_$v" --filter "decompress.wgsl:decompress [SUBGROUP,ARENA,FUSED_BWD]" --constants decompress.SIGN_MODE=0,decompress.ACT_MODE=1 > "$R/stats_bwd_$v.txt" 2>&1
  compress_stats "$v" --shaders ".devbin/shaders_$v"
done
save_results
bench_run h1 codec_h $TRAIN_ROWS
bench_run B1 codec_B $TRAIN_ROWS
bench_run R1 codec_R $TRAIN_ROWS
triton_anchor 120
bench_run h2 codec_h $TRAIN_ROWS
bench_run B2 codec_B $TRAIN_ROWS
bench_run R2 codec_R $TRAIN_ROWS
bench_run B3 codec_B $TRAIN_ROWS
bench_run h3 codec_h $TRAIN_ROWS
echo total $(($(date +%s) - T0))s
