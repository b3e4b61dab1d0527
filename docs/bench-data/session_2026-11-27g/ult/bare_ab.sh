#!/bin/bash
# Bare loops, thread CPU time, best of 5 reps per run: the raw jump_fcontext
# round trip (raw.cpp), two ULTs yielding (ys.cpp), create + join of an empty
# ULT from a ULT (yc.cpp); one worker.  Old and new libtsunagi-ult chosen by
# LD_LIBRARY_PATH, interleaved per round.
#   bare_ab.sh OLD_BUILD NEW_BUILD ROUNDS   (builds: <tree>/build/release)
# Build the three programs first, against NEW's headers:
#   g++ -O2 -o raw raw.cpp -lboost_context
#   g++ -O2 -I<tree>/include -o ys ys.cpp -L<NEW>/src/ult -L<NEW>/src -ltsunagi-ult -ltsunagi
#   (yc likewise)
OLD=$1; NEW=$2; ROUNDS=${3:-5}
for r in $(seq 1 "$ROUNDS"); do
  echo "# round $r load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "raw: $(./raw 3000000)"
  for which in old new; do
    L=$OLD; [ $which = new ] && L=$NEW
    echo "$which: $(LD_LIBRARY_PATH=$L/src/ult:$L/src ./ys 3000000) | $(LD_LIBRARY_PATH=$L/src/ult:$L/src ./yc 2000000)"
  done
done
