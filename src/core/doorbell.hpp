// How a sleeping progress engine is woken, by its own process or by a node
// peer.  The doorbell word lives in the rank's control block (shared memory):
// a waker increments it and wakes the futex (a shared futex, so peers can wake
// it).  An engine that also waits for network descriptors sleeps in epoll
// instead; then wakers also write its eventfd, which node peers hold a
// duplicate of (pidfd_getfd).
//
// Sleeper protocol (no lost wake-up):
//   1. publish "asleep" (ring waiting bit / transport flags), seq_cst
//   2. v = value()
//   3. re-check every work source; stop if any has work
//   4. wait(v): returns at once if the word is no longer v
// A waker that published work after step 3 sees "asleep" from step 1 and
// rings, which changes the word (futex) or the eventfd (epoll).
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace tsu::core {

struct DoorbellShared {  // the part in shared memory (control block)
  std::atomic<uint32_t> word;
  std::atomic<uint32_t> uses_eventfd;  // 1 while the owner sleeps in epoll
};

class Doorbell {
 public:
  Doorbell() = default;
  Doorbell(DoorbellShared* shared, int eventfd) : shared_(shared), eventfd_(eventfd) {}

  uint32_t value() const noexcept { return shared_->word.load(std::memory_order_seq_cst); }

  void ring() noexcept;  // any thread of any process on the node
  // Futex sleep while the word equals `seen` (or until `timeout_ns`).
  void wait(uint32_t seen, uint64_t timeout_ns) noexcept;

  DoorbellShared* shared() const noexcept { return shared_; }
  int eventfd() const noexcept { return eventfd_; }

 private:
  DoorbellShared* shared_ = nullptr;
  int eventfd_ = -1;
};

}  // namespace tsu::core
