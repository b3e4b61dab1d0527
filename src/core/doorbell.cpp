#include "core/doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>

#include <climits>
#include <ctime>

namespace tsu::core {

void Doorbell::ring() noexcept {
  shared_->word.fetch_add(1, std::memory_order_seq_cst);
  // Shared (not _PRIVATE) futex: the word is in memory mapped by node peers.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&shared_->word), FUTEX_WAKE, INT_MAX, nullptr,
          nullptr, 0);
  if (eventfd_ >= 0 && shared_->uses_eventfd.load(std::memory_order_seq_cst)) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(eventfd_, &one, sizeof one);
  }
}

void Doorbell::wait(uint32_t seen, uint64_t timeout_ns) noexcept {
  timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
              static_cast<long>(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&shared_->word), FUTEX_WAIT, seen,
          timeout_ns == UINT64_MAX ? nullptr : &ts, nullptr, 0);
}

}  // namespace tsu::core
