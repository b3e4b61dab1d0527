#!/usr/bin/env python3
"""Summarises bench/net/ab_ofi_netns.sh output (ab.jsonl): per metric, for A
and B, the median / mean / p99 over rounds of each round's figure, and the
median of the per-round ratio B/A (rounds are interleaved).  Latency rows use
each round's median, mean and p99 (µs), rate rows M ops/s.

  bench/net/ab_ofi_summary.py OUT_DIR/ab.jsonl"""
import collections
import json
import statistics
import sys


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def main():
    data = collections.defaultdict(lambda: collections.defaultdict(dict))  # key -> round -> {A,B}
    for line in open(sys.argv[1]):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        v, r = j.get("v"), j.get("round")
        if j.get("bench") == "tsu_latency":
            for f in ("median_us", "mean_us", "p99_us"):
                data[(f"{j['op']} 8 B latency", f)][r][v] = j[f]
        elif j.get("bench") == "tsu_msg_rate":
            data[(f"{j.get('op', 'put')} rate, {j['threads']} thr", "M/s")][r][v] = j["Mmsgs"]
    print("| metric | | A: median / mean / p99 over rounds | B: median / mean / p99 | B/A per round: median [min-max] | rounds |")
    print("|---|---|--:|--:|--:|--:|")
    for key in data:
        rounds = [x for x in data[key].values() if "A" in x and "B" in x]
        if not rounds:
            continue
        cell = []
        for v in "AB":
            xs = [x[v] for x in rounds]
            cell.append(f"{statistics.median(xs):.4g} / {statistics.mean(xs):.4g} / {pct(xs, 99):.4g}")
        ratios = [x["B"] / x["A"] for x in rounds if x["A"]]
        print(f"| {key[0]} | {key[1]} | {cell[0]} | {cell[1]} | "
              f"{statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}] | {len(rounds)} |")


if __name__ == "__main__":
    main()
