// Per-rank watch counts for PeerLoss::watch_peer / unwatch_peer: any thread
// raises or lowers a rank's count without a lock, and the transport's poller
// learns which ranks' counts crossed zero since it last looked, without
// scanning every rank (a job of 10,000 ranks changes a few per collective
// step).
//
// The changed ranks form a lock-free stack of rank indices (head_, next_),
// each rank on it at most once (queued_).  The poller takes the whole stack
// in one exchange and reads each rank's count afresh, so it only ever acts
// on current counts: a rank that went 1 -> 0 -> 1 before the poller looked
// is simply still watched.
//
// Invariant: whenever a rank's count crossed zero after the poller last read
// it, the rank is on the stack.  A thread that moves a count across zero
// then sets queued_ (an acq_rel exchange) and pushes the rank if it was not
// set; the poller clears queued_ (also an acq_rel exchange) before it reads
// the count.  If the thread found queued_ still set, its exchange precedes
// the poller's clear in queued_'s modification order, so the poller's clear
// reads it (synchronizes with it) and the count read after it sees the
// thread's change.  A rank's next_ is written only by the thread that set its
// queued_ and read by the poller before it clears it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace tsu::transport {

class PeerWatches {
 public:
  explicit PeerWatches(uint32_t size)
      : size_(size),
        count_(new std::atomic<uint32_t>[size]),
        queued_(new std::atomic<bool>[size]),
        next_(new std::atomic<uint32_t>[size]) {
    for (uint32_t r = 0; r < size; ++r) {
      count_[r].store(0, std::memory_order_relaxed);
      queued_[r].store(false, std::memory_order_relaxed);
      next_[r].store(kNone, std::memory_order_relaxed);
    }
  }

  // Any thread, never blocks.
  void watch(uint32_t r) noexcept {
    if (r < size_ && count_[r].fetch_add(1, std::memory_order_acq_rel) == 0) mark(r);
  }
  // Any thread, never blocks.  An unwatch without a watch is ignored (the
  // count never wraps).
  void unwatch(uint32_t r) noexcept {
    if (r >= size_) return;
    uint32_t c = count_[r].load(std::memory_order_relaxed);
    do {
      if (c == 0) return;
    } while (!count_[r].compare_exchange_weak(c, c - 1, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
    if (c == 1) mark(r);
  }
  bool watched(uint32_t r) const noexcept {
    return r < size_ && count_[r].load(std::memory_order_acquire) > 0;
  }
  // Some rank's count crossed zero since the last drain (a cheap check).
  bool changed() const noexcept { return head_.load(std::memory_order_acquire) != kNone; }

  // Poller only: calls fn(rank, watched) for each rank whose count crossed
  // zero since the last drain, with whether it is watched now.
  template <typename Fn>
  void drain(Fn&& fn) noexcept {
    uint32_t r = head_.exchange(kNone, std::memory_order_acquire);
    while (r != kNone) {
      const uint32_t next = next_[r].load(std::memory_order_relaxed);
      queued_[r].exchange(false, std::memory_order_acq_rel);  // before the count: see above
      fn(r, count_[r].load(std::memory_order_acquire) > 0);
      r = next;
    }
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  void mark(uint32_t r) noexcept {
    if (queued_[r].exchange(true, std::memory_order_acq_rel)) return;  // the poller will look
    uint32_t h = head_.load(std::memory_order_relaxed);
    do {
      next_[r].store(h, std::memory_order_relaxed);
    } while (!head_.compare_exchange_weak(h, r, std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  const uint32_t size_;
  std::unique_ptr<std::atomic<uint32_t>[]> count_;  // waits (and stuck sends) per rank
  std::unique_ptr<std::atomic<bool>[]> queued_;     // on the stack
  std::unique_ptr<std::atomic<uint32_t>[]> next_;   // the stack's links
  std::atomic<uint32_t> head_{kNone};
};

}  // namespace tsu::transport
