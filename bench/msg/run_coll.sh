#!/bin/sh
# Collectives vs Open MPI (docs/benchmarks-coll.md): tsu-bench coll and
# tsu-peers-mpi coll at 2 and 4 ranks, 8 B .. 1 MiB, RUNS times each,
# interleaved (a shared machine's load drifts), then the median per cell
# with the spread (min-max of the runs) and which side is ahead.
# tsunagi runs with its default settings (it yields by itself where the node
# is oversubscribed, TSU_YIELD=auto); Open MPI is told to (mpi_yield_when_idle):
# 4 ranks oversubscribe a 2-core machine.  Placement as Open MPI's default:
# mpirun binds 2 ranks to cores 0 and 1 and leaves 4 (oversubscribed) ranks
# unbound; tsurun binds nothing, so tsu-bench gets --cpus 0,1 at 2 ranks.
# The load average before each run goes into the raw file (a loaded machine
# moves both columns by several times: read the spread).
# Usage: bench/msg/run_coll.sh [BUILD_DIR] [RUNS] [RANKS...]
#        (default build/release, 3, "2 4")
# A/B: with OLD=OTHER_BUILD_DIR set, each run also runs that build's tsu-bench
# (old and BUILD_DIR's take turns going first, then Open MPI), and the table gets an "old N"
# column per rank count and counts the cells ahead for both builds.
B=${1:-build/release}
RUNS=${2:-3}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
RANKS=${*:-2 4}
OUT=${RAW:-$(mktemp)}  # RAW=FILE: append the raw output there (kept)
tsu() {  # tsu LABEL BUILD N: one tsu-bench coll run
  echo "load $(cut -d' ' -f1 /proc/loadavg) before $1 $3, run $run" >>"$OUT"
  "$2/tools/tsurun/tsurun" -n "$3" --timeout 300 \
    "$2/bench/tsu-bench" coll --max 1048576 $PIN | sed "s/^/$1 /" >>"$OUT"
}
for run in $(seq "$RUNS"); do
  for n in $RANKS; do
    PIN=""; [ "$n" = 2 ] && PIN="--cpus 0,1"
    # A/B: old and new take turns going first.
    if [ -n "$OLD" ] && [ $((run % 2)) = 1 ]; then tsu old "$OLD" "$n"; fi
    tsu tsunagi "$B" "$n"
    if [ -n "$OLD" ] && [ $((run % 2)) = 0 ]; then tsu old "$OLD" "$n"; fi
    echo "load $(cut -d' ' -f1 /proc/loadavg) before openmpi $n, run $run" >>"$OUT"
    mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np "$n" \
      "$B/bench/peers/tsu-peers-mpi" coll --max 1048576 | sed 's/^/openmpi /' >>"$OUT"
  done
done
python3 - "$OUT" "$RANKS" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
loads = []
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "load":
        loads.append(float(f[1]))
    elif len(f) >= 7 and f[3] == "ranks":
        rows[(f[1], int(f[4]), f[0], int(f[2]))].append(float(f[6]))
ranks = [int(r) for r in sys.argv[2].split()]
ab = any(k[2] == "old" for k in rows)
if ab:
    head = " | ".join(f"old {n} | tsunagi {n} | Open MPI {n} | old {n} | {n}" for n in ranks)
else:
    head = " | ".join(f"tsunagi {n} | Open MPI {n} | {n}" for n in ranks)
print(f"| op, bytes | {head} |")
print("|---|" + ("---:|---:|---:|:-:|:-:|" if ab else "---:|---:|:-:|") * len(ranks))
ahead = total = old_ahead = 0
order = {"barrier": 0, "allreduce": 1, "broadcast": 2, "allgather": 3, "reduce": 4,
         "gather": 5, "alltoall": 6}
def cell(v):
    m = statistics.median(v)
    return f"{m:.3g}" + (f" ({min(v):.3g}-{max(v):.3g})" if len(v) > 1 else "")
for op, size in sorted({(k[0], k[1]) for k in rows}, key=lambda k: (order.get(k[0], 9), k[1])):
    cells = []
    for n in ranks:
        t, m = rows.get((op, size, "tsunagi", n)), rows.get((op, size, "openmpi", n))
        o = rows.get((op, size, "old", n))
        if ab:
            cells.append(cell(o) if o else "-")
        cells += [cell(t) if t else "-", cell(m) if m else "-"]
        if ab:
            if o and m:
                old_lead = statistics.median(o) < statistics.median(m)
                old_ahead += old_lead
                cells.append("ahead" if old_lead else "**behind**")
            else:
                cells.append("")
        if t and m:
            total += 1
            lead = statistics.median(t) < statistics.median(m)
            ahead += lead
            cells.append("ahead" if lead else "**behind**")
        else:
            cells.append("")
    print(f"| {op} {size} | " + " | ".join(cells) + " |")
print(f"\ntsunagi ahead in {ahead} of {total} cells (medians of {max(len(v) for v in rows.values())} runs)")
if ab:
    print(f"old ahead in {old_ahead} of {total} cells")
if loads:
    print(f"load average before the runs: {min(loads):.2f} - {max(loads):.2f} (median {statistics.median(loads):.2f})")
PY
echo "raw: $OUT"
