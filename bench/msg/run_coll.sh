#!/bin/sh
# Collectives vs Open MPI (docs/benchmarks-messaging.md, section 5): tsu-bench
# coll and tsu-peers-mpi coll at 2 and 4 ranks, 8 B .. 1 MiB, RUNS times each,
# interleaved (a shared machine's load drifts), then the median per row.
# Both sides yield while they wait (tsu --yield, Open MPI mpi_yield_when_idle):
# 4 ranks oversubscribe a 2-core machine.  Placement as Open MPI's default:
# mpirun binds 2 ranks to cores 0 and 1 and leaves 4 (oversubscribed) ranks
# unbound; tsurun binds nothing, so tsu-bench gets --cpus 0,1 at 2 ranks.
# Usage: bench/msg/run_coll.sh [BUILD_DIR] [RUNS]   (default build/release, 3)
B=${1:-build/release}
RUNS=${2:-3}
OUT=$(mktemp)
for run in $(seq "$RUNS"); do
  for n in 2 4; do
    PIN=""; [ $n = 2 ] && PIN="--cpus 0,1"
    TSU_PROGRESS=manual "$B/tools/tsurun/tsurun" -n $n --timeout 300 \
      "$B/bench/tsu-bench" coll --max 1048576 --yield $PIN | sed 's/^/tsunagi /' >>"$OUT"
    mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np $n \
      "$B/bench/peers/tsu-peers-mpi" coll --max 1048576 | sed 's/^/openmpi /' >>"$OUT"
  done
done
python3 - "$OUT" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 7 and f[3] == "ranks":
        rows[(f[1], int(f[4]), f[0], int(f[2]))].append(float(f[6]))
print("| op, bytes | tsunagi 2 | Open MPI 2 | tsunagi 4 | Open MPI 4 |")
print("|---|---:|---:|---:|---:|")
ahead = total = 0
order = {"barrier": 0, "allreduce": 1, "broadcast": 2, "allgather": 3, "reduce": 4,
         "gather": 5, "alltoall": 6}
for op, size in sorted({(k[0], k[1]) for k in rows}, key=lambda k: (order.get(k[0], 9), k[1])):
    cells = []
    for n in (2, 4):
        for who in ("tsunagi", "openmpi"):
            v = rows.get((op, size, who, n))
            cells.append(f"{statistics.median(v):.3g}" if v else "-")
        t, m = rows.get((op, size, "tsunagi", n)), rows.get((op, size, "openmpi", n))
        if t and m:
            total += 1
            ahead += statistics.median(t) < statistics.median(m)
    print(f"| {op} {size} | " + " | ".join(cells) + " |")
print(f"\ntsunagi ahead in {ahead} of {total} cells")
PY
echo "raw: $OUT"
