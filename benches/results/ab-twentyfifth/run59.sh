#!/bin/bash
# Prepared in the twenty-fifth session, not yet run (no device was lent in the twenty-fourth or the
# twenty-fifth session). It replaces `../twentyfourth/next-call-decoder.sh`: the same c / p comparison
# (SGRANK is inside POSSCAN, so it gets no run of its own) plus three shorter version-2 chains and one
# version-1 change. Binaries (each a full build of the codec bench with the patch applied to HEAD):
#   c   HEAD (the codec's shaders as committed; unchanged since f667631).
#   p   POSSCAN (`../twentyfourth/v2-decoder-sgrank-posscan.patch`, SGRANK included).
#   a   p + direct ranks (`v2-decoder-posscan-direct-ranks.patch`): a positions tile's ones record each
#       mask word's first rank with an atomicMin beside their atomicOr, so the tile needs no scan of its
#       mask — one barrier after the ones are set, not a scan and a barrier.
#   b   a with the ones' bits gathered in a register per mask word (`...-direct-ranks-by-word.patch`):
#       one atomicOr and one atomicMin per word a thread touches instead of a pair per one.
#   mv  b + a mask tile's ranks without workgroup memory (`v2-decoder-direct-ranks-subgroup-mask-ranks.patch`:
#       each subgroup writes the vecs of its own lanes' mask words, shuffles them, and counts the earlier
#       subgroups' ones itself — no barrier on a mask tile's chain after its descriptor's) AND version 1's
#       decompress ranks without a barrier (`decompress-ranks-without-barrier.patch`: the same idea for
#       the plain decompress, the fused backward and the arena's decompress, 8- and 16-bit elements).
#       So mv's version-1 rows time that change against c's (and p's, a's, b's: version 1 as HEAD).
# Every patch passes the whole GPU suite on lavapipe (subgroups of 8) and a mutant of each fails it.
# Build first (here): `bash benches/results/experiments/twentyfifth/build-binaries.sh` does all of what
# follows (and burn-gpt.xz for run57.sh; its codec binaries matched the hand-built ones by md5).
# By hand: for each X, `git apply` its patch(es) (mv: both), then
# `cargo bench -p bitsparse-bench --bench codec --no-run`, strip `target/release/deps/codec-*` into
# `.devbin/codec_X`; for c and mv also `cargo build --release -p bitsparse-tools --bin pipeline_stats`,
# stripped into `.devbin/ps_X`; `git checkout shaders`. Fetch the loader debs into `.gl/`
# (docs/DEVICE.md); run through the device tool with `carry: [".gl", ".devbin"]`.
R=/tmp/res59
LIMIT=500
. benches/results/device-call.sh
for x in c mv; do .devbin/ps_$x --policy unchecked --filter decompress > $R/stats_$x.txt 2>&1; done
decoder_ab_env
D6=BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.1,0.05,0.02,0.01
D4=BITSPARSE_BENCH_DENSITIES=0.176,0.1,0.05,0.01
for i in 1 2; do
  for x in c mv p a b; do bench_run $x$i codec_$x BITSPARSE_BENCH_DTYPES=bf16 $D6; done
done
for x in mv c; do bench_run ${x}E codec_$x BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=on $D4; done
for x in mv c; do
  bench_run ${x}B codec_$x BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 \
    BITSPARSE_BENCH_OPS=copy,fused_backward,plain_backward
done
echo total $(($(date +%s) - T0))s
