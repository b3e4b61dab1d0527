// Waiting without burning a core: spin a little, then yield, then sleep.
// Used by blocking helpers (quiet, counter wait) while another thread makes
// progress; on a 2-core machine spinning waiters starve the progress thread.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

#include "util/clock.hpp"

namespace tsu::util {

class Backoff {
 public:
  void pause() noexcept {
    if (round_ < 32) {
      cpu_relax();
    } else if (round_ < kYieldRounds) {
      sched_yield();
    } else {
      timespec ts{0, 20'000};  // 20 us: far below any latency we wait for in bulk
      nanosleep(&ts, nullptr);
    }
    ++round_;
  }
  void reset() noexcept { round_ = 0; }
  // True once spinning and yielding are over: the next pause() sleeps (a
  // caller with a better way to sleep, a wake-up on its condition, uses it).
  bool sleeping() const noexcept { return round_ >= kYieldRounds; }

 private:
  static constexpr uint32_t kYieldRounds = 96;
  uint32_t round_ = 0;
};

}  // namespace tsu::util
