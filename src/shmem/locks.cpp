// Distributed locks: a ticket lock in PE 0's copy of the lock word (high
// half: the next ticket; low half: the ticket being served), so waiters are
// served in the order they asked.  The word is 0 when free and untouched,
// as the specification requires of a new lock.
#include "context.hpp"
#include "state.hpp"

namespace tsu::shmem {
namespace {

constexpr int kLockHome = 0;
constexpr uint64_t kTicket = uint64_t{1} << 32;
constexpr uint64_t kServingMask = kTicket - 1;

uint64_t fetch_word(long* lock, const char* fn) {
  uint64_t v = 0;
  atomic(default_context(), lock, Amo::kFetch, Word::kU64, nullptr, nullptr, &v, kLockHome, false,
         fn);
  return v;
}

uint64_t compare_swap(long* lock, uint64_t expected, uint64_t desired, const char* fn) {
  uint64_t old = 0;
  atomic(default_context(), lock, Amo::kCompareSwap, Word::kU64, &desired, &expected, &old,
         kLockHome, false, fn);
  return old;
}

void check_lock(long* lock, const char* fn) {
  if (!lock) fail(fn, "lock is NULL");
  static_assert(sizeof(long) == sizeof(uint64_t), "the lock word is a 64-bit long");
}

}  // namespace
}  // namespace tsu::shmem

using namespace tsu::shmem;

extern "C" {

void shmem_set_lock(long* lock) {
  constexpr const char* fn = "shmem_set_lock";
  check_init(fn);
  check_lock(lock, fn);
  uint64_t old = 0;
  const uint64_t add = kTicket;
  atomic(default_context(), lock, Amo::kFetchAdd, Word::kU64, &add, nullptr, &old, kLockHome,
         false, fn);
  const uint64_t ticket = (old >> 32) & kServingMask;
  unsigned spins = 0;
  while ((old & kServingMask) != ticket) {
    wait_pause(&spins);
    old = fetch_word(lock, fn);
  }
  // (The fetch that saw our turn was a sequentially consistent atomic.)
}

int shmem_test_lock(long* lock) {
  constexpr const char* fn = "shmem_test_lock";
  check_init(fn);
  check_lock(lock, fn);
  const uint64_t v = fetch_word(lock, fn);
  if (((v >> 32) & kServingMask) != (v & kServingMask)) return 1;  // held or queued
  // Free: take the next ticket only if nobody else took it meanwhile.
  if (compare_swap(lock, v, v + kTicket, fn) != v) return 1;
  return 0;  // (the compare-and-swap was sequentially consistent)
}

void shmem_clear_lock(long* lock) {
  constexpr const char* fn = "shmem_clear_lock";
  check_init(fn);
  check_lock(lock, fn);
  // What the holder wrote under the lock is complete before the next holder
  // can enter.
  quiet(default_context(), fn);
  uint64_t v = fetch_word(lock, fn);
  for (;;) {
    // Serve the next ticket; the low half wraps without carrying into the high.
    const uint64_t next = (v & ~kServingMask) | ((v + 1) & kServingMask);
    const uint64_t old = compare_swap(lock, v, next, fn);
    if (old == v) return;
    v = old;
  }
}

}  // extern "C"
