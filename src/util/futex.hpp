// Thin wrappers over the Linux futex system call (no glibc wrapper exists).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace tsu::util {

// Sleeps while *word == expected (process-private futex).  Spurious wake-ups
// are possible: callers re-check their condition.
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected,
                       const timespec* timeout = nullptr) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout,
          nullptr, 0);
}

inline void futex_wake(std::atomic<uint32_t>* word, int count = 1) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

}  // namespace tsu::util
