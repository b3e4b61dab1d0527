#!/bin/sh
# expect_fail.sh STATUS REGEX -- COMMAND...
# Passes when COMMAND fails as it must: its exit status is STATUS (a number),
# or with STATUS "error" any status from 1 to 123 (not a timeout, 124, nor a
# death by signal, 128 + N), and its output matches the extended regular
# expression REGEX.  Used by the OpenSHMEM bad-input tests.
want=$1 regex=$2
shift 2
[ "$1" = "--" ] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
case "$want" in
  error)
    if [ "$rc" -lt 1 ] || [ "$rc" -gt 123 ]; then
      echo "FAIL: exit status $rc, want an error status (1..123)"
      exit 1
    fi ;;
  *)
    if [ "$rc" -ne "$want" ]; then
      echo "FAIL: exit status $rc, want $want"
      exit 1
    fi ;;
esac
if ! grep -Eq -- "$regex" "$out"; then
  echo "FAIL: the output does not match '$regex'"
  exit 1
fi
echo "OK: failed with status $rc and the expected message"
