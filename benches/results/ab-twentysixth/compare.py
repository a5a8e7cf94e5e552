#!/usr/bin/env python3
"""Compares bench JSON runs of several binaries (twenty-sixth session's A/B calls).

Usage: compare.py DIR BASE VAR [VAR ...] [--suffix S]: reads DIR/<name>.json for every file whose name
starts with one of the variants (e.g. c1.json, c2.json, m1.json ...), groups rows by (op, dtype,
sign_pack, density, format_version, with_a), and prints each variant's ms (mean over its runs, and the
runs themselves) and its change against BASE; copy rows give each run's copy time.
"""
import json, os, sys, collections

def main():
    args = sys.argv[1:]
    d, base, variants = args[0], args[1], args[2:]
    names = sorted(f[:-5] for f in os.listdir(d) if f.endswith('.json'))
    runs = collections.defaultdict(list)  # variant -> [(run name, rows)]
    for n in names:
        for v in [base] + variants:
            rest = n[len(v):]
            if n.startswith(v) and (rest == '' or rest[0].isdigit() or rest[0].isupper()):
                runs[v].append((n, json.load(open(os.path.join(d, n + '.json')))['rows']))
    table = collections.defaultdict(lambda: collections.defaultdict(list))
    for v, rs in runs.items():
        for n, rows in rs:
            for r in rows:
                key = (r['op'], r['dtype'], r['sign_pack'], r['density'], r.get('format_version'), r.get('with_a'), r.get('tile_order'))
                table[key][v].append((n, r['ms']))
    for key in sorted(table, key=lambda k: tuple(str(x) for x in k)):
        per = table[key]
        if base not in per:
            continue
        b = sum(ms for _, ms in per[base]) / len(per[base])
        line = f"{key[0]:>15} {key[1]:>5} sp={int(bool(key[2]))} rho={key[3]:<6} v={key[4]} a={key[5]} {key[6] or ''}: {base} {b:.4f}"
        for v in variants:
            if v in per:
                m = sum(ms for _, ms in per[v]) / len(per[v])
                runs_s = '/'.join(f'{ms:.4f}' for _, ms in per[v])
                line += f" | {v} {m:.4f} ({(m / b - 1) * 100:+.1f} %) [{runs_s}]"
        print(line)

main()
