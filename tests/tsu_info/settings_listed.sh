#!/usr/bin/env bash
# Every TSU_* variable the library and its tools read is listed by tsu-info
# (docs: issue 44, "one registry of what a user may set").
#
# The names are every string literal "TSU_..." in src/ and tools/ (so a
# variable read through a helper, not only by getenv("TSU_..."), is found
# too): each must be a row of tsu-info's output (a setting with its default
# and help, or a variable the launcher sets for each rank), or a test-only
# fault-injection variable (named on tsu-info's fault-injection line and
# documented in a test-only section of docs/ofi.md or docs/ult.md), or one
# of the few literals below that are no environment variable.
#
# usage: settings_listed.sh TSU_INFO SOURCE_DIR
set -euo pipefail
tsu_info=$1
src=$2

# Literals that name no environment variable (an API flag in a message).
not_variables=" TSU_SEG_NIC_ATOMICS "
# Test-only fault injection (TSU_FAULT_INJECTION builds): no settings row.
faults=" TSU_OFI_TEST_FAULT TSU_ULT_TEST_FAULTS "

out=$(env -i PATH="$PATH" "$tsu_info")
names=$(grep -rhoE '"TSU_[A-Z0-9_]+' "$src/src" "$src/tools" | tr -d '"' | sort -u)
# getenv("TSU_...") reads in particular (a check on the scan itself).
read_names=$(grep -rhoE 'getenv\("TSU_[A-Z0-9_]+' "$src/src" "$src/tools" |
             sed 's/getenv("//' | sort -u)
[ -n "$read_names" ] || { echo "FAIL: found no getenv(\"TSU_...\") in $src"; exit 1; }

fail=0
for n in $(printf "%s\n" $names $read_names | sort -u); do
  case "$not_variables" in *" $n "*) continue ;; esac
  case "$faults" in
    *" $n "*)
      if ! grep -qE "^test-only fault injection .*$n" <<<"$out"; then
        echo "FAIL: test-only $n is not named on tsu-info's fault-injection line"; fail=1
      fi
      if ! grep -qs "$n" "$src/docs/ofi.md" "$src/docs/ult.md"; then
        echo "FAIL: test-only $n is not documented in docs/ofi.md or docs/ult.md"; fail=1
      fi
      if grep -qE "^  $n " <<<"$out"; then
        echo "FAIL: test-only $n is listed as a setting"; fail=1
      fi
      continue ;;
  esac
  if ! grep -qE "^  $n " <<<"$out"; then
    echo "FAIL: $n is read in src/ or tools/ but tsu-info does not list it"; fail=1
  fi
done
[ "$fail" -eq 0 ] && echo "PASS: $(wc -w <<<"$names") TSU_* names, each listed by tsu-info"
exit "$fail"
