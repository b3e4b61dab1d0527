#!/bin/sh
# oshcc_test.sh BINDIR SOURCE_DIR WORK_DIR: the build tree's wrappers as a
# user types them.  oshcc builds a C program in one step and in two (-c,
# then link), oshc++ a C++ one; oshrun runs them with -n and -np; -showme
# prints the command without running it.  TSU_TEST_FLAGS (the build's own
# sanitizer flags) are added to every compile and link.
set -eu
bin=$1 src=$2 work=$3
flags=${TSU_TEST_FLAGS:-}
rm -rf "$work"
mkdir -p "$work"
cd "$work"
line=$("$bin/oshcc" -showme hello.c -o hello)
case "$line" in
  *" -I"*"/include "*"hello.c -o hello "*"-ltsunagi-shmem -ltsunagi"*) ;;
  *) echo "FAIL: oshcc -showme printed: $line"; exit 1 ;;
esac
[ "$("$bin/oshcc" -showme:link)" = "$("$bin/oshc++" --showme:link)" ] ||
  { echo "FAIL: oshcc and oshc++ link differently"; exit 1; }
# CC=oshcc in the environment (make CC=oshcc exports it) must not recurse.
CC=oshcc "$bin/oshcc" -showme | grep -q '^cc ' || { echo "FAIL: CC=oshcc recursed"; exit 1; }
"$bin/oshcc" $flags -O1 "$src/tests/shmem/spec_examples.c" -o examples
"$bin/oshrun" -n 2 --timeout 60 ./examples
"$bin/oshrun" -np 4 --timeout 60 ./examples
"$bin/oshcc" $flags -c "$src/tests/abi/shmem_consumer/shmem_consumer.c" -o consumer.o
"$bin/oshcc" $flags consumer.o -o consumer
"$bin/oshrun" --np 3 --timeout 60 ./consumer
"$bin/oshc++" $flags -std=c++17 "$src/tests/abi/shmem_consumer/shmem_consumer.cpp" -o consumer_cxx
"$bin/oshrun" -n 2 --timeout 60 ./consumer_cxx
# A failing PE's status is oshrun's.
set +e
"$bin/oshrun" -n 2 --timeout 60 sh -c 'exit 5'
rc=$?
set -e
[ "$rc" -eq 5 ] || { echo "FAIL: oshrun returned $rc for a PE exiting 5"; exit 1; }
echo "OK: oshcc, oshc++ and oshrun from the build tree"
