#!/usr/bin/env python3
"""Markdown tables from the JSON lines of one bench/compare run: every tsunagi
figure next to its physical limit (tsu-bench limits) and next to the same
workload with UCX (ucx_perftest) and MPI (mpi-rma-bench), as ratios.

  bench/report.py [--best] RESULTS.jsonl [MORE.jsonl ...] > tables.md

--best: ratios (and the limits) use the best repetition of each point instead
of the median (cells still show median [min-max]).

Ratios are tsunagi / other.  For latency a ratio > 1 means tsunagi is slower;
for rate and bandwidth a ratio < 1 means tsunagi is slower.  A '-' means the
other figure was not measured (peer not installed, or no such workload).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchjson import Index, human_size, load, num, ratio  # noqa: E402


def cell(r):
    if not r:
        return "-"
    return f"{num(r['median'])} [{num(r['min'])}-{num(r['max'])}]"


STAT = "median"


def med(r):
    """The figure a ratio uses: the median over the repetitions, or with
    --best the best repetition (min for times, max for rates/bandwidths):
    on a loaded machine noise only ever makes a figure worse, so the best
    repetition is the better estimate of what the code can do."""
    if not r:
        return None
    if STAT == "best":
        return r["min"] if r.get("unit") == "ns" else r["max"]
    return r["median"]


def table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "| " + " | ".join("---:" if i else "---" for i in range(len(header))) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def loads(ix, **want):
    vals = [r["host"].get("loadavg_1m") for r in ix.all(**want) if r.get("host")]
    vals = [v for v in vals if v is not None]
    return f"{min(vals):.1f}-{max(vals):.1f}" if vals else "?"


def rma_section(ix):
    out = ["## rma: 8 B latency, overhead, rate (rank 0 -> rank 1)\n",
           f"Load average (1 min) during the tsunagi rma jobs: {loads(ix, impl='tsunagi', benchmark='rma')}. "
           "Limits: latency vs the cache-line round trip between two processes; rate vs 8-byte "
           "`memcpy` calls per second (put/get) or CPU `lock xadd` per second (fadd). Peers: MPI "
           "latency = op + `MPI_Win_flush`, one at a time; MPI rate = window of 64 + flush; UCX rate = "
           "ucx_perftest stream (ucp_put_bw / ucp_get).\n"]
    rt = ix.round_trip_ns()
    memcpy8 = ix.memcpy_gbps(8)
    memcpy_rate = memcpy8 * 1e9 / 8 / 1e6 if memcpy8 else None
    fadd_ns = ix.cpu_fadd_ns(1)
    rows = []
    for mode in ("bypass", "engine"):
        for op in ("get", "put", "fadd"):
            for thr in sorted(ix.values("threads", impl="tsunagi", benchmark="rma", op=op, size=8,
                                        mode=mode)):
                k = dict(impl="tsunagi", benchmark="rma", op=op, size=8, mode=mode, threads=thr)
                lat, ovh, rate = (ix.find(metric=m, **k) for m in ("latency", "overhead", "rate"))
                rate_limit = (1e3 / fadd_ns if fadd_ns else None) if op == "fadd" else memcpy_rate
                pk = dict(size=8, threads=1)
                if op == "fadd":
                    mpi_lat = ix.find(impl="mpi", benchmark="atomic", metric="latency", op="fadd",
                                      target="peer")
                    mpi_rate = ix.find(impl="mpi", benchmark="atomic", metric="rate", op="fadd",
                                       target="peer")
                    ucx_rate = ix.find(impl="ucx", benchmark="atomic", metric="rate", op="fadd",
                                       target="peer")
                else:
                    mpi_lat = ix.find(impl="mpi", benchmark="rma", metric="latency", op=op, **pk)
                    mpi_rate = ix.find(impl="mpi", benchmark="rma", metric="rate", op=op, **pk)
                    ucx_rate = ix.find(impl="ucx", benchmark="rma", metric="rate", op=op, **pk)
                rows.append([mode, op, thr, cell(lat), ratio(med(lat), rt), ratio(med(lat), med(mpi_lat)),
                             cell(ovh), cell(rate), ratio(med(rate), rate_limit),
                             ratio(med(rate), med(mpi_rate)), ratio(med(rate), med(ucx_rate))])
    out.append(table(["mode", "op", "thr", "latency ns", "/ round trip", "/ MPI",
                      "overhead ns", "rate Mmsg/s", "/ limit", "/ MPI", "/ UCX"], rows))
    out.append(f"\nReference: line round trip {num(rt)} ns; 8 B memcpy {num(memcpy_rate)} M/s; "
               f"CPU fetch-add {num(fadd_ns)} ns; MPI latency get/put "
               f"{num(med(ix.find(impl='mpi', metric='latency', op='get', size=8)))}/"
               f"{num(med(ix.find(impl='mpi', metric='latency', op='put', size=8)))} ns; "
               f"MPI rate get/put {num(med(ix.find(impl='mpi', benchmark='rma', metric='rate', op='get')))}/"
               f"{num(med(ix.find(impl='mpi', benchmark='rma', metric='rate', op='put')))} M/s; "
               f"UCX rate get/put {num(med(ix.find(impl='ucx', benchmark='rma', metric='rate', op='get')))}/"
               f"{num(med(ix.find(impl='ucx', benchmark='rma', metric='rate', op='put')))} M/s; "
               f"UCX put ping-pong latency (half round trip) "
               f"{num(med(ix.find(impl='ucx', metric='latency', op='put', size=8)))} ns.\n")

    # latency by size, 1 thread
    out.append("\n### rma latency by size (1 thread), with MPI (op + flush) and UCX (put ping-pong)\n")
    rows = []
    for op in ("put", "get"):
        for size in sorted(ix.values("size", impl="tsunagi", benchmark="rma", op=op, threads=1)):
            b = ix.find(impl="tsunagi", benchmark="rma", metric="latency", op=op, size=size,
                        threads=1, mode="bypass")
            e = ix.find(impl="tsunagi", benchmark="rma", metric="latency", op=op, size=size,
                        threads=1, mode="engine")
            m = ix.find(impl="mpi", benchmark="rma", metric="latency", op=op, size=size)
            u = ix.find(impl="ucx", benchmark="rma", metric="latency", op=op, size=size)
            # limit: memcpy time of `size` bytes (size / memcpy bandwidth)
            mc = ix.memcpy_gbps(size)
            limit_ns = size / mc if mc else None
            rows.append([op, human_size(size), cell(b), cell(e), num(limit_ns),
                         ratio(med(b), limit_ns), cell(m), ratio(med(b), med(m)), ratio(med(e), med(m)),
                         cell(u), ratio(med(b), med(u))])
    out.append(table(["op", "size", "bypass ns", "engine ns", "memcpy ns", "bypass / memcpy",
                      "MPI ns", "bypass / MPI", "engine / MPI", "UCX ns", "bypass / UCX"], rows))
    return "\n".join(out)


def bw_section(ix):
    out = ["\n## bandwidth by size (window 16, 1 thread)\n",
           f"Load: {loads(ix, impl='tsunagi', benchmark='bw')}. Limit: warm `memcpy` of the same size. "
           "MPI: window of 16 ops + flush; UCX: ucx_perftest ucp_put_bw / ucp_get stream.\n"]
    rows = []
    for op in ("put", "get"):
        for size in sorted(ix.values("size", impl="tsunagi", benchmark="bw", op=op)):
            b = ix.find(impl="tsunagi", benchmark="bw", op=op, size=size, mode="bypass")
            e = ix.find(impl="tsunagi", benchmark="bw", op=op, size=size, mode="engine")
            m = ix.find(impl="mpi", benchmark="bw", op=op, size=size)
            u = ix.find(impl="ucx", benchmark="bw", op=op, size=size)
            mc = ix.memcpy_gbps(size)
            rows.append([op, human_size(size), cell(b), cell(e), num(mc), ratio(med(b), mc),
                         ratio(med(e), mc), cell(m), ratio(med(b), med(m)), cell(u),
                         ratio(med(b), med(u))])
    out.append(table(["op", "size", "bypass GB/s", "engine GB/s", "memcpy GB/s", "bypass / memcpy",
                      "engine / memcpy", "MPI GB/s", "bypass / MPI", "UCX GB/s", "bypass / UCX"],
                     rows))
    return "\n".join(out)


def copy_section(ix):
    out = ["\n## copy (seed 001 section 4): 3 ranks, rank 0 issues, one request at a time\n",
           f"Load: {loads(ix, impl='tsunagi', benchmark='copy')}. Limit: `memcpy` of the same size "
           "(time = size / memcpy bandwidth). Peers have no third-party copy; remote-to-local is "
           "compared with MPI `MPI_Get`+flush, local-to-remote with `MPI_Put`+flush.\n"]
    peer_op = {"remote-to-local": "get", "local-to-remote": "put"}
    rows = []
    for case in ("remote-to-remote", "remote-to-local", "local-to-remote", "local-to-local"):
        for size in sorted(ix.values("size", impl="tsunagi", benchmark="copy", case=case)):
            k = dict(impl="tsunagi", benchmark="copy", case=case, size=size)
            bl = ix.find(metric="latency", mode="bypass", **k)
            el = ix.find(metric="latency", mode="engine", **k)
            bb = ix.find(metric="bandwidth", mode="bypass", **k)
            eb = ix.find(metric="bandwidth", mode="engine", **k)
            mc = ix.memcpy_gbps(size)
            m = ix.find(impl="mpi", benchmark="rma", metric="latency", op=peer_op.get(case, "?"),
                        size=size)
            rows.append([case, human_size(size), cell(bl), cell(el), cell(bb), cell(eb),
                         ratio(med(bb), mc), ratio(med(eb), mc), num(med(m)), ratio(med(bl), med(m))])
    out.append(table(["case", "size", "bypass ns", "engine ns", "bypass GB/s", "engine GB/s",
                      "bypass / memcpy", "engine / memcpy", "MPI ns", "bypass lat / MPI"], rows))
    return "\n".join(out)


def atomic_section(ix):
    out = ["\n## atomic (seed 002 section 5, tables 2 and 3): 8-byte fetch-add and CAS\n",
           f"Load: {loads(ix, impl='tsunagi', benchmark='atomic')}. Interference: one more thread "
           "of rank 0 streams 8-byte puts, gets or fetch-adds (window 64) to the same target rank. "
           "Limits: alone vs CPU `lock xadd` by 1 thread; with atomic interference vs 2 threads "
           "on one line (ns/op). Rate limit: 1e3 / those ns. Peers (alone only): MPI "
           "`MPI_Fetch_and_op`/`MPI_Compare_and_swap` (+flush; rate: window 64 + flush), UCX "
           "ucp_fadd/ucp_cswap stream (rate).\n"]
    f1, f2 = ix.cpu_fadd_ns(1), ix.cpu_fadd_ns(2)
    intf = [i for i in ("none", "put", "get", "atomic")
            if ix.find(impl="tsunagi", benchmark="atomic", interference=i)]
    for mode in ("bypass", "engine"):
        for target in ("own", "peer"):
            if not ix.find(impl="tsunagi", benchmark="atomic", mode=mode, target=target):
                continue
            for metric, unit in (("rate", "Mops/s"), ("latency", "ns")):
                rows = []
                for op in ("fadd", "cas"):
                    row = [op]
                    for i in intf:
                        r = ix.find(impl="tsunagi", benchmark="atomic", metric=metric, mode=mode,
                                    target=target, op=op, interference=i, threads=1)
                        lim_ns = f2 if i == "atomic" else f1
                        lim = (1e3 / lim_ns if lim_ns else None) if metric == "rate" else lim_ns
                        row.append(f"{cell(r)} ({ratio(med(r), lim)})")
                    m = ix.find(impl="mpi", benchmark="atomic", metric=metric, op=op, target=target)
                    u = ix.find(impl="ucx", benchmark="atomic", metric=metric, op=op, target=target)
                    alone = ix.find(impl="tsunagi", benchmark="atomic", metric=metric, mode=mode,
                                    target=target, op=op, interference="none", threads=1)
                    row += [num(med(m)), ratio(med(alone), med(m)), num(med(u)),
                            ratio(med(alone), med(u))]
                    rows.append(row)
                out.append(f"\n### {mode}, target {target}: {metric} {unit} "
                           f"(in parentheses: / limit)\n")
                out.append(table(["op"] + [("alone" if i == "none" else f"with {i}") for i in intf]
                                 + ["MPI", "alone / MPI", "UCX", "alone / UCX"], rows))
    out.append(f"\nLimits: CPU fetch-add {num(f1)} ns (1 thread), {num(f2)} ns per op "
               f"(2 threads, one line).\n")
    return "\n".join(out)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    global STAT
    args = sys.argv[1:]
    if args and args[0] == "--best":
        STAT = "best"
        args = args[1:]
        print("_Ratios use the best repetition of each point (min time, max rate)._\n")
    ix = Index(load(args))
    ix.best = STAT == "best"
    print(rma_section(ix))
    print(bw_section(ix))
    print(copy_section(ix))
    print(atomic_section(ix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
