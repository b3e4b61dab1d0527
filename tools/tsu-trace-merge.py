#!/usr/bin/env python3
"""Merge the per-rank timelines written with TSU_TRACE (docs/trace.md) into one
Chrome trace-event file that Perfetto (ui.perfetto.dev) or chrome://tracing
opens with one process per rank.

  tsu-trace-merge.py -o job.json trace.0.json trace.1.json ...
  tsu-trace-merge.py -o job.json 'trace.*.json'          # a glob, quoted or not

Timestamps are CLOCK_MONOTONIC, shared by the ranks of one host.  Ranks on
different hosts: --align realtime shifts each file by its recorded offset to
the wall clock (as good as the hosts' clock synchronisation).  A file cut short
(the rank died before tsu_finalize) is read up to its last complete event.
"""
import argparse
import glob
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text), False
    except json.JSONDecodeError:
        pass
    # Cut short: keep whole events (one per line), close the array.
    lines = text.rstrip().split("\n")
    while lines:
        body = "\n".join(lines).rstrip().rstrip(",")
        try:
            return json.loads(body + "\n]}"), True
        except json.JSONDecodeError:
            lines.pop()
    raise ValueError(f"{path}: not a trace file")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="merged file to write")
    ap.add_argument("--align", choices=["monotonic", "realtime"], default="monotonic",
                    help="monotonic (one host, default) or realtime (several hosts)")
    ap.add_argument("inputs", nargs="+", help="per-rank files (globs are expanded)")
    args = ap.parse_args()

    paths = []
    for pattern in args.inputs:
        found = sorted(glob.glob(pattern)) or [pattern]
        paths += [p for p in found if p not in paths]
    traces = []
    for p in paths:
        try:
            data, truncated = load(p)
        except (OSError, ValueError) as e:
            print(f"tsu-trace-merge: {e}", file=sys.stderr)
            return 1
        if truncated:
            print(f"tsu-trace-merge: {p} was cut short; merged up to its last whole event",
                  file=sys.stderr)
        traces.append((p, data))

    base = None
    events, ranks = [], []
    for p, data in traces:
        other = data.get("otherData", {})
        ranks.append(other.get("rank"))
        shift_us = 0.0
        if args.align == "realtime":
            offset = other.get("realtime_minus_monotonic_ns", 0)
            base = offset if base is None else base
            shift_us = (offset - base) / 1000.0
        for e in data.get("traceEvents", []):
            if shift_us and "ts" in e:
                e["ts"] = round(e["ts"] + shift_us, 3)
            events.append(e)
    # Threads' buffers are written one after another: order by time (stable,
    # metadata first) so every viewer reads the spans in order.
    events.sort(key=lambda e: (e.get("ph") != "M", e.get("ts", 0)))
    merged = {"displayTimeUnit": "ns",
              "otherData": {"producer": "tsu-trace-merge", "ranks": ranks, "align": args.align},
              "traceEvents": events}
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(merged, f, separators=(",", ":"))
        f.write("\n")
    print(f"tsu-trace-merge: {len(events)} events from {len(traces)} files -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
