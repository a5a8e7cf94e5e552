#!/bin/bash
# Twenty-fifth session, call 3: direct ranks without SGRANK. Call 1 (run59.sh) found SGRANK's mask-tile
# path slower than HEAD's scan (p and a at ρ = 0.5) and direct ranks (a) the fastest positions path, so:
#   d2  HEAD + direct ranks (`experiments/twentyfifth/v2-decoder-direct-ranks.patch`): positions tiles
#       as a, mask tiles as HEAD.
#   d1  d2 + the positions scan on its own slots without its second barrier (POSSCAN's scan only;
#       `v2-decoder-direct-ranks-posscan-only.patch`).
#   c   HEAD.
# Then Burn's MLP-block bit-identity tests (burn/tests/burn, `train_bit_identical`, HEAD's test binary
# stripped and xz-compressed as .devbin/burntest.xz) on the H200: call 2 (run57.sh, burn-gpt in mixed F16)
# found BitSparse differing from Burn's dense F16 from the first update, where lavapipe is bit-identical.
R=/tmp/res60
. benches/results/device-call.sh
for x in c d1 d2; do .devbin/ps_$x --policy unchecked --filter decompress_v2 > $R/stats_$x.txt 2>&1; done
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
for i in 1 2; do
  for x in d2 c d1; do bench_run $x$i codec_$x BITSPARSE_BENCH_DTYPES=bf16 $D6; done
done
for x in d2 c d1; do bench_run ${x}E codec_$x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4; done
for x in d2 c d1; do bench_run ${x}F codec_$x BITSPARSE_BENCH_DTYPES=f16,f32 $D4; done
if [ $(($(date +%s) - T0)) -lt "$LIMIT" ]; then
  xz -dc .devbin/burntest.xz > /tmp/burntest && chmod +x /tmp/burntest
  /tmp/burntest train_bit_identical > $R/burntest.log 2>&1
  echo "burntest rc=$?"
  save_results
fi
echo total $(($(date +%s) - T0))s
