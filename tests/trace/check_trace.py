#!/usr/bin/env python3
"""The timeline test: run trace_workload on 4 ranks as 2 pseudo-nodes (shared
memory inside a node, udp with 5% datagram loss between them) with
TSU_TRACE=<dir>/t.%r.json, then check that every rank's file is valid
Chrome trace-event JSON with the expected event kinds, that async spans are
paired, and that tsu-trace-merge.py merges the ranks.  Also one rank without
the launcher, whose file name gets the default .<rank>.json suffix."""
import argparse
import collections
import glob
import json
import os
import shutil
import subprocess
import sys

RANKS = 4


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check_file(path, rank):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)  # a parse error fails the test with the position
    if data.get("otherData", {}).get("rank") != rank:
        fail(f"{path}: otherData.rank is not {rank}")
    events = data["traceEvents"]
    open_spans = collections.Counter()
    # Each thread's events are written in order, threads' buffers one after
    # another: viewers order by time, and so does this check (stable sort).
    for e in sorted(events, key=lambda e: e.get("ts", 0)):
        for key in ("name", "ph", "pid"):
            if key not in e:
                fail(f"{path}: event without '{key}': {e}")
        if e["pid"] != rank:
            fail(f"{path}: event of pid {e['pid']}: {e}")
        if e["ph"] == "M":
            continue
        if not isinstance(e.get("ts"), (int, float)) or "tid" not in e or "cat" not in e:
            fail(f"{path}: event without a numeric ts, a tid or a cat: {e}")
        if e["ph"] == "X" and not e.get("dur", -1) >= 0:
            fail(f"{path}: complete event without a duration: {e}")
        if e["ph"] in "be":
            key = (e["cat"], e["name"], e["id"])
            open_spans[key] += 1 if e["ph"] == "b" else -1
            if open_spans[key] < 0:
                fail(f"{path}: async end before its begin: {e}")
    unclosed = [k for k, v in open_spans.items() if v]
    if unclosed:
        fail(f"{path}: async spans never ended: {unclosed[:5]}")
    return events


def kinds(events):
    return {(e["name"], e["ph"]) for e in events if e["ph"] != "M"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsurun", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--merge", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)

    env = dict(os.environ, TSU_TRACE=os.path.join(a.workdir, "t.%r.json"),
               TSU_UDP_IMPAIR="loss=5,seed=3")
    r = subprocess.run([a.tsurun, "-n", str(RANKS), "--ranks-per-node", "2", "--tag-output",
                        "--timeout", "60", a.program], env=env, timeout=90)
    if r.returncode:
        fail(f"the job failed (exit {r.returncode})")
    per_rank = []
    for rank in range(RANKS):
        path = os.path.join(a.workdir, f"t.{rank}.json")
        if not os.path.exists(path):
            fail(f"{path} was not written")
        per_rank.append(check_file(path, rank))
        print(f"rank {rank}: {len(per_rank[-1])} events, "
              f"{os.path.getsize(path)} bytes")

    seen = set().union(*(kinds(ev) for ev in per_rank))
    expected = {
        ("issue copy", "i"), ("issue atomic", "i"), ("bypass", "i"),
        ("request", "b"), ("request", "e"),
        ("progress", "X"), ("sleep", "X"), ("engine asleep", "i"),
        ("udp cwnd", "C"), ("udp retransmit", "i"),
        ("tsu_try_allreduce", "b"), ("tsu_try_allreduce", "e"),
        ("tsu_try_barrier", "b"), ("tsu_try_barrier", "e"),
        ("step", "b"), ("step", "e"),
    }
    missing = expected - seen
    if missing:
        fail(f"event kinds missing from every rank: {sorted(missing)}")
    # Every rank sees its own requests and collectives.
    for rank, ev in enumerate(per_rank):
        names = {e["name"] for e in ev}
        for need in ("issue copy", "bypass", "tsu_try_barrier", "progress"):
            if need not in names:
                fail(f"rank {rank}: no '{need}' event")
        threads = {e["args"]["name"] for e in ev if e["name"] == "thread_name"}
        if "tsu-progress" not in threads:
            fail(f"rank {rank}: the progress thread is not named ({threads})")

    merged = os.path.join(a.workdir, "job.json")
    r = subprocess.run([sys.executable, a.merge, "-o", merged,
                        os.path.join(a.workdir, "t.*.json")])
    if r.returncode:
        fail("tsu-trace-merge.py failed")
    with open(merged, encoding="utf-8") as f:
        job = json.load(f)
    if len(job["traceEvents"]) != sum(len(ev) for ev in per_rank):
        fail("the merged file does not hold every rank's events")
    if {e["pid"] for e in job["traceEvents"]} != set(range(RANKS)):
        fail("the merged file does not hold one process per rank")

    # One rank, no launcher, no %r: FILE.<rank>.json.
    env = dict(os.environ, TSU_TRACE=os.path.join(a.workdir, "single"))
    env.pop("TSU_BOOTSTRAP", None)
    r = subprocess.run([a.program], env=env, timeout=60)
    if r.returncode:
        fail(f"the singleton run failed (exit {r.returncode})")
    check_file(os.path.join(a.workdir, "single.0.json"), 0)
    print(f"OK: {len(seen)} event kinds, {len(job['traceEvents'])} events merged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
