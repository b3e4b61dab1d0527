#!/usr/bin/python3
"""PNG figures from tsu-bench JSON lines, shaped like the seed papers' figures:
log-scale message size on x, one line per thread count / mode / case / peer.

  bench/plot.py RESULTS.jsonl [MORE.jsonl ...] --out DIR

Writes (each only when its data is present): rma_latency.png, rma_overhead.png,
rma_rate.png (seed 000), bandwidth.png, copy.png (seed 001), atomic.png
(seed 002 tables 2/3 as bars).  Needs matplotlib (Debian: python3-matplotlib,
run with /usr/bin/python3); exits 77 (CTest SKIP_RETURN_CODE) without it.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchjson import Index, human_size, load  # noqa: E402

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except ImportError:
    print("plot.py: matplotlib not available (apt-get install python3-matplotlib; "
          "run with /usr/bin/python3): skipping")
    sys.exit(77)

SIZE_FMT = FuncFormatter(lambda v, _: human_size(int(v)) if v >= 1 else "")
MODE_STYLE = {"bypass": "-", "engine": "--"}
THREAD_COLOR = {1: "tab:blue", 2: "tab:orange", 4: "tab:green", 8: "tab:brown", 16: "tab:pink"}
PEER_STYLE = {"mpi": dict(color="tab:red", ls=":", marker="s"),
              "ucx": dict(color="tab:purple", ls="-.", marker="^"),
              "limits": dict(color="black", ls="-", marker=None, lw=2, alpha=0.5)}


def series(ix, x="size", **want):
    dedup = {}
    for r in ix.all(**want):
        dedup[r[x]] = r  # last record wins
    xs = sorted(dedup)
    return xs, [dedup[k]["median"] for k in xs], [dedup[k]["min"] for k in xs], \
        [dedup[k]["max"] for k in xs]


def draw(ax, xs, med, lo, hi, label, **style):
    if not xs:
        return
    ax.plot(xs, med, label=label, marker=style.pop("marker", "o"), ms=3, **style)
    if len(xs) > 1 and lo and hi:
        ax.fill_between(xs, lo, hi, alpha=0.15, color=ax.lines[-1].get_color())


def size_axis(ax, ylabel, logy=True):
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_formatter(SIZE_FMT)
    ax.set_xlabel("message size")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)


def finish(fig, axes, path, title):
    for ax in axes:
        if ax.lines:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot.py: wrote {path}")


def load_note(ix, **want):
    vals = [r["host"]["loadavg_1m"] for r in ix.all(**want) if r.get("host")]
    return f"load(1m) {min(vals):.1f}-{max(vals):.1f}" if vals else ""


def rma_figures(ix, out):
    for metric, unit, peer_metric in (("latency", "ns", "latency"), ("overhead", "ns", None),
                                      ("rate", "M msg/s", None)):
        if not ix.find(impl="tsunagi", benchmark="rma", metric=metric):
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, op in zip(axes, ("put", "get")):
            for mode in ("bypass", "engine"):
                for thr in sorted(ix.values("threads", impl="tsunagi", benchmark="rma", op=op,
                                            mode=mode, metric=metric)):
                    xs, m, lo, hi = series(ix, impl="tsunagi", benchmark="rma", metric=metric,
                                           op=op, mode=mode, threads=thr)
                    if len(xs) > 1:
                        draw(ax, xs, m, lo, hi, f"tsunagi {mode}, {thr} thr",
                             ls=MODE_STYLE[mode], color=THREAD_COLOR.get(thr))
            if peer_metric:
                for impl in ("mpi", "ucx"):
                    xs, m, lo, hi = series(ix, impl=impl, benchmark="rma", metric=peer_metric, op=op)
                    label = {"mpi": "MPI-3 RMA (op+flush)",
                             "ucx": "UCX put ping-pong (1/2 RTT)"}[impl]
                    draw(ax, xs, m, lo, hi, label, **dict(PEER_STYLE[impl]))
            ax.set_title(f"{op}")
            size_axis(ax, f"{metric} ({unit})")
        finish(fig, axes, os.path.join(out, f"rma_{metric}.png"),
               f"tsu-bench rma: {metric} by size, rank 0 -> rank 1 "
               f"({load_note(ix, impl='tsunagi', benchmark='rma')})")


def bandwidth_figure(ix, out):
    if not ix.find(impl="tsunagi", benchmark="bw"):
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, op in zip(axes, ("put", "get")):
        for mode in ("bypass", "engine"):
            xs, m, lo, hi = series(ix, impl="tsunagi", benchmark="bw", op=op, mode=mode)
            draw(ax, xs, m, lo, hi, f"tsunagi {mode}", ls=MODE_STYLE[mode])
        for impl, label in (("mpi", "MPI-3 RMA (window 16 + flush)"),
                            ("ucx", "UCX ucx_perftest stream")):
            xs, m, lo, hi = series(ix, impl=impl, benchmark="bw", op=op)
            draw(ax, xs, m, lo, hi, label, **dict(PEER_STYLE[impl]))
        xs, m, lo, hi = series(ix, impl="limits", metric="memcpy_bandwidth")
        draw(ax, xs, hi, None, None, "memcpy (limit, best rep.)", **dict(PEER_STYLE["limits"]))
        ax.set_title(op)
        size_axis(ax, "bandwidth (GB/s)")
    finish(fig, axes, os.path.join(out, "bandwidth.png"),
           f"bandwidth by size, window 16, 1 thread ({load_note(ix, impl='tsunagi', benchmark='bw')})")


def copy_figure(ix, out):
    if not ix.find(impl="tsunagi", benchmark="copy"):
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"remote-to-remote": "tab:blue", "remote-to-local": "tab:orange",
              "local-to-remote": "tab:green", "local-to-local": "tab:gray"}
    for ax, metric, unit in ((axes[0], "latency", "ns"), (axes[1], "bandwidth", "GB/s")):
        for case, color in colors.items():
            for mode in ("bypass", "engine"):
                xs, m, lo, hi = series(ix, impl="tsunagi", benchmark="copy", metric=metric,
                                       case=case, mode=mode)
                draw(ax, xs, m, lo, hi, f"{case}, {mode}", ls=MODE_STYLE[mode], color=color)
        if metric == "bandwidth":
            xs, m, lo, hi = series(ix, impl="limits", metric="memcpy_bandwidth")
            xs2 = [x for x in xs if x <= 4 << 20]
            draw(ax, xs2, hi[:len(xs2)], None, None, "memcpy (limit, best rep.)",
                 **dict(PEER_STYLE["limits"]))
        ax.set_title(metric)
        size_axis(ax, f"{metric} ({unit})")
    finish(fig, axes, os.path.join(out, "copy.png"),
           f"tsu-bench copy: 3 ranks, rank 0 issues, one request at a time "
           f"({load_note(ix, impl='tsunagi', benchmark='copy')})")


def atomic_figure(ix, out):
    if not ix.find(impl="tsunagi", benchmark="atomic"):
        return
    modes = [m for m in ("bypass", "engine") if ix.find(impl="tsunagi", benchmark="atomic", mode=m)]
    intf = [i for i in ("none", "put", "get", "atomic")
            if ix.find(impl="tsunagi", benchmark="atomic", interference=i)]
    bars = [(op, tgt) for tgt in ("own", "peer") for op in ("fadd", "cas")
            if ix.find(impl="tsunagi", benchmark="atomic", op=op, target=tgt)]
    fig, axes = plt.subplots(len(modes), 2, figsize=(11, 3.6 * len(modes)), squeeze=False)
    width = 0.8 / max(1, len(bars))
    for row, mode in enumerate(modes):
        for col, (metric, unit) in enumerate((("rate", "M ops/s"), ("latency", "ns"))):
            ax = axes[row][col]
            for b, (op, tgt) in enumerate(bars):
                vals, errs_lo, errs_hi = [], [], []
                for i in intf:
                    r = ix.find(impl="tsunagi", benchmark="atomic", metric=metric, mode=mode,
                                op=op, target=tgt, interference=i, threads=1)
                    v = r["median"] if r else 0
                    vals.append(v)
                    errs_lo.append(v - r["min"] if r else 0)
                    errs_hi.append(r["max"] - v if r else 0)
                xs = [k + (b - (len(bars) - 1) / 2) * width for k in range(len(intf))]
                ax.bar(xs, vals, width, yerr=[errs_lo, errs_hi], capsize=2,
                       label=f"{op}, {tgt} memory")
            ax.set_xticks(range(len(intf)))
            ax.set_xticklabels(["alone" if i == "none" else f"with {i}" for i in intf])
            ax.set_yscale("log")
            ax.set_ylabel(f"{metric} ({unit})")
            ax.set_title(f"{mode}: {metric} (table {'2' if metric == 'rate' else '3'} layout)")
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"tsu-bench atomic: 8-byte fetch-add / CAS alone and with interference "
                 f"({load_note(ix, impl='tsunagi', benchmark='atomic')})", fontsize=11)
    fig.tight_layout()
    path = os.path.join(out, "atomic.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot.py: wrote {path}")


def main():
    ap = argparse.ArgumentParser(description="tsu-bench JSON lines -> PNG figures")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ix = Index(load(args.inputs))
    if not ix.recs:
        print("plot.py: no records")
        return 1
    rma_figures(ix, args.out)
    bandwidth_figure(ix, args.out)
    copy_figure(ix, args.out)
    atomic_figure(ix, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
