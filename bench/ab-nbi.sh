#!/bin/bash
# Interleaved A/B of the implicit-completion (_nbi) and callback 8 B put/get
# rates, library A vs library B (same tsu-bench, library by LD_LIBRARY_PATH),
# with Open MPI RMA window+flush in the same round (docs/requests.md).
#   A_LIB=old/build/release/src B=build/release bench/ab-nbi.sh [ROUNDS (6)]
here=$(cd "$(dirname "$0")" && pwd)
B=${B:-$here/../build/release}; A_LIB=${A_LIB:?old library dir}; B_LIB=${B_LIB:-$B/src}
for r in $(seq 1 ${1:-6}); do
  order="A B"; [ $((r % 2)) = 0 ] && order="B A"
  for v in $order; do
    lib=$A_LIB; [ $v = B ] && lib=$B_LIB
    LD_LIBRARY_PATH=$lib chrt -f 10 $B/tools/tsurun/tsurun -n 2 $B/bench/tsu-bench rma --ops put,get --threads 1 --sizes 8 --reps 3 --duration-ms 50 --nbi-rate 2>&1 |
      awk -F'|' -v v=$v -v r=$r -v l="$(cut -d' ' -f1 /proc/loadavg)" '/^\| (put|get)/ {gsub(/ /,"",$2); split($9,a," "); split($10,b," "); printf "r%s load %s %s %s rate_cb %s rate_nbi %s\n", r, l, v, $2, a[1], b[1]}'
  done
  OMPI_MCA_osc=sm chrt -f 10 mpirun --allow-run-as-root --oversubscribe -n 2 $B/bench/mpi-rma-bench --reps 3 --duration-ms 50 2>&1 |
    awk -F'|' -v r=$r '/^\| rate +\| (put|get)/ {gsub(/ /,"",$3); split($5,a," "); printf "r%s MPI %s rate_flush %s\n", r, $3, a[1]}'
done
