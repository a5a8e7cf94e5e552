#!/bin/bash
# Prepared in the thirty-eighth session (its device time ran out), for any card: the forward's square
# taken of relu(z) instead of z (no mask over the rounded word: one AND a word fewer, the square one step
# later in the chain) against the kept kernels, with the driver's counts; and fwd-restage-D (call 2's
# limit skipped it). On an H200 the kept code's training-path rows and the Triton anchor come first.
#  - experiments/thirtyeighth/fwd-square-of-r.patch (codec_E, shaders_E): `relu_act_word` in
#    shaders/lib/act.wgsl squares r; the fused GPU tests pass on lavapipe (12), a mutant squaring one
#    half of z unmasked fails 4 of them; the bench's BF16 forward rows verify bit-exact on lavapipe.
#  - experiments/thirtyeighth/fwd-restage-D.patch (codec_D, shaders_D): 49 registers on the H100.
# Binaries (carry `.gl` and `.devbin`; rebuild them in a fresh checkout): codec_h as run94.sh says;
# codec_E / codec_D the same build with the patch applied to f5ec3de; shaders_X the patched trees
# (`git archive HEAD shaders | tar -x`, then the patched file copied in); ps_x as run94.sh says.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res96
LIMIT=${LIMIT:-300}
. benches/results/device-call.sh
kernel_ab_env
for v in h E D; do
  compress_stats "$v" --shaders ".devbin/shaders_$v"
done
save_results
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
  *H200*)
    bench_run t1 codec_h $TRAIN_ROWS
    triton_anchor 120
    ;;
esac
bench_pairs h codec_h E codec_E $FWD_ROWS
bench_run D1 codec_D $FWD_ROWS
bench_run h3 codec_h $FWD_ROWS
bench_run E3 codec_E $FWD_ROWS
echo total $(($(date +%s) - T0))s
