"""Shared reader for tsu-bench JSON lines (tsunagi, limits, UCX, MPI records):
bench/report.py and bench/plot.py use it.  Python 3 standard library only."""
import json
import sys


def load(paths):
    recs = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError:
                    sys.stderr.write(f"{path}:{n}: not JSON, skipped\n")
    for r in recs:
        r.setdefault("impl", "tsunagi" if r.get("benchmark") != "limits" else "limits")
        if r.get("benchmark") == "limits":
            r["impl"] = "limits"
    return recs


class Index:
    """Last record for each key; keys are tuples of field values."""

    FIELDS = ("impl", "benchmark", "metric", "op", "size", "threads", "mode", "transport",
              "case", "target", "interference")

    def __init__(self, recs):
        self.recs = recs

    def find(self, **want):
        hit = None
        for r in self.recs:
            if all(r.get(k) == v for k, v in want.items()):
                hit = r
        return hit

    def all(self, **want):
        return [r for r in self.recs if all(r.get(k) == v for k, v in want.items())]

    def values(self, field, **want):
        out = []
        for r in self.all(**want):
            v = r.get(field)
            if v not in out:
                out.append(v)
        return out

    # --- limits -----------------------------------------------------------
    best = False  # True: limits use their best repetition (max GB/s, min ns)

    def memcpy_gbps(self, size):
        r = self.find(impl="limits", metric="memcpy_bandwidth", size=size)
        return (r["max"] if self.best else r["median"]) if r else None

    def round_trip_ns(self):
        r = self.find(impl="limits", metric="line_round_trip", transport="processes")
        return (r["min"] if self.best else r["median"]) if r else None

    def cpu_fadd_ns(self, threads=1):
        r = self.find(impl="limits", metric="atomic_fadd", threads=threads)
        return (r["min"] if self.best else r["median"]) if r else None


def human_size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or n % 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TiB"


def num(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000 or a == 0:
        return f"{v:.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 10:
        return f"{v:.2f}"
    return f"{v:.3f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"
