#!/usr/bin/env bash
# The core must stay lean (a trainer links it): at most 65 distinct crates in its normal dependency tree,
# and none of the CLI's, the bench's or the build's heavy crates. Run by .ci/run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tree=$(cargo tree -p bitsparse -e normal --prefix none --offline 2>/dev/null || cargo tree -p bitsparse -e normal --prefix none)
crates=$(printf '%s\n' "$tree" | awk '{print $1}' | sort -u)
count=$(printf '%s\n' "$crates" | grep -c .)
# Anywhere in the tree: the heavy crates of the CLI and the bench. Direct only: naga and log, which wgpu
# itself uses (naga is ours only as a build/dev dependency).
direct=$(cargo tree -p bitsparse -e normal --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u)
bad=$( (printf '%s\n' "$crates" | grep -Ex 'clap|plotters|indicatif|safetensors|serde_json|crc32fast'; printf '%s\n' "$direct" | grep -Ex 'naga|log|serde') || true)
echo "core: $count distinct crates in \`cargo tree -p bitsparse -e normal\`"
if [ -n "$bad" ]; then
    echo "error: the core depends on $(echo $bad | tr '\n' ' ')(keep them in the members that need them)" >&2
    exit 1
fi
if [ "$count" -gt 65 ]; then
    echo "error: the core's normal dependency tree has $count distinct crates (at most 65)" >&2
    exit 1
fi
