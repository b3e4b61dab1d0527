// A test-and-test-and-set lock for the scheduler's short critical sections
// (run queues, wait queues, join records).  Holders never switch context
// while holding one, except through the block protocol (worker.hpp): the
// lock is then released by the worker after the blocked thread's context is
// saved.  After a short spin it yields the CPU, because on a machine with
// fewer cores than threads the holder may be descheduled.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace tsu::ult {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Spinlock {
 public:
  void lock() noexcept {
    for (uint32_t spins = 0; flag_.exchange(1, std::memory_order_acquire) != 0;) {
      while (flag_.load(std::memory_order_relaxed) != 0) {
        if (++spins < 128) {
          cpu_relax();
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() noexcept {
    return flag_.load(std::memory_order_relaxed) == 0 &&
           flag_.exchange(1, std::memory_order_acquire) == 0;
  }
  void unlock() noexcept { flag_.store(0, std::memory_order_release); }

 private:
  std::atomic<uint32_t> flag_{0};
};

class SpinGuard {
 public:
  explicit SpinGuard(Spinlock& l) noexcept : l_(l) { l_.lock(); }
  ~SpinGuard() { l_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  Spinlock& l_;
};

}  // namespace tsu::ult
