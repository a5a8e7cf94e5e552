#!/bin/bash
# Thirty-eighth session, call 2 (any card): the fused forward's staging re-read from workgroup memory in
# four forms (call 1's smem-restage took the driver to 89 registers and lost only 6-10 % at 5
# workgroups per SM), the fused forward only, against the kept kernels: the driver's counts of each,
# then interleaved timings of the forward rows.
#  A: z stored to `wg_z` (vec4 a thread a round) right after its load;  B: relu(z) stored after the
#  store of `a`;  C, D: as A, B with `wg_z` as four planes of u32 (one per word of the vec).
# Binaries (carry `.gl` and `.devbin`): codec_h as run94.sh says; codec_A … codec_D the same build with
# ../experiments/thirtyeighth/fwd-restage-X.patch (written as /tmp/fwdz-X.patch) applied to
# c30f9f1; shaders_A … shaders_D the patched shader trees for `--shaders`.
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res95
LIMIT=${LIMIT:-330}
. benches/results/device-call.sh
kernel_ab_env
for v in h A B C D; do
  compress_stats "$v" --shaders ".devbin/shaders_$v"
done
save_results
for i in 1 2; do
  for v in h A B C D; do
    bench_run "$v$i" "codec_$v" $FWD_ROWS
  done
done
echo total $(($(date +%s) - T0))s
