#!/bin/bash
# Thirty-seventh session (any card): the codec kernels' per-round state packed (one word of mask bits a
# thread, the scan's counts and prefixes two rounds to a word) against the kept kernels — the driver's
# register counts of the fused forward, the version-1 compress and the version-2 writer as the bench
# builds them (unpacked, ReLU², whole tiles, 4 scan slots), then interleaved timings of the training
# path's kernels and both compress versions, around the Triton anchor (so the kept code's h runs are
# also issue 15's standing rows on whatever card this is).
# Binaries (carry `.gl` and `.devbin`): codec_h (the kept kernels: `cargo bench -p bitsparse-bench
# --bench codec --no-run` of 847bee5, stripped), codec_x (the same of this session's tree with the
# packed state), ps_x (pipeline_stats of that tree; with `--shaders .devbin/shaders_h`, the kept
# shaders, `git archive c6865d3 shaders`).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res90
LIMIT=${LIMIT:-400}
. benches/results/device-call.sh
kernel_ab_env
F1=compress.ACT_MODE=1,compress.SIGN_MODE=0,compress.ALL_FULL=1,compress.SCAN_SLOTS=4
F2=compress.SIGN_MODE=0,compress.ALL_FULL=1,compress.SCAN_SLOTS=4
for v in h x; do
  sh=""
  [ "$v" = h ] && sh="--shaders .devbin/shaders_h"
  .devbin/ps_x --policy unchecked $sh --filter "compress.wgsl:compress [SUBGROUP,ARENA,FUSED_FWD,STAGE16,UNORDERED]" --constants "$F1" > "$R/stats_$v.txt" 2>&1
  .devbin/ps_x --policy unchecked $sh --filter "compress.wgsl:compress [SUBGROUP,STAGE16,UNORDERED]" --constants "$F2" >> "$R/stats_$v.txt" 2>&1
  .devbin/ps_x --policy unchecked $sh --filter "compress.wgsl:compress [SUBGROUP,ARENA,STAGE16,UNORDERED]" --constants "$F2" >> "$R/stats_$v.txt" 2>&1
  .devbin/ps_x --policy unchecked $sh --filter "compress_v2.wgsl:compress [SUBGROUP,STAGE16]" --constants "$F2" >> "$R/stats_$v.txt" 2>&1
  grep -o '^[^ ]* \[[^]]*\].*Register Count=[0-9]*' "$R/stats_$v.txt" | sed 's/ unchecked.*|//'
done
save_results
ROWS="$TRAIN_ROWS,compress"
bench_run h1 codec_h $ROWS
bench_run x1 codec_x $ROWS
triton_anchor 150
bench_run h2 codec_h $ROWS
bench_run x2 codec_x $ROWS
echo total $(($(date +%s) - T0))s
