#!/bin/bash
# Prepared in the twenty-fourth session, not yet run (no device was lent): the version-2 decoder's two
# barrier removals, each against HEAD's decoder (its codec sources are f667631's), interleaved:
#   s  SGRANK  (`../twentythird/v2-decoder-subgroup-ranks.patch`): the last scan's second barrier and
#              the barrier after the ranks' store dropped (ranks within the subgroup, totals added by the
#              reader); two barriers fewer on every tile's chain.
#   p  POSSCAN (`v2-decoder-sgrank-posscan.patch`, includes SGRANK): also the positions tiles' scan on
#              its own subgroup-total slots, so it needs no barrier after its reads (a round after the
#              first, which no valid stream has, starts with one); one barrier fewer again on every
#              positions tile's chain.
#   c  the decoder as committed.
# Build first (here), for each of c (no patch), s and p (`git apply` the patch, build, `git checkout
# shaders`): `cargo bench -p bitsparse-bench --bench codec --no-run`, strip `target/release/deps/codec-*`
# into `.devbin/codec_X`, and `cargo build --release -p bitsparse-tools --bin pipeline_stats`, stripped
# into `.devbin/ps_X`. Fetch the loader debs into `.gl/` (docs/DEVICE.md); run through the device tool
# with `carry: [".gl", ".devbin"]`. Both patches pass the version-2 and golden-file GPU tests on lavapipe.
R=/tmp/res58
. benches/results/device-call.sh
for x in c s p; do .devbin/ps_$x --policy unchecked --filter decompress_v2 > $R/stats_$x.txt 2>&1; done
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
for i in 1 2; do
  for x in s c p; do bench_run $x$i codec_$x BITSPARSE_BENCH_DTYPES=bf16 $D6; done
done
for x in s c p; do bench_run ${x}E codec_$x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4; done
echo total $(($(date +%s) - T0))s
