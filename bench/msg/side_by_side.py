#!/usr/bin/env python3
"""Summarizes interleaved rounds of tsunagi's and Open MPI's default-settings
jobs from bench/msg/run_pingpong.sh: per size, the median over the rounds of
each side, their ratio, and the median (and range) of the rounds' own ratios.

A round runs each pair back to back, so a round's ratio compares the two in
one machine state; on a VM whose cross-core speed changes between runs and
within them (the 2-core test host has two or three speeds), neither side's
median over a few rounds is safe from landing in the slow state more often,
so the fastest round of each side (the machine can only slow a run down) is
printed beside them.

Usage: side_by_side.py DIR
DIR holds files NAME.ROUND with the benchmarks' tables, NAME one of
tsu_plain, mpi_plain, tsu_prepost, mpi_prepost, tsu_stream, mpi_stream.
"""
import glob
import os
import statistics
import sys

# (title, tsunagi job, Open MPI job, unit, lower is better)
PAIRS = [
    ("pingpong, plain receives", "tsu_plain", "mpi_plain", "us", True),
    ("pingpong, pre-posted receives", "tsu_prepost", "mpi_prepost", "us", True),
    ("message rate, window of 64", "tsu_stream", "mpi_stream", "M msg/s", False),
]


def table(path):
    """size -> the second column (median latency or rate) of one run."""
    rows = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 2 and fields[0].isdigit():
                try:
                    rows[int(fields[0])] = float(fields[1])
                except ValueError:
                    pass
    return rows


def rounds(directory, name):
    files = sorted(glob.glob(os.path.join(directory, name + ".*")),
                   key=lambda p: int(p.rsplit(".", 1)[1]))
    return [table(p) for p in files]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    for title, tsu_name, mpi_name, unit, lower in PAIRS:
        tsu, mpi = rounds(d, tsu_name), rounds(d, mpi_name)
        if not tsu or not mpi:
            continue
        n = min(len(tsu), len(mpi))
        print(f"# {title}: tsunagi beside Open MPI, {n} interleaved rounds, {unit} "
              f"({'lower' if lower else 'higher'} is better)")
        print(f"{'bytes':>10} {'tsunagi':>10} {'Open MPI':>10} {'ratio':>7} "
              f"{'per round: median [min-max]':>30} {'fastest: tsunagi':>17} "
              f"{'Open MPI':>9} {'ratio':>6}")
        sizes = sorted(set.intersection(*(set(r) for r in tsu[:n] + mpi[:n])))
        for size in sizes:
            t = [r[size] for r in tsu[:n]]
            m = [r[size] for r in mpi[:n]]
            per_round = sorted(a / b for a, b in zip(t, m) if b > 0)
            if not per_round:
                continue
            tm, mm = statistics.median(t), statistics.median(m)
            best = min if lower else max
            tb, mb = best(t), best(m)
            bracket = f"[{per_round[0]:.2f}-{per_round[-1]:.2f}]"
            print(f"{size:>10} {tm:>10.3f} {mm:>10.3f} {tm / mm:>7.2f} "
                  f"{statistics.median(per_round):>14.2f} {bracket:>15} "
                  f"{tb:>17.3f} {mb:>9.3f} {tb / mb:>6.2f}")
        print()


if __name__ == "__main__":
    main()
