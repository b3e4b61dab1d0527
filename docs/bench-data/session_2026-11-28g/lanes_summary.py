#!/usr/bin/env python3
"""lanes_summary.py device/engine.txt: the engine path's 8 B rate and latency
by issuing threads and TSU_PROGRESS_THREADS, both rounds side by side."""
import re, sys
from collections import defaultdict

cells = defaultdict(list)  # (op, threads, K) -> [(lat, rate)] per round
k = None
for line in open(sys.argv[1]):
    m = re.match(r"== round (\d+) TSU_BYPASS=0 TSU_PROGRESS_THREADS=(\d+)", line)
    if m:
        k = int(m.group(2))
        continue
    if line.startswith("== bypass"):
        k = "bypass"
        continue
    f = [x.strip() for x in line.split("|")]
    if len(f) > 8 and f[1] in ("put", "get", "fadd") and k is not None:
        cells[(f[1], int(f[3]), k)].append((float(f[5].split()[0]), float(f[8].split()[0])))

ks = sorted({c[2] for c in cells if c[2] != "bypass"})
print("| op | threads | " + " | ".join(f"N={k}: rate M/s" for k in ks) + " | " +
      " | ".join(f"N={k}: latency ns" for k in ks) + " | bypass rate |")
print("|---|---:|" + "---:|" * (2 * len(ks) + 1))
for op in ("put", "get", "fadd"):
    for t in sorted({c[1] for c in cells}):
        rates = [" / ".join(f"{r:.1f}" for _, r in cells[(op, t, k)]) for k in ks]
        lats = [" / ".join(f"{l:.0f}" for l, _ in cells[(op, t, k)]) for k in ks]
        byp = " / ".join(f"{r:.1f}" for _, r in cells.get((op, t, "bypass"), []))
        print(f"| {op} | {t} | " + " | ".join(rates) + " | " + " | ".join(lats) + f" | {byp} |")
