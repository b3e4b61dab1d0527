// Helpers shared by the messaging rank tests (public API only).
// Waiting rule: every wait calls tsu_progress() and sched_yield() (works in
// TSU_PROGRESS=manual and on this oversubscribed 2-core machine) and is bounded
// by a deadline, so a hang fails the test instead of the job.
#pragma once

#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tsunagi/tsunagi.h"

namespace mp {

inline constexpr auto kWaitLimit = std::chrono::seconds(15);

inline uint32_t rank() {
  uint32_t r = 0;
  EXPECT_EQ(tsu_rank(&r), TSU_OK);
  return r;
}
inline uint32_t size() {
  uint32_t s = 0;
  EXPECT_EQ(tsu_size(&s), TSU_OK);
  return s;
}
inline bool env_is(const char* var, const char* value) {
  const char* v = std::getenv(var);
  return v && std::strcmp(v, value) == 0;
}
inline bool manual_mode() { return env_is("TSU_PROGRESS", "manual"); }

inline void barrier() { ASSERT_EQ(tsu_barrier(), TSU_OK) << tsu_last_error(); }

template <typename Pred>
bool wait_until(Pred&& pred, const char* what = "condition") {
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (!pred()) {
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "timed out waiting for " << what;
      return false;
    }
  }
  return true;
}

// Retries `try_fn` while it says TSU_EAGAIN (driving progress in between).
template <typename F>
tsu_status_t issue(F&& try_fn, uint64_t* eagains = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  for (;;) {
    const tsu_status_t st = try_fn();
    if (st != TSU_EAGAIN) return st;
    if (eagains) ++*eagains;
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "request refused with TSU_EAGAIN for too long";
      return TSU_EAGAIN;
    }
  }
}

}  // namespace mp

namespace mp {
// A barrier that drives progress while it waits (manual mode: peers may need
// this rank's progress to reach it).  tsu_am_register is collective and
// progress-driving; the highest id is reserved for this in the tests.
inline void sync() {
  ASSERT_EQ(tsu_am_register(TSU_AM_MAX_HANDLER, nullptr, nullptr), TSU_OK) << tsu_last_error();
}
}  // namespace mp
