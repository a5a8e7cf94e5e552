#!/usr/bin/env bash
# The size table of docs/FORMAT.md §14.9: `bitsparse compress --dtype bf16 [--sign-pack]` (format
# version 2, and version 1 for comparison) on raw files of 2^20 i.i.d. ReLU² BF16 elements, the whole
# .bsp file counted against the entropy bound H(ρ) + (16 − s)·ρ bits per element. Prints a Markdown table.
#
#   bash scripts/v2_size_table.sh [--backend vulkan|gl]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release -q -p bitsparse-cli -p bitsparse-demos --bin bitsparse --example synth_raw
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bin=${CARGO_TARGET_DIR:-target}/release
echo "| ρ | sign-packed | v2 bytes (.bsp) | v2 bound_fraction | v1 bytes | v1 bound_fraction | v2 ÷ v1 |"
echo "|---|---|---:|---:|---:|---:|---:|"
for rho in 0.002 0.005 0.01 0.05 0.176 0.3 0.5; do
    "$bin/examples/synth_raw" --dtype bf16 --elements 1048576 --density "$rho" --seed 1 "$dir/in.raw"
    for sp in "" "--sign-pack"; do
        row=()
        for v in 2 1; do
            json=$("$bin/bitsparse" "$@" compress --json --format-version "$v" --dtype bf16 $sp "$dir/in.raw" "$dir/out.bsp")
            bytes=$(stat -c %s "$dir/out.bsp")
            bf=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%.3f" % (d["bound_fraction"] * d["stored_bytes"] / int(sys.argv[2])))' "$json" "$bytes")
            row+=("$bytes" "$bf")
        done
        ratio=$(python3 -c "print(f'{${row[0]}/${row[2]}:.3f}')")
        spname=no; [ -n "$sp" ] && spname=yes
        echo "| $rho | $spname | ${row[0]} | ${row[1]} | ${row[2]} | ${row[3]} | $ratio |"
    done
done
