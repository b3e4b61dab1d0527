#!/usr/bin/env bash
# Oversubscription probe, old and new libraries interleaved (ROUNDS rounds).
# (As run: probe built from oversub_probe.cpp into /tmp/oversub, the libraries of
# main 2bd38b9 in /tmp/old-lib and of this branch in /tmp/new-lib, tsurun of main.)
#   run_probe.sh ROUNDS N_ROUNDS_PER_RUN
rounds=${1:-3}; n=${2:-200}
P=/tmp/oversub/probe; R=/tmp/old-lib/tsurun
for r in $(seq "$rounds"); do
  for v in old new; do
    L=/tmp/$v-lib
    t() { echo -n "$v r=$r $1: "; shift; env LD_LIBRARY_PATH=$L timeout 300 "$@" 2>&1 | grep -E "^(ring|am) rank 0"; }
    t "local, 4 workers, ring 4" env TSU_ULT_WORKERS=4 $P ring 4 $n
    t "tsurun -n 1, 4 workers, ring 4" env TSU_ULT_WORKERS=4 $R -n 1 $P ring 4 $n
    t "tsurun -n 2, 2 workers/rank, ring 2 per rank" env TSU_ULT_WORKERS=2 $R -n 2 $P ring 2 $n
    t "tsurun -n 2, am ping-pong, wait by yield" $R -n 2 $P am $((n*5))
    t "local, 2 workers, ring 2 (not counted)" env TSU_ULT_WORKERS=2 $P ring 2 $n
  done
done
