// Whether another thread wants the calling worker's CPU: measured, not guessed.
//
// An idle worker that has its CPU to itself should make no system calls
// while it spins: sched_yield is a system call even when nothing else is
// runnable, and the remote create+join round trip had two of them on its
// path (docs/ult.md, the idle worker's yields).  A worker that shares its
// CPU with another runnable thread must give it away, or the thread it
// waits for (the peer rank's worker, a progress thread) runs only when the
// kernel preempts the spinner, a time slice later.
//
// The thread's CPU time against the wall clock tells the two apart: over
// each period, a thread that had its CPU ran for all of it; one that shares
// it lost a good part of the period to the other thread, whether the kernel
// preempted it or its own sched_yield handed the CPU over (so a worker
// that yields keeps seeing the sharing for as long as somebody takes the
// CPU it offers, and stops yielding once nobody does).  A short preemption
// (a thread woken for a few microseconds, the kernel's own work) loses too
// little of a period to count.
#pragma once

#include <time.h>

#include <cstdint>

namespace tsu::ult {

class CpuShareWatch {
 public:
  // `now`: the caller's CLOCK_MONOTONIC (ns).  One clock_gettime of the
  // thread's CPU time per period at most.
  bool shared(uint64_t now) noexcept {
    if (now < next_check_) return shared_;
    next_check_ = now + kPeriodNs;
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    const uint64_t cpu = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u +
                         static_cast<uint64_t>(ts.tv_nsec);
    if (since_ != 0) {
      // Ran less than 4/5 of the time: another thread had the CPU.
      shared_ = (cpu - cpu_since_) * 5 < (now - since_) * 4;
    }
    since_ = now;
    cpu_since_ = cpu;
    return shared_;
  }
  // After a sleep: the time asleep was not lost to another thread, so the
  // next look only starts a new period.
  void restart() noexcept {
    since_ = 0;
    next_check_ = 0;
  }

 private:
  static constexpr uint64_t kPeriodNs = 200'000;
  uint64_t next_check_ = 0;
  uint64_t since_ = 0;      // wall clock at the period's start (0: none yet)
  uint64_t cpu_since_ = 0;  // the thread's CPU time then
  bool shared_ = true;      // until measured: yielding is the safe default
};

}  // namespace tsu::ult
