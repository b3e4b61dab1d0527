// What tsu-bench ult's rows are made of: per-operation statistics over
// repeated batches (median, mean, p99, process CPU time).  Shared by the
// tsunagi rows and the peers' (Boost.Fiber, Argobots).
#pragma once

#include <time.h>

#include <algorithm>
#include <cfenv>
#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace bench::ult_measure {

using Clock = std::chrono::steady_clock;
inline double ns_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

struct Stat {
  double median = 0, mean = 0, p99 = 0;
  double cpu = -1;  // median per-op CPU time of the process (all threads), when measured
  bool valid = false;
};
// CPU time of the whole process: on a loaded machine wall time includes
// being descheduled; with one worker the busy thread is the only one running.
inline double process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}
inline Stat stat_of(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p99 = v[std::min(v.size() - 1, static_cast<std::size_t>(static_cast<double>(v.size()) * 0.99))];
  s.valid = true;
  return s;
}

// Per-op time of `batch(n)` (which does n ops): reps batches.  Every batch
// starts with the floating-point status flags clear: this function's own
// arithmetic raises FE_INEXACT, and a context made before that (the raw
// row's other stack, Boost.Fiber's dispatcher) would otherwise differ from
// this thread's MXCSR, which makes every switch between them slow on some
// Intel cores (src/ult/fp_state.hpp) and would measure that, not the switch.
inline Stat per_op(int reps, long n, const std::function<void(long)>& batch) {
  std::feclearexcept(FE_ALL_EXCEPT);
  batch(n / 10 + 1);  // warm up
  std::vector<double> v, cpu;
  for (int r = 0; r < reps; ++r) {
    std::feclearexcept(FE_ALL_EXCEPT);  // (process_cpu_ns is exact: no flag)
    const double c0 = process_cpu_ns();
    const auto t0 = Clock::now();
    batch(n);
    v.push_back(ns_since(t0) / static_cast<double>(n));
    cpu.push_back((process_cpu_ns() - c0) / static_cast<double>(n));
  }
  Stat s = stat_of(v);
  s.cpu = stat_of(cpu).median;
  return s;
}

// The peer rows of Argobots (ult_argobots.cpp; invalid Stats when tsu-bench
// was built without it: pkg-config found no argobots).
bool argobots_built();
Stat abt_switch(int reps, long n, bool other_code);
Stat abt_create_join(int reps, long n);
Stat abt_mutex(int reps, long n);

}  // namespace bench::ult_measure
