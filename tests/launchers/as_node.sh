#!/bin/sh
# as_node.sh K [RANK=VAR=VALUE ...] -- PROG ARGS...
# Run by a PMIx launcher for every rank: poses ranks as nodes of K ranks
# (TSU_NODE_ID = rank / K, as tsurun --ranks-per-node does; K=0 leaves one
# node; TSU_PLACEMENT tells every rank the layout) and sets VAR=VALUE for rank RANK only, then execs PROG.
k=$1
shift
rank=${PMIX_RANK:-${SLURM_PROCID:-0}}
if [ "$k" -gt 0 ]; then
  TSU_NODE_ID=$((rank / k))
  TSU_PLACEMENT=block:$k
  export TSU_NODE_ID TSU_PLACEMENT
fi
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    "$rank"=*) export "${1#*=}" ;;
  esac
  shift
done
[ "$1" = "--" ] && shift
exec "$@"
