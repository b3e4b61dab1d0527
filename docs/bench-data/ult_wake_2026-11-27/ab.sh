#!/bin/bash
# Interleaved A/B: old (main f4e7fb6, /work/ult-baseline) vs new (wip-ult-wake) libraries,
# same benchmark binary, same launcher.
OLD=/work/ult-baseline/build/release/src:/work/ult-baseline/build/release/src/ult
NEW=/work/wt-ult/build/release/src:/work/wt-ult/build/release/src/ult
RUN=/work/wt-ult/build/release/tools/tsurun/tsurun
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
