#!/bin/bash
# Builds (here, not on the device) everything the two prepared device calls carry in `.devbin/`:
# the twenty-fifth session's call 1 (`../../ab-twentyfifth/run59.sh`): codec_{c,p,a,b,mv} and ps_{c,mv},
# and its call 2 (`run57.sh` there): burn-gpt.xz; then fetches the loader debs into `.gl/` (docs/DEVICE.md). Run from the repository root
# on a clean `shaders/`. Each binary is the shaders of BASE (b5f96e4: the decoder before the kept direct
# ranks, which the patches were made against; the bench and library code are HEAD's, unchanged since)
# plus its patches; `shaders/` is restored to HEAD's after each.
# About 5 minutes with a warm `target/` (burn-gpt from a cold one: ~15 more).
set -eu
E=benches/results/experiments
BASE=b5f96e4
mkdir -p .devbin .gl
git diff --quiet -- shaders || { echo "shaders/ has uncommitted changes" >&2; exit 1; }
grep -qx '/.devbin/' .git/info/exclude || printf '/.gl/\n/.devbin/\n' >> .git/info/exclude

. "$E/build-lib.sh"
# build NAME [PATCH ...]: build_variant with pipeline_stats for c and mv only.
build() {
  local x=$1
  shift
  build_variant "$x" "$([ "$x" = c ] || [ "$x" = mv ] && echo 1 || echo 0)" "$@"
}
trap 'git checkout -q HEAD -- shaders' EXIT
build c
build p twentyfourth/v2-decoder-sgrank-posscan.patch
build a twentyfifth/v2-decoder-posscan-direct-ranks.patch
build b twentyfifth/v2-decoder-posscan-direct-ranks-by-word.patch
build mv twentyfifth/v2-decoder-direct-ranks-subgroup-mask-ranks.patch twentyfifth/decompress-ranks-without-barrier.patch

cargo build --release -p burn-gpt --bin burn-gpt
strip -o /tmp/burn-gpt-stripped target/release/burn-gpt
xz -T2 -6 -c /tmp/burn-gpt-stripped > .devbin/burn-gpt.xz

o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
if ! ls .gl/*.deb > /dev/null 2>&1; then
  mkdir -p /tmp/amd64/partial
  apt-get $o update
  (cd .gl && apt-get $o download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2)
fi
ls -la .devbin .gl
du -sh .devbin .gl
