#!/bin/bash
# Thirty-ninth session, prepared (its first call was taken back mid-run). First an interleaved A/B of
# experiments/thirtyninth/decompress-8bit-popcount-deposit.patch (codec_P: the 8-bit deposit from
# popcount shifts instead of a chain of selects; applies to a92ae22 and later) against the kept kernels
# (codec_h), e4m3 decompress in both sign modes. Then where the version-1 decompress spends its time,
# e4m3 first (its floor, 0.65 of copy, is missed on the H200 at ρ <= 0.176, and its time is about the
# same on an H100): ablations of one binary, experiments/thirtyninth/decompress-ablation-knob.patch
# (applies to a92ae22; the knob `decompress.ABL`: 1 no value gathers, 2 no scan (no barrier), 4 no
# deposit, 8 no mask loads, 16 the stores only); outputs of ABL != 0 are wrong by design and not
# verified. Binaries: .devbin/codec_abl (`cargo bench -p bitsparse-bench --bench codec --no-run` with
# the patch applied, stripped); codec_P likewise with its patch; .devbin/shaders_P the shader tree with
# it (`git archive HEAD shaders | tar -x`, then `patch -p1`), for the driver's register counts
# (stats_h.txt, stats_P.txt).
R=/tmp/res98
LIMIT=${LIMIT:-260}
. benches/results/device-call.sh
kernel_ab_env
for v in h P; do
  .devbin/ps_x --policy unchecked --shaders ".devbin/shaders_$v" --filter "decompress.wgsl:decompress [BITS8,SUBGROUP]" --constants decompress.SIGN_MODE=0 > "$R/stats_$v.txt" 2>&1
done
E="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_OPS=copy,decompress"
B="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,decompress"
bench_pairs h codec_h P codec_P $E4M3_DEC_ROWS
bench_run a0 codec_abl $E
for k in 16 5 1 2 4 8; do
  bench_run a$k codec_abl $E BITSPARSE_BENCH_NO_VERIFY=1 BITSPARSE_KERNEL_CONSTANTS=decompress.ABL=$k
done
bench_run b0 codec_abl $B
bench_run b16 codec_abl $B BITSPARSE_BENCH_NO_VERIFY=1 BITSPARSE_KERNEL_CONSTANTS=decompress.ABL=16
bench_run b5 codec_abl $B BITSPARSE_BENCH_NO_VERIFY=1 BITSPARSE_KERNEL_CONSTANTS=decompress.ABL=5
bench_run a0b codec_abl $E
echo total $(($(date +%s) - T0))s
