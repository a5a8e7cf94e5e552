#!/bin/bash
# Builds (here, not on the device) what the twenty-sixth session's call 1 (`../../ab-twentysixth/run61.sh`)
# carries in `.devbin/`: codec_{c,m,t,e} and ps_{c,m,t,e} (c = the shaders of BASE, m and t = BASE plus the
# patch named below), and burntest.xz (Burn's MLP-block test binary). Run from the repository root on a
# clean `shaders/`; `shaders/` is restored to HEAD's after each build. About 5 minutes with a warm `target/`.
set -eu
E=benches/results/experiments
BASE=${BASE:-1c495d7}
mkdir -p .devbin .gl
git diff --quiet -- shaders || { echo "shaders/ has uncommitted changes" >&2; exit 1; }
grep -qx '/.devbin/' .git/info/exclude || printf '/.gl/\n/.devbin/\n' >> .git/info/exclude

. "$E/build-lib.sh"
# build NAME [PATCH ...]: build_variant with pipeline_stats.
build() {
  local x=$1
  shift
  build_variant "$x" 1 "$@"
}
trap 'git checkout -q HEAD -- shaders' EXIT
build c
build m twentysixth/v2-decoder-one-mask-path.patch
build t twentysixth/decompress-take16-shift.patch
build e twentysixth/decompress-8bit-deposit.patch

bin=$(cargo test --release -p bitsparse-burn --no-run 2>&1 | sed -n 's/.*Executable tests\/burn\/main.rs (\(.*\))/\1/p')
strip -o /tmp/burntest-stripped "$bin"
xz -T2 -6 -c /tmp/burntest-stripped > .devbin/burntest.xz
ls -la .devbin
du -sh .devbin .gl
