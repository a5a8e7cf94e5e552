#!/usr/bin/env python3
"""What issue 15's fused-kernel floors ask of the bytes each kernel moves.

For each density of a bench JSON (`python3 byte_bound.py RUN.json`): the bytes the fused and plain
kernels move (the bench's own count, gbps x ms), and the bandwidth, as a fraction of the copy timed
in the same batch, the fused kernel would need to meet its floor (fused forward <= 1.20 x the plain
forward, fused backward with `a` <= 1.15 x the plain backward), beside what it reaches and what the
plain kernel reaches. A needed fraction above 1.0 asks for more than the copy moves. Sign-packed
rows are left out (the floors are on unpacked values).
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in benches/results
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from floors import FUSED_FLOORS as FLOORS  # noqa: E402 (the floors are kept in one place)

rows = json.load(open(sys.argv[1]))["rows"]
by = {}
for r in rows:
    if r.get("sign_pack"):
        continue
    by[(r["op"], r["density"], r.get("with_a"))] = r
for rho in sorted({r["density"] for r in rows}, reverse=True):
    copy = by[("copy", rho, None)]["gbps"]
    for op, with_a, plain, floor in FLOORS:
        f, p = by.get((op, rho, with_a)), by.get((plain, rho, None))
        if f is None or p is None:
            continue
        fb, pb = f["gbps"] * f["ms"], p["gbps"] * p["ms"]
        need = (fb / pb) / floor * p["gbps"] / copy
        name = op + ("" if with_a is None else (" with a" if with_a else " dL/dz"))
        print(f"rho {rho:<6} {name:<22} bytes {fb / pb:.3f} x plain; floor {floor:.2f} x needs {need:.3f} of copy;"
              f" reaches {f['gbps'] / copy:.3f} (plain {p['gbps'] / copy:.3f}); now {f['ms'] / p['ms']:.3f} x")
