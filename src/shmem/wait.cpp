// Point-to-point synchronization: the comparisons of wait/test, the pause of
// every waiting loop, and the signal words.
#include "shmem_internal.hpp"
#include "state.hpp"

#include <sched.h>

#include <ctime>

namespace tsu::shmem {
namespace {

template <typename T>
bool holds(const void* ivar, int cmp, const void* value) {
  const T a = __atomic_load_n(static_cast<const T*>(ivar), __ATOMIC_ACQUIRE);
  const T b = *static_cast<const T*>(value);
  switch (cmp) {
    case SHMEM_CMP_EQ: return a == b;
    case SHMEM_CMP_NE: return a != b;
    case SHMEM_CMP_GT: return a > b;
    case SHMEM_CMP_GE: return a >= b;
    case SHMEM_CMP_LT: return a < b;
    default: break;
  }
  return a <= b;
}

// Busy pauses before the first progress call: a peer's store usually lands
// within this many.
constexpr unsigned kSpinPauses = 128;
// Polls before a waiting loop starts sleeping between checks when the node
// is oversubscribed (tens of milliseconds of yielding).
constexpr unsigned kPollsBeforeSleep = 1u << 16;
// With the CPU shared, one poll in this many makes a progress pass.
constexpr unsigned kYieldsPerProgress = 16;

}  // namespace

bool test(const void* ivar, int cmp, const void* value, SyncType type, const char* fn) noexcept {
  if (__builtin_expect(cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE, 0))
    fail(fn, "cmp %d is not a SHMEM_CMP_* value", cmp);
  // The variable must be one a peer can update: a symmetric data object.
  if (debug_checks() && !in_heap(ivar, 1) && !in_static(ivar, 1))
    fail(fn, "ivar %p is not a symmetric data object", ivar);
  switch (type) {
    case SyncType::kI16: return holds<int16_t>(ivar, cmp, value);
    case SyncType::kU16: return holds<uint16_t>(ivar, cmp, value);
    case SyncType::kI32: return holds<int32_t>(ivar, cmp, value);
    case SyncType::kU32: return holds<uint32_t>(ivar, cmp, value);
    case SyncType::kI64: return holds<int64_t>(ivar, cmp, value);
    case SyncType::kU64: break;
  }
  return holds<uint64_t>(ivar, cmp, value);
}

void wait_pause(unsigned* spins) noexcept {
  const unsigned n = (*spins)++;
  // With the CPU shared (tsu_yield_when_idle) the PE we wait for may need
  // this CPU: no spin before the first yield (4 PEs on 2 CPUs: a
  // shmem_barrier_all took 9-14 us with the spin, 6 us without).
  if (n < kSpinPauses && !tsu_yield_when_idle()) {
    __builtin_ia32_pause();
    return;
  }
  // tsu_progress drives progress in manual mode, lets a user-level thread's
  // scheduler run its other threads (wait hook), and yields the CPU when the
  // node has more busy threads than CPUs.  With the CPU shared, most rounds
  // only yield: the PE we wait for needs the CPU, not our progress engine
  // (docs/shmem.md, waiting loops).
  const bool shared_cpu = tsu_yield_when_idle();
  if (!shared_cpu || (n & (kYieldsPerProgress - 1)) == 0) {
    tsu_progress();
  } else {
    sched_yield();
  }
  if (shared_cpu && n >= kSpinPauses + kPollsBeforeSleep) {
    // Still waiting after many yields: sleep briefly, so a long wait on a
    // shared CPU costs little.
    const timespec nap{0, 20000};
    nanosleep(&nap, nullptr);
  }
}

tsu_status_t wait_counter(tsu_counter_t* counter, uint64_t n) noexcept {
  // Progress from the first poll: the completion needs it, not time.
  while (tsu_counter_value(counter) < n) tsu_progress();
  return static_cast<tsu_status_t>(
      __atomic_load_n(&counter->first_error, __ATOMIC_RELAXED));
}

void wait_until(const void* ivar, int cmp, const void* value, SyncType type,
                const char* fn) noexcept {
  unsigned spins = 0;
  while (!test(ivar, cmp, value, type, fn)) wait_pause(&spins);
}

}  // namespace tsu::shmem

using namespace tsu::shmem;

extern "C" {

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  check_init("shmem_signal_fetch");
  if (!sig_addr) fail("shmem_signal_fetch", "sig_addr is NULL");
  return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  check_init("shmem_signal_wait_until");
  if (!sig_addr) fail("shmem_signal_wait_until", "sig_addr is NULL");
  wait_until(sig_addr, cmp, &cmp_value, SyncType::kU64, "shmem_signal_wait_until");
  return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

}  // extern "C"
