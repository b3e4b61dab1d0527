#!/usr/bin/env bash
# Attacks a running job and checks that it finishes byte-exact.
#
#   attack_job.sh MODE TSURUN SECURITY_RANK INTRUDER [CONNECTIONS DATAGRAMS]
#
# MODE:
#   tcp     3 ranks on pseudo-hosts (--hosts hA,hB,hC --spawn 'env
#           TSU_FAKE_HOST={host}', so the secret travels on stdin as it does
#           through ssh), bootstrap over TCP on 127.0.0.1
#   tcp-auth  as tcp, with payload authentication (TSU_UDP_AUTH=1): the
#           altered replays must die on the tag (drop_bad_tag)
#   unix    3 local ranks posing as 3 nodes (--ranks-per-node 1; the secret
#           in an inherited pipe), bootstrap on tsurun's Unix socket
#   netns   2 ranks in 2 network namespaces (tests/harness/netns_run.sh, --spawn
#           'ip netns exec {host}'); no attacker, the cmdline/environ scan only
# While the ranks run rounds of byte-exact RMA, tsu_intruder (no secret)
# probes the bootstrap (read, put, barrier, claim every rank), floods it
# with CONNECTIONS abusive connections (default 5000) and floods rank 1's
# udp port with DATAGRAMS garbage, forged and replayed datagrams (default
# 100000).  Every rank also scans all processes' cmdline and environ for
# the job secret.  Passes when tsurun exits 0, every rank reports
# byte-exact data and an unseen secret, tsurun's refusal summary counts the
# attack and rank 1's TSU_STATS show the dropped datagrams.
# Exit 77 (SKIPPED) with the reason when the mode cannot run here.
set -u
mode=$1 tsurun=$2 prog=$3 intruder=$4
conns=${5:-5000} dgrams=${6:-100000}
here=$(cd "$(dirname "$0")" && pwd)

dir=$(mktemp -d "${TMPDIR:-/tmp}/tsu-attack.XXXXXX")
job=""
cleanup() {
  [[ -n $job ]] && kill "$job" 2>/dev/null && wait "$job" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "attack_job: FAIL: $*"; [[ -f $dir/out ]] && sed 's/^/  | /' "$dir/out"; exit 1; }

export TSU_STATS=1 TSU_SEGMENT_SIZE=16M
[[ $mode == tcp-auth ]] && export TSU_UDP_AUTH=1
case $mode in
  tcp|tcp-auth)
    "$tsurun" -n 3 --hosts hA,hB,hC --spawn 'env TSU_FAKE_HOST={host}' --bootstrap-addr 127.0.0.1 \
      --tag-output --timeout 150 "$prog" "$dir" >"$dir/out" 2>&1 &
    job=$! ;;
  unix)
    "$tsurun" -n 3 --ranks-per-node 1 --tag-output --timeout 150 "$prog" "$dir" >"$dir/out" 2>&1 &
    job=$! ;;
  netns)
    touch "$dir/done"  # nobody attacks: the ranks only scan and run their rounds
    bash "$here/../harness/netns_run.sh" --hosts 2 -- "$tsurun" -n 2 --tag-output --timeout 60 "$prog" "$dir" \
      >"$dir/out" 2>&1
    rc=$?
    cat "$dir/out"
    [[ $rc -eq 77 ]] && exit 77
    [[ $rc -eq 0 ]] || fail "the job exited with $rc"
    [[ $(grep -c 'secret seen nowhere' "$dir/out") -eq 2 ]] || fail "not every rank scanned the process list"
    [[ $(grep -c 'byte-exact after' "$dir/out") -eq 2 ]] || fail "not every rank finished byte-exact"
    grep -q FAIL "$dir/out" && fail "a rank failed"
    echo "attack_job: netns: PASSED"
    exit 0 ;;
  *) echo "attack_job: unknown mode $mode"; exit 2 ;;
esac

# Wait (bounded) until every rank is up and has written its udp port.
for ((i = 0; i < 300; i++)); do
  [[ -f $dir/ready.0 && -f $dir/ready.1 && -f $dir/ready.2 ]] && break
  kill -0 "$job" 2>/dev/null || fail "the job ended before its ranks were ready"
  sleep 0.1
done
[[ -f $dir/ready.1 ]] || fail "the ranks did not get ready within 30 s"
read -r port boot <"$dir/ready.1"
echo "attack_job: bootstrap $boot, rank 1's udp port $port"

"$intruder" probe "$boot" 3 || { touch "$dir/done"; fail "the bootstrap let a client without the secret in"; }
"$intruder" flood-bootstrap "$boot" "$conns" 3
"$intruder" flood-udp "127.0.0.1:$port" "$dgrams" 0.5 | tee "$dir/out.intruder"
touch "$dir/done"
wait "$job"
rc=$?
job=""
cat "$dir/out"
[[ $rc -eq 0 ]] || fail "tsurun exited with $rc"
grep -q FAIL "$dir/out" && fail "a rank failed"
[[ $(grep -c 'byte-exact after' "$dir/out") -eq 3 ]] || fail "not every rank finished byte-exact"
[[ $(grep -c 'secret seen nowhere' "$dir/out") -eq 3 ]] || fail "not every rank scanned the process list"
summary=$(grep -E 'bootstrap: refused [0-9]+ connection' "$dir/out") || fail "no refusal summary from tsurun"
failed_proofs=$(sed -E 's/.* ([0-9]+) failed proof.*/\1/' <<<"$summary")
((failed_proofs >= 3)) || fail "expected the failed proofs to be counted: $summary"
grep -qE ' [1-9][0-9]* dropped unauthenticated' <<<"$summary" ||
  fail "expected idle unauthenticated connections over the limit to be dropped: $summary"
stats=$(grep -E '^\[1\] tsunagi\[1\] udp:' "$dir/out") || fail "no TSU_STATS udp line for rank 1"
drops=0
for k in drop_truncated drop_foreign drop_bad_mac drop_bad_crc drop_malformed drop_bad_tag drop_too_long; do
  v=$(grep -oE " $k=[0-9]+" <<<"$stats" | cut -d= -f2)
  drops=$((drops + ${v:-0}))
done
echo "attack_job: rank 1 dropped $drops datagram(s): $(grep -oE ' drop_[a-z_]+=[0-9]+| duplicates=[0-9]+| out_of_window=[0-9]+' <<<"$stats" | tr -d '\n')"
((drops >= dgrams / 4)) || fail "rank 1's TSU_STATS count only $drops dropped datagrams"
if [[ $mode == tcp-auth ]] && grep -q 'captured [1-9]' "$dir/out.intruder" 2>/dev/null; then
  grep -qE ' drop_bad_tag=[1-9]' <<<"$stats" || fail "payload authentication on, but no datagram died on its tag"
fi
echo "attack_job: $mode: PASSED"
