// A worker's run queue: FIFO of ready threads behind a spinlock.  The owner
// pushes and pops; other threads push (wake-ups, creates from pthreads) and
// steal (idle workers).  `size_` is written under the lock and read without
// it only as a hint (thieves skip empty queues without taking the lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "spinlock.hpp"
#include "thread.hpp"

namespace tsu::ult {

class RunQueue {
 public:
  RunQueue() : cap_(256), slots_(static_cast<Ult**>(std::malloc(256 * sizeof(Ult*)))) {
    if (!slots_) throw std::bad_alloc();
  }
  ~RunQueue() { std::free(slots_); }
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // False only when growing the queue failed (out of memory).
  bool push(Ult* u) noexcept {
    SpinGuard g(lock_);
    if (tail_ - head_ == cap_ && !grow()) return false;
    slots_[tail_++ & (cap_ - 1)] = u;
    size_.store(static_cast<uint32_t>(tail_ - head_), std::memory_order_relaxed);
    return true;
  }
  Ult* pop() noexcept {
    if (size_.load(std::memory_order_relaxed) == 0) return nullptr;
    SpinGuard g(lock_);
    if (head_ == tail_) return nullptr;
    Ult* u = slots_[head_++ & (cap_ - 1)];
    size_.store(static_cast<uint32_t>(tail_ - head_), std::memory_order_relaxed);
    return u;
  }
  // Takes the oldest thread that has not started yet (never a started one)
  // when `fresh_only`, else the oldest.
  Ult* steal(bool fresh_only = false) noexcept {
    if (size_.load(std::memory_order_relaxed) == 0) return nullptr;
    if (!lock_.try_lock()) return nullptr;
    Ult* u = nullptr;
    if (head_ != tail_) {
      Ult* h = slots_[head_ & (cap_ - 1)];
      if (!fresh_only || h->state.load(std::memory_order_relaxed) == State::kNew) {
        u = h;
        ++head_;
        size_.store(static_cast<uint32_t>(tail_ - head_), std::memory_order_relaxed);
      }
    }
    lock_.unlock();
    return u;
  }
  // Moves up to `max` threads for which pred(u) holds into `out` (keeps the
  // order of the others).  For handing unstarted threads to another rank.
  template <typename Pred>
  void take_if(Pred pred, uint32_t max, std::vector<Ult*>& out) {
    if (max == 0 || size_.load(std::memory_order_relaxed) == 0) return;
    SpinGuard g(lock_);
    uint64_t keep = head_;
    uint32_t taken = 0;
    for (uint64_t i = head_; i < tail_; ++i) {
      Ult* u = slots_[i & (cap_ - 1)];
      if (taken < max && pred(u)) {
        out.push_back(u);
        ++taken;
      } else {
        slots_[keep++ & (cap_ - 1)] = u;
      }
    }
    tail_ = keep;
    size_.store(static_cast<uint32_t>(tail_ - head_), std::memory_order_relaxed);
  }
  uint32_t size_hint() const noexcept { return size_.load(std::memory_order_relaxed); }

 private:
  bool grow() noexcept {
    auto* n = static_cast<Ult**>(std::malloc(2 * cap_ * sizeof(Ult*)));
    if (!n) return false;
    for (uint64_t i = head_; i < tail_; ++i) n[i & (2 * cap_ - 1)] = slots_[i & (cap_ - 1)];
    std::free(slots_);
    slots_ = n;
    cap_ *= 2;
    return true;
  }
  Spinlock lock_;
  uint64_t head_ = 0, tail_ = 0;  // guarded by lock_
  uint64_t cap_;                  // guarded by lock_
  Ult** slots_;                   // guarded by lock_
  std::atomic<uint32_t> size_{0};
};

}  // namespace tsu::ult
