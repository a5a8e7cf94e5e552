#!/usr/bin/env python3
"""Issue 15's and issue 16's speed floors, met or missed, from the bench JSON of one device call.

Usage: floors.py RUN.json [RUN.json ...] [--anchor triton.jsonl]

Every floor is read from rows of one bench run (a floor compares rows timed in the same batch, so two
runs are never mixed in one line); with several runs each is printed in turn. The floors (issue 15,
part 4; issue 16, part 5 keeps them for version 2), at ρ = 0.5 / 0.176 / 0.05:

  compress, unordered tiles        >= 0.65 of copy (sign-packed >= 0.60)
  decompress                       >= 0.70 of copy, >= 0.80 at ρ = 0.176 (sign-packed >= 0.60)
  e4m3 decompress                  >= 0.65 of copy
  fused forward                    <= 1.20 x the plain forward
  fused backward, dL/dz only       <= 1.00 x the plain backward; with `a` <= 1.15 x
  training path at ρ = 0.176       (fused forward + fused backward with `a`) - (plain forward + plain
                                   backward) <= 4 % of the six cuBLAS FFN GEMMs of the Triton anchor's
                                   run in the same call (--anchor)

Rows the run lacks are left out; a floor without its row is not reported as met. The copy fractions
are the bench's own (`copy_fraction`: GB/s of the bytes that must move over the copy's GB/s in the same
batch).
"""
import json
import sys

DENSITIES = (0.5, 0.176, 0.05)

# The fused kernels' floors: (fused op, with_a, plain op, at most this many times the plain op's time).
# Also read by ab-thirtyfourth/byte_bound.py.
FUSED_FLOORS = [("fused_forward", None, "plain_forward", 1.20), ("fused_backward", True, "plain_backward", 1.15),
                ("fused_backward", False, "plain_backward", 1.00)]


def codec_floor(op, sign_pack, rho):
    if sign_pack:
        return 0.60
    if op == "compress":
        return 0.65
    return 0.80 if rho == 0.176 else 0.70


def verdict(ok):
    return "met" if ok else "MISSED"


def report(path, gemm_ms):
    rows = json.load(open(path))["rows"]
    by = {}
    for r in rows:
        if r.get("tile_order") not in (None, "unordered"):
            continue
        by[(r["op"], r["dtype"], bool(r.get("sign_pack")), r["density"], r.get("format_version"), r.get("with_a"))] = r
    print(f"== {path}")
    lines = []
    for dtype in ("bf16", "e4m3"):
        for version in (1, 2):
            for op in ("compress", "decompress"):
                if dtype == "e4m3" and op == "compress":
                    continue  # e4m3 has a decompress floor only
                for sp in (False, True):
                    for rho in DENSITIES:
                        r = by.get((op, dtype, sp, rho, version, None))
                        if r is None:
                            continue
                        floor = 0.65 if dtype == "e4m3" else codec_floor(op, sp, rho)
                        f = r["copy_fraction"]
                        name = f"{dtype} v{version} {op}{' sign-packed' if sp else ''}"
                        lines.append(f"{name:<34} rho {rho:<6} {f:.3f} of copy (floor {floor:.2f}): {verdict(f >= floor)}")
    for op, with_a, plain, floor in FUSED_FLOORS:
        for rho in DENSITIES:
            f = by.get((op, "bf16", False, rho, None, with_a))
            p = by.get((plain, "bf16", False, rho, None, None))
            if f is None or p is None:
                continue
            q = f["ms"] / p["ms"]
            name = op + ("" if with_a is None else (" with a" if with_a else " dL/dz"))
            lines.append(f"bf16 {name:<29} rho {rho:<6} {q:.3f} x {plain} (floor {floor:.2f}): {verdict(q <= floor)}")
    ff = by.get(("fused_forward", "bf16", False, 0.176, None, None))
    fa = by.get(("fused_backward", "bf16", False, 0.176, None, True))
    pf = by.get(("plain_forward", "bf16", False, 0.176, None, None))
    pb = by.get(("plain_backward", "bf16", False, 0.176, None, None))
    if None not in (ff, fa, pf, pb):
        extra = (ff["ms"] + fa["ms"]) - (pf["ms"] + pb["ms"])
        path_line = (f"training path rho 0.176: ({ff['ms']:.4f} + {fa['ms']:.4f}) - ({pf['ms']:.4f} + {pb['ms']:.4f})"
                     f" = {extra:.4f} ms")
        if gemm_ms is not None:
            pct = 100.0 * extra / gemm_ms
            path_line += f" = {pct:.2f} % of the GEMMs ({gemm_ms:.3f} ms; floor 4 %): {verdict(pct <= 4.0)}"
        else:
            path_line += " (no --anchor: not judged)"
        lines.append(path_line)
    print("\n".join(lines))


def main():
    args = sys.argv[1:]
    gemm_ms = None
    if "--anchor" in args:
        i = args.index("--anchor")
        for line in open(args[i + 1]):
            rec = json.loads(line)
            if rec.get("kind") == "gemm":
                gemm_ms = rec["ms"]
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    for path in args:
        report(path, gemm_ms)


if __name__ == "__main__":
    main()
