#!/bin/bash
# Thirty-seventh session, calls 4 on: on an NVIDIA H100 the driver's register counts of the BF16 fused
# forward as the bench builds it (unpacked, ReLU², whole tiles, 4 scan slots), kept shaders against
# call 3's NaN-free square (.devbin/shaders_y), then nothing more; on an H200 the kept code's training-path
# rows and compress rows with the Triton anchor (issue 15's floors there, b3614a5's square never timed on
# one), then call 3's A/B (codec_h against codec_y, the fused and plain forward) as time allows.
# Binaries (carry `.gl` and `.devbin`): codec_h, codec_y as in run91.sh; ps_x as in run90.sh.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res92
LIMIT=${LIMIT:-250}
. benches/results/device-call.sh
kernel_ab_env
F1=compress.ACT_MODE=1,compress.SIGN_MODE=0,compress.ALL_FULL=1,compress.SCAN_SLOTS=4
for v in h y; do
  .devbin/ps_x --policy unchecked --shaders .devbin/shaders_$v --filter "compress.wgsl:compress [SUBGROUP,ARENA,FUSED_FWD,STAGE16,UNORDERED]" --constants "$F1" > "$R/stats_$v.txt" 2>&1
  grep -o '^[^ ]* \[[^]]*\].*Register Count=[0-9]*  Binary Size=[0-9]*' "$R/stats_$v.txt" | sed 's/ unchecked.*|//'
done
save_results
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
  *H200*) ;;
  *) echo "not an H200: stats only"; exit 0 ;;
esac
bench_run t1 codec_h $TRAIN_ROWS,compress
triton_anchor 120
bench_pairs fh codec_h fy codec_y $FWD_ROWS
echo total $(($(date +%s) - T0))s
