#!/usr/bin/env python3
"""Runs UCX's ucx_perftest (Debian: ucx-utils) over shared memory on localhost
for the tsu-bench workloads and appends JSON lines in tsu-bench's schema
("impl":"ucx") -- used by bench/compare.

Each test is a server/client pair of ucx_perftest processes (the client's
"-f -v" CSV line is parsed); it runs --reps times and the median, min and max
over the runs are recorded.  What ucx_perftest measures:
  ucp_put_lat   ping-pong through memory: each side puts, the other polls;
                the reported latency is half a round trip (average over the
                iterations; the 50th percentile is kept in extra.p50_ns).
  ucp_get, ucp_fadd, ucp_cswap, ucp_put_bw
                a stream of non-blocking operations: message rate (msg/s) and
                bandwidth (MB/s = 1e6 B/s).  Their "latency" is 1/rate, not a
                one-in-flight latency, so it is not recorded.
  -l            loopback: the process targets its own memory ("own").

  ucx_perftest_json.py --json FILE [--quick] [--reps N] [--tls sm,self]
"""
import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time

PERFTEST = "ucx_perftest"


def host_facts():
    try:
        load = float(open("/proc/loadavg").read().split()[0])
    except OSError:
        load = 0.0
    return {"cpus": os.cpu_count(), "kernel": os.uname().release,
            "hostname": socket.gethostname(), "loadavg_1m": load}


def free_port():
    return random.randint(20000, 40000)


def run_once(args, test, size, iters, loopback, env):
    """One ucx_perftest run; returns the parsed CSV row (dict) or None."""
    common = ["-t", test, "-s", str(size), "-n", str(iters), "-w", str(max(10, iters // 10)),
              "-f", "-v"]
    if loopback:
        cmd = [PERFTEST, "-l"] + common
        server = None
    else:
        port = free_port()
        server = subprocess.Popen([PERFTEST, "-p", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        cmd = [PERFTEST, "localhost", "-p", str(port)] + common
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             timeout=args.timeout)
    except subprocess.TimeoutExpired:
        out = None
    finally:
        if server:
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    if out is None or out.returncode != 0:
        sys.stderr.write(f"ucx: {test} size {size}: failed or timed out\n")
        return None
    lines = [l.strip() for l in out.stdout.splitlines() if l.strip()[:1].isdigit()]
    header = [l for l in out.stdout.splitlines() if l.startswith("iterations")]
    if not lines or not header:
        sys.stderr.write(f"ucx: {test} size {size}: no CSV output\n")
        return None
    keys = header[0].split(",")
    vals = lines[-1].split(",")
    return {k: float(v) for k, v in zip(keys, vals)}


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "reps": len(values)}


def emit(args, rec):
    rec = dict(rec)
    rec.update({"impl": "ucx", "threads": 1, "mode": "ucp", "transport": "shm",
                "duration_ms": 0, "quick": args.quick, "host": host_facts(),
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    with open(args.json, "a") as f:
        f.write(json.dumps(rec) + "\n")


def measure(args, env, test, size, iters, loopback=False):
    rows = []
    for _ in range(args.reps):
        r = run_once(args, test, size, iters, loopback, env)
        if r:
            rows.append(r)
    return rows


def fmt(s):
    return f"{s['median']:.4g} [{s['min']:.4g}-{s['max']:.4g}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tls", default="sm,self")
    ap.add_argument("--timeout", type=float, default=20, help="seconds per run")
    args = ap.parse_args()
    if subprocess.run(["sh", "-c", f"command -v {PERFTEST}"], capture_output=True).returncode:
        print("ucx: ucx_perftest not installed (apt-get install ucx-utils): skipping UCX")
        return 0
    if args.quick:
        args.reps = 1
    env = dict(os.environ, UCX_TLS=args.tls)
    lat_sizes = [8, 4096] if args.quick else [4 ** k for k in range(12)]  # 1 B .. 4 MiB
    bw_sizes = [8, 1 << 20] if args.quick else [8 * 4 ** k for k in range(12)] + [64 << 20]
    lat_iters = 100 if args.quick else 2000

    print(f"\n## ucx_perftest (UCX_TLS={args.tls}), reps={args.reps}, "
          f"load(1m)={host_facts()['loadavg_1m']}\n")
    print("| test | size | figure | median [min-max] | unit |")
    print("| --- | ---: | --- | ---: | --- |")

    def record(bench, metric, op, size, unit, values, labels=None, extra=None):
        if not values:
            return
        s = summary(values)
        rec = {"benchmark": bench, "metric": metric, "op": op, "size": size, "unit": unit}
        rec.update(s)
        if labels:
            rec.update(labels)
        if extra:
            rec["extra"] = extra
        emit(args, rec)
        print(f"| {op} | {size} | {bench} {metric} | {fmt(s)} | {unit} |", flush=True)

    # put latency: ping-pong, half a round trip
    for size in lat_sizes:
        rows = measure(args, env, "ucp_put_lat", size, lat_iters)
        record("rma", "latency", "put", size, "ns", [r["overall_lat"] * 1e3 for r in rows],
               extra={"p50_ns": statistics.median(r["50.0_percentile_lat"] * 1e3 for r in rows)
                      if rows else 0, "ucx_test": "ucp_put_lat"})
    # message rate, 8 B
    rate_iters = 20000 if args.quick else 1000000
    for test, op in (("ucp_put_bw", "put"), ("ucp_get", "get")):
        rows = measure(args, env, test, 8, rate_iters)
        record("rma", "rate", op, 8, "Mmsg/s", [r["overall_mr"] / 1e6 for r in rows],
               extra={"ucx_test": test})
    # bandwidth by size
    for test, op in (("ucp_put_bw", "put"), ("ucp_get", "get")):
        for size in bw_sizes:
            iters = int(max(20, min(200000, 4e8 / size)))
            if args.quick:
                iters = max(10, iters // 100)
            rows = measure(args, env, test, size, iters)
            record("bw", "bandwidth", op, size, "GB/s", [r["overall_bw"] * 1e6 / 1e9 for r in rows],
                   extra={"ucx_test": test})
    # atomics: rate on a peer's memory and on its own (loopback)
    for target, loopback in (("peer", False), ("own", True)):
        for test, op in (("ucp_fadd", "fadd"), ("ucp_cswap", "cas")):
            rows = measure(args, env, test, 8, rate_iters, loopback)
            record("atomic", "rate", op, 8, "Mops/s", [r["overall_mr"] / 1e6 for r in rows],
                   labels={"target": target, "interference": "none"}, extra={"ucx_test": test})
    return 0


if __name__ == "__main__":
    sys.exit(main())
