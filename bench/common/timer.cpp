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
  // The TSC of this kind of machine may advance in steps (26 ticks, 10 ns, on
  // the KVM guest this was written on), so one pair reads 0 or 1 steps: the
  // mean over many pairs is the unbiased cost; interrupts are trimmed off.
  constexpr int kPairs = 100000;
  std::vector<uint64_t> empty(kPairs);
  for (auto& e : empty) {
    const uint64_t a = ticks();
    const uint64_t b = ticks();
    e = b - a;
  }
  std::sort(empty.begin(), empty.end());
  const uint64_t cutoff = 10 * std::max<uint64_t>(empty[kPairs / 2], 1);
  double sum = 0;
  int kept = 0;
  for (const uint64_t e : empty)
    if (e <= cutoff) sum += static_cast<double>(e), ++kept;
  read_cost_ns_ = sum / kept * ns_per_tick_;
}

}  // namespace bench
