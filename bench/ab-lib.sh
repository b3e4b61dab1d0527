#!/usr/bin/env bash
# Interleaved A/B of two builds of the library on one node and over udp
# loopback: ROUNDS rounds of {8 B get/put/fetch-add with bypass, through the
# engine, across two pseudo-nodes; tagged pingpong 8 B..4 KiB}, A then B in
# each round, each build with its own tsurun (the bootstrap protocol may
# differ) and B's benchmark binaries.  Compare rounds, not runs minutes apart.
#   bench/ab-lib.sh A_BUILD_DIR B_BUILD_DIR [ROUNDS (6)] > ab.txt
# Lines: "<A|B> <route> r=<round> <tsu-bench table row>".
set -euo pipefail
a=$1 b=$2 rounds=${3:-6}
prio=${PRIO:-chrt -f 10}
for round in $(seq "$rounds"); do
  for v in A B; do
    d=$a; [[ $v == B ]] && d=$b
    run() { LD_LIBRARY_PATH=$d/src $prio "$d/tools/tsurun/tsurun" "$@"; }
    rma=(--ops get,put,fadd --threads 1 --sizes 8 --reps 5 --duration-ms 20)
    for mode in 1 0; do
      TSU_BYPASS=$mode run -n 2 "$b/bench/tsu-bench" rma "${rma[@]}" 2>&1 |
        grep -E '^\| (get|put|fadd)' | sed "s/^/$v bypass=$mode r=$round /"
    done
    run -n 2 --ranks-per-node 1 "$b/bench/tsu-bench" rma "${rma[@]}" 2>&1 |
      grep -E '^\| (get|put|fadd)' | sed "s/^/$v udp r=$round /"
    run -n 2 "$b/bench/tsu-bench" pingpong --min 8 --max 4096 --cpus 0,1 2>&1 |
      grep -E '^ +[0-9]+ ' | sed "s/^/$v pingpong r=$round /"
  done
done
