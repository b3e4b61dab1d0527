#!/usr/bin/env python3
"""Summarizes bench/ab-lib.sh output: per (route, op) the median over rounds of
A and B, and the median of the per-round ratio B/A (rounds are interleaved, so
the ratio of a round cancels most of the machine's drift).

  bench/ab-lib.sh A B 6 > ab.txt; bench/ab-summary.py ab.txt"""
import collections
import re
import statistics
import sys

# "<A|B> <route> r=<n> | op | size | thr | wait | lat [..] | ovh [..] | eagain | rate [..] |"
RMA = re.compile(r"^(A|B) (\S+) r=(\d+) \| (\w+)\s*\|\s*(\S+ B)\s*\|.*?\|.*?\|\s*([\d.]+) \[.*?\|\s*([\d.]+) \[.*?\|.*?\|\s*([\d.]+) \[")
# "<A|B> pingpong r=<n>  bytes median best ..."
PING = re.compile(r"^(A|B) pingpong r=(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)")


def main():
    data = collections.defaultdict(lambda: collections.defaultdict(dict))  # key -> round -> {A,B}
    for line in open(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin"):
        m = RMA.match(line)
        if m:
            v, route, rnd, op, size, lat, ovh, rate = m.groups()
            for metric, val in (("latency ns", lat), ("overhead ns", ovh), ("rate Mmsg/s", rate)):
                data[(route, op, size, metric)][int(rnd)][v] = float(val)
            continue
        m = PING.match(line)
        if m:
            v, rnd, size, med, _ = m.groups()
            data[("pingpong", "half-rtt", size + " B", "median us")][int(rnd)][v] = float(med)
    print("| route | op | size | metric | A median | B median | B/A per round: median [min-max] | rounds |")
    print("|---|---|---|---|--:|--:|--:|--:|")
    for key in sorted(data, key=lambda k: (k[0], k[1], k[3])):
        rounds = [r for r in data[key].values() if "A" in r and "B" in r]
        if not rounds:
            continue
        a = statistics.median(r["A"] for r in rounds)
        b = statistics.median(r["B"] for r in rounds)
        ratios = [r["B"] / r["A"] for r in rounds if r["A"]]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {a:.4g} | {b:.4g} | "
              f"{statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}] | {len(rounds)} |")


if __name__ == "__main__":
    main()
