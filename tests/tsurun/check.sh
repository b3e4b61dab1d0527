#!/bin/bash
# Runs a command and checks its exit status, output and duration, and that
# it left nothing behind in a fresh TMPDIR (tsurun's temp dir is removed).
#
# check.sh [--exit N] [--match RE] [--nomatch RE] [--count RE N]
#          [--every-stdout-line RE] [--max-seconds S] [--signal-after S SIG]
#          -- COMMAND [ARGS...]
# REs are grep -E patterns; --match/--nomatch/--count look at stdout+stderr.
set -u
want_exit=0 max_s=0 sig_after="" sig=""
matches=() nomatches=() counts=() every=()
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) want_exit=$2; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --nomatch) nomatches+=("$2"); shift 2 ;;
    --count) counts+=("$2" "$3"); shift 3 ;;
    --every-stdout-line) every+=("$2"); shift 2 ;;
    --max-seconds) max_s=$2; shift 2 ;;
    --signal-after) sig_after=$2; sig=$3; shift 3 ;;
    --) shift; break ;;
    *) echo "check.sh: bad option $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
export TMPDIR="$work/tmp"

start=$(date +%s.%N)
if [ -n "$sig_after" ]; then
  "$@" >"$work/out" 2>"$work/err" &
  pid=$!
  sleep "$sig_after"
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
else
  "$@" >"$work/out" 2>"$work/err"
  rc=$?
fi
end=$(date +%s.%N)
cat "$work/out" "$work/err" >"$work/all"

echo "---- command: $*"
echo "---- stdout:"; cat "$work/out"
echo "---- stderr:"; cat "$work/err"
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
echo "---- exit status $rc after $elapsed s"
# A wrapped harness that cannot run here (e.g. no network namespaces) says so.
if [ "$rc" = 77 ] && grep -q "^SKIPPED:" "$work/all"; then grep "^SKIPPED:" "$work/all"; exit 77; fi

fail=0
bad() { echo "CHECK FAILED: $*"; fail=1; }
[ "$rc" = "$want_exit" ] || bad "exit status $rc, expected $want_exit"
for re in ${matches[@]+"${matches[@]}"}; do
  grep -qE -- "$re" "$work/all" || bad "no output line matches '$re'"
done
for re in ${nomatches[@]+"${nomatches[@]}"}; do
  ! grep -qE -- "$re" "$work/all" || bad "an output line matches '$re'"
done
i=0
while [ $i -lt ${#counts[@]} ]; do
  n=$(grep -cE -- "${counts[$i]}" "$work/all")
  [ "$n" = "${counts[$((i + 1))]}" ] || bad "$n lines match '${counts[$i]}', expected ${counts[$((i + 1))]}"
  i=$((i + 2))
done
for re in ${every[@]+"${every[@]}"}; do
  if grep -vqE -- "$re" "$work/out"; then bad "stdout line not matching '$re': $(grep -vE -- "$re" "$work/out" | head -1)"; fi
done
if [ "$max_s" != 0 ] && awk -v e="$elapsed" -v m="$max_s" 'BEGIN { exit !(e > m) }'; then
  bad "took $elapsed s, limit $max_s s"
fi
left=$(ls -A "$TMPDIR")
[ -z "$left" ] || bad "left behind in TMPDIR: $left"
[ $fail = 0 ] && echo "---- PASS"
exit $fail
