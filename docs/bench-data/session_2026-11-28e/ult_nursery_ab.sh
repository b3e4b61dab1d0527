#!/usr/bin/env bash
# Interleaved A/B of the local ULT rows (tsu-bench ult) and the tree-search
# demo, old and new library chosen by LD_LIBRARY_PATH, same binaries.
#   ult_nursery_ab.sh OLD_BUILD NEW_BUILD ROUNDS
# Each round: both sides, the order alternating; bench with 1 and 2 workers
# (2 = the library's default on this 2-core machine), demo with the default.
set -u
old=$1 new=$2 rounds=${3:-4}
bin=$new
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order="old new"; else order="new old"; fi
  for side in $order; do
    if [[ $side == old ]]; then b=$old; else b=$new; fi
    lib=$b/src:$b/src/ult
    for w in 1 2; do
      echo "== round $r $side workers=$w"
      LD_LIBRARY_PATH=$lib $bin/tools/tsurun/tsurun -n 1 $bin/bench/tsu-bench ult --reps 5 \
        --iters 200000 --workers $w 2>&1 | grep -E "^\| (switch|create|mutex)"
    done
    echo "== round $r $side demo (default workers)"
    LD_LIBRARY_PATH=$lib $bin/tools/tsurun/tsurun -n 1 $bin/examples/ult_tree_search 20 2>&1 | tail -3
  done
done
