#!/bin/bash
# Builds (here) what next-call.sh carries in .devbin/: codec_n, the bench of the checked-out commit, and
# codec_w, the same with write-a-mode.patch applied (built in a worktree, /tmp/wt-w, into its own target
# dir, target/wt-w: a cold build the first time). Run from the repository root; the patch applies
# to 19d8995 and later commits that leave the decompress's modes as they are.
set -eu
mkdir -p .devbin
bin=$(cargo bench -p bitsparse-bench --bench codec --no-run 2>&1 | sed -n 's/.*Executable codec.rs (\(.*\))/\1/p')
strip -o .devbin/codec_n "$bin"
rm -rf /tmp/wt-w && git worktree prune && git worktree add -q --detach /tmp/wt-w HEAD
(cd /tmp/wt-w && git apply "$OLDPWD/benches/results/experiments/thirtyfirst/write-a-mode.patch")
bin=$(cd /tmp/wt-w && CARGO_TARGET_DIR=$OLDPWD/target/wt-w cargo bench -p bitsparse-bench --bench codec --no-run 2>&1 | sed -n 's/.*Executable codec.rs (\(.*\))/\1/p')
strip -o .devbin/codec_w "$bin"
git worktree remove --force /tmp/wt-w
ls -la .devbin
