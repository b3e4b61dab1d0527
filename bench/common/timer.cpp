#include "timer.hpp"

#include <time.h>

#include <algorithm>
#include <vector>

namespace bench {

uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

const TickClock& TickClock::get() {
  static const TickClock clock;
  return clock;
}

TickClock::TickClock() {
#if defined(__x86_64__)
  // 20 ms against CLOCK_MONOTONIC gives the rate to better than 0.01%.
  const uint64_t n0 = now_ns(), t0 = ticks();
  while (now_ns() - n0 < 20'000'000) {
  }
  const uint64_t n1 = now_ns(), t1 = ticks();
  ns_per_tick_ = static_cast<double>(n1 - n0) / static_cast<double>(t1 - t0);
#endif
  std::vector<uint64_t> empty(2001);
  for (auto& e : empty) {
    const uint64_t a = ticks();
    const uint64_t b = ticks();
    e = b - a;
  }
  std::nth_element(empty.begin(), empty.begin() + 1000, empty.end());
  read_cost_ns_ = static_cast<double>(empty[1000]) * ns_per_tick_;
}

}  // namespace bench
