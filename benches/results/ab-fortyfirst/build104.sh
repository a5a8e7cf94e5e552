#!/bin/bash
# Builds what run104.sh carries, from the repository root of a checkout of HEAD (clean tree): the loader
# debs in .gl/ (docs/DEVICE.md) and in .devbin/ the stripped binaries and shader trees —
#   ps_x                 pipeline_stats of HEAD
#   codec_k, shaders_k   the codec bench and shaders of HEAD (the kept kernels: form 1 on an H200)
#   codec_Q, shaders_Q   HEAD + experiments/fortieth/fwd-square-forms-knob.patch (forms 1-4 by constant)
#   codec_Z, shaders_Z   HEAD + experiments/thirtyeighth/fwd-restage-B.patch
# (HEAD's kernels equal 3e055e4's, which run104.sh names.) About 8 min here on a fresh checkout (2 cores);
# 24 MB in .devbin. The patched sources are restored at the end, and compress.wgsl touched so the next
# build of HEAD rebuilds its shaders.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
git diff --quiet -- shaders src tests || { echo "shaders/src/tests have changes: commit or stash them first" >&2; exit 1; }
grep -qs '^/.devbin/$' .git/info/exclude || { mkdir -p .git/info; printf '/.gl/\n/.devbin/\n' >> .git/info/exclude; }
mkdir -p .gl .devbin /tmp/amd64/partial
if ! ls .gl/*.deb >/dev/null 2>&1; then
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update >/dev/null
  (cd .gl && apt-get $o download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2)
fi
build() {
  local exe
  exe=$(cargo bench -p bitsparse-bench --bench codec --no-run --message-format=json |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "codec" and m.get("executable"):
        print(m["executable"])')
  strip -o ".devbin/codec_$1" "$exe"
  rm -rf ".devbin/shaders_$1"
  cp -r shaders ".devbin/shaders_$1"
}
cargo build --release -p bitsparse-tools --bin pipeline_stats
strip -o .devbin/ps_x target/release/pipeline_stats
build k
# A failed build leaves no patch behind.
trap 'git checkout -- shaders src tests' EXIT
for v in Q:fortieth/fwd-square-forms-knob Z:thirtyeighth/fwd-restage-B; do
  git apply "benches/results/experiments/${v#*:}.patch"
  build "${v%%:*}"
  git checkout -- shaders src tests
done
trap - EXIT
touch shaders/compress.wgsl
ls -la .devbin
