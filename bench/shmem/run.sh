#!/bin/sh
# bench/shmem/run.sh [-n PES] [-r ROUNDS] [-m MAX_BYTES] [-R ROUTE]
#
# Builds shmem_bench.c twice, with tsunagi's oshcc and with Open MPI's
# (/usr/bin/oshcc, OSHMEM), runs the two in turn ROUNDS times (interleaved,
# so that a slow moment of the machine hits both) on PES PEs of this
# machine, and prints one table: the median of the rounds per row, and
# tsunagi's advantage (OSHMEM time / tsunagi time, or tsunagi rate /
# OSHMEM rate: above 1 is tsunagi ahead).
#
#   -n PES      PEs (default 2)
#   -r ROUNDS   rounds of each (default 3)
#   -m BYTES    largest message (default 4194304)
#   -R ROUTE    tsunagi's route: shm (default: node peers, bypass on), engine
#               (TSU_BYPASS=0), udp or ofi (two pseudo-nodes of PES/2, over
#               loopback).  With udp and ofi OSHMEM takes its network path too:
#               UCX's tcp transport over loopback (UCX_TLS=tcp,self,
#               UCX_NET_DEVICES=lo) for RMA and atomics, and Open MPI's tcp
#               BTL for the collectives it runs through MPI, so both sides go
#               through the kernel.
#
# TSU_OSHCC / TSU_OSHRUN name tsunagi's wrappers (default: the release build
# tree's, build/release/bin).  Open MPI's programs crash in MPI_Finalize on
# this machine unless started with --mca osc ^rdma, which this script does.
# Prints results only; nothing is written into the tree.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pes=2 rounds=3 max=4194304 route=shm
while getopts n:r:m:R: opt; do
  case $opt in
    n) pes=$OPTARG ;;
    r) rounds=$OPTARG ;;
    m) max=$OPTARG ;;
    R) route=$OPTARG ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
oshcc=${TSU_OSHCC:-$root/build/release/bin/oshcc}
oshrun=${TSU_OSHRUN:-$(dirname "$oshcc")/oshrun}
[ -x "$oshcc" ] || { echo "run.sh: $oshcc not found (build the release preset)" >&2; exit 1; }
command -v /usr/bin/oshcc >/dev/null || { echo "run.sh: Open MPI's oshcc not found" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$oshcc" -O2 "$here/shmem_bench.c" -o "$work/bench_tsunagi"
/usr/bin/oshcc -O2 "$here/shmem_bench.c" -o "$work/bench_oshmem"

# The heap must hold (PES + 1) * MAX bytes and some.
heap=$(( (pes + 2) * max + 16777216 ))
tsu_opts=
oshmem_net=
case $route in
  udp|ofi) oshmem_net="--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo" ;;
esac
case $route in
  shm) ;;
  engine) export TSU_BYPASS=0 ;;
  udp) tsu_opts="--ranks-per-node $(( (pes + 1) / 2 ))" ;;
  ofi) tsu_opts="--ranks-per-node $(( (pes + 1) / 2 ))"; export TSU_NET=ofi ;;
  *) echo "run.sh: unknown route $route" >&2; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq "$rounds"); do
  echo "round $r/$rounds: tsunagi ($route)" >&2
  SHMEM_SYMMETRIC_SIZE=$heap "$oshrun" -n "$pes" $tsu_opts --timeout 600 \
    "$work/bench_tsunagi" "$max" | grep '^ROW' | sed 's/^ROW/tsunagi/' >>"$work/rows"
  echo "round $r/$rounds: OSHMEM" >&2
  env -u TSU_BYPASS -u TSU_NET SHMEM_SYMMETRIC_SIZE=$heap \
    oshrun --mca osc ^rdma -np "$pes" --oversubscribe --bind-to none \
    -x SHMEM_SYMMETRIC_SIZE $oshmem_net "$work/bench_oshmem" "$max" | grep '^ROW' |
    sed 's/^ROW/oshmem/' >>"$work/rows"
done

# One line per row: median of the rounds for both, then the advantage, then
# each side's mean and worst round (the highest time, the lowest rate).
echo "# shmem_bench, $pes PEs, tsunagi route $route${oshmem_net:+ (OSHMEM: UCX tcp over loopback)}, median of $rounds rounds; $(date -u +%F)"
printf '%-10s %9s %12s %12s %-7s %9s %25s %25s\n' row bytes tsunagi oshmem unit advantage \
  "tsunagi mean, worst" "oshmem mean, worst"
awk '
  { key = $2 " " $3; order[key] = order[key] ? order[key] : ++nkeys; keys[order[key]] = key
    unit[key] = $5; v[$1, key, ++cnt[$1, key]] = $4 }
  function median(impl, key,   n, i, j, a, t) {
    n = cnt[impl, key]
    for (i = 1; i <= n; i++) a[i] = v[impl, key, i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n ? a[int((n + 1) / 2)] : 0
  }
  function mean(impl, key,   n, i, t) {
    n = cnt[impl, key]
    for (i = 1; i <= n; i++) t += v[impl, key, i]
    return n ? t / n : 0
  }
  function worst(impl, key, rate,   n, i, w) {
    n = cnt[impl, key]
    w = v[impl, key, 1]
    for (i = 2; i <= n; i++) if (rate ? v[impl, key, i] < w : v[impl, key, i] > w) w = v[impl, key, i]
    return w
  }
  END {
    for (k = 1; k <= nkeys; k++) {
      key = keys[k]; split(key, f, " ")
      t = median("tsunagi", key); o = median("oshmem", key)
      rate = unit[key] ~ /\/s$/
      adv = rate ? (o > 0 ? t / o : 0) : (t > 0 ? o / t : 0)
      printf "%-10s %9s %12.3f %12.3f %-7s %8.3gx %12.3f, %11.3f %12.3f, %11.3f\n", f[1], f[2], t, o,
             unit[key], adv, mean("tsunagi", key), worst("tsunagi", key, rate),
             mean("oshmem", key), worst("oshmem", key, rate)
    }
  }' "$work/rows"
