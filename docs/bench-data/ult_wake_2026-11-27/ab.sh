#!/bin/bash
# Interleaved A/B: old (main f4e7fb6) vs new (wip-ult-wake) libraries, same
# benchmark binary, same launcher.  OLD_BUILD / NEW_BUILD: the two build
# directories (defaults: the ones used on 2026-11-27).
OLD_BUILD=${OLD_BUILD:-/work/ult-baseline/build/release}
NEW_BUILD=${NEW_BUILD:-/work/wt-ult/build/release}
OLD=$OLD_BUILD/src:$OLD_BUILD/src/ult
NEW=$NEW_BUILD/src:$NEW_BUILD/src/ult
RUN=$NEW_BUILD/tools/tsurun/tsurun
REPS=${REPS:-7}
for rep in $(seq $REPS); do
  for mode in ${MODES:-thread manual}; do
    for cfg in "1 2000" "64 100"; do
      for lib in old new; do
        L=$OLD; [ $lib = new ] && L=$NEW
        out=$(LD_LIBRARY_PATH=$L TSU_PROGRESS=$mode timeout 120 $RUN -n 2 /tmp/ultbench/rt $cfg 2>&1 | grep '^T=')
        echo "rep=$rep mode=$mode lib=$lib $out"
      done
    done
  done
done
