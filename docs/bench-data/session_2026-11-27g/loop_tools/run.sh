#!/bin/sh
# run.sh BUILD OP ITERS REPS BYTES [N]
B=$1; shift
N=${5:-2}
P=""; [ "$N" = 2 ] && P=1
LD_LIBRARY_PATH=$B/src PIN=$P TSU_PROGRESS=manual TSU_YIELD=1 $B/tools/tsurun/tsurun -n $N /tmp/cb/cb $1 $2 $3 $4
