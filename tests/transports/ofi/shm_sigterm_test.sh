#!/usr/bin/env bash
# /dev/shm after a killed run: a job over libfabric's shm provider, its ranks
# asleep after init, gets SIGTERM (through the launcher, as a scheduler would
# send it, or straight to the ranks); the provider's files must be gone.
#
#   shm_sigterm_test.sh launcher|ranks TSURUN RANK_PROGRAM [RANK ARGS...]
#
# Only files the job's own ranks made are looked at (the shm provider names
# its regions "<pid>:<ep>:<n>"), so other jobs using /dev/shm meanwhile do not
# matter.  SKIPPED (77) when the shm provider is missing or makes no file.
set -u
target=$1 tsurun=$2 prog=$3
shift 3
skip() { echo "SKIPPED: $*"; exit 77; }
command -v fi_info >/dev/null && { fi_info -p shm -t FI_EP_RDM >/dev/null 2>&1 ||
  skip "libfabric's shm provider offers no reliable datagram endpoint here"; }
out=$(mktemp)
job=""
ranks=()
cleanup() {
  [[ -n $job ]] && kill -KILL "$job" 2>/dev/null
  local p f
  for p in "${ranks[@]}"; do
    kill -KILL "$p" 2>/dev/null
    for f in /dev/shm/"$p":*; do [[ -e $f ]] && rm -f "$f"; done  # never leave ours
  done
  rm -f "$out"
}
trap cleanup EXIT
TSU_NET=ofi TSU_OFI_PROVIDER=shm "$tsurun" -n 2 --ranks-per-node 1 --timeout 60 "$prog" "$@" >"$out" 2>&1 &
job=$!
for ((i = 0; i < 200; i++)); do
  (($(grep -c ready "$out") == 2)) && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
(($(grep -c ready "$out") == 2)) || { echo "FAIL: the job did not start:"; cat "$out"; exit 1; }
mapfile -t ranks < <(pgrep -P "$job")
((${#ranks[@]} == 2)) || { echo "FAIL: expected 2 rank processes, found ${ranks[*]}"; exit 1; }
files_of_ranks() {
  local p
  for p in "${ranks[@]}"; do ls /dev/shm 2>/dev/null | grep -E "^$p:[0-9]+:[0-9]+$"; done
}
before=$(files_of_ranks)
[[ -n $before ]] || skip "the shm provider made no file in /dev/shm for ranks ${ranks[*]}"
echo "files of the running ranks: $(echo $before)"
if [[ $target == launcher ]]; then
  kill -TERM "$job"
else
  kill -TERM "${ranks[@]}"
fi
for ((i = 0; i < 150; i++)); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
wait "$job" 2>/dev/null
job=""
cat "$out"
left=$(files_of_ranks)
if [[ -n $left ]]; then
  echo "FAIL: left in /dev/shm after SIGTERM: $(echo $left)"
  exit 1
fi
echo "PASS: /dev/shm holds nothing of ranks ${ranks[*]} after SIGTERM to the $target"
