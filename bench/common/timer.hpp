// Time sources for the benchmarks.  Per-call figures (overhead, latency) are
// tens of nanoseconds, so they are taken with the invariant TSC (a few ns per
// read) and converted with a rate calibrated against the monotonic clock.
#pragma once

#include <cstdint>

namespace bench {

// Monotonic wall time in nanoseconds (clock_gettime, vDSO).
uint64_t now_ns() noexcept;

// Raw timestamp counter.  `lfence` keeps the read from drifting into or out of
// the measured code.
inline uint64_t ticks() noexcept {
#if defined(__x86_64__)
  uint32_t lo, hi;
  asm volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return (static_cast<uint64_t>(hi) << 32) | lo;
#else
  return now_ns();
#endif
}

// Converts tick counts to nanoseconds; calibrated once per process.
class TickClock {
 public:
  static const TickClock& get();
  double to_ns(double tick_count) const noexcept { return tick_count * ns_per_tick_; }
  uint64_t from_ns(double ns) const noexcept { return static_cast<uint64_t>(ns / ns_per_tick_); }
  double ns_per_tick() const noexcept { return ns_per_tick_; }
  // Mean cost of an empty ticks()/ticks() pair, in ns: subtracted from
  // per-call overhead figures.
  double read_cost_ns() const noexcept { return read_cost_ns_; }

 private:
  TickClock();
  double ns_per_tick_ = 1.0;
  double read_cost_ns_ = 0.0;
};

// A deadline checked with one TSC read.
class Deadline {
 public:
  explicit Deadline(double duration_ms)
      : end_(ticks() + TickClock::get().from_ns(duration_ms * 1e6)) {}
  bool passed() const noexcept { return ticks() >= end_; }

 private:
  uint64_t end_;
};

inline void cpu_relax() noexcept {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

}  // namespace bench
