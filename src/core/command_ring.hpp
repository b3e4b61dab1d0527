// Bounded lock-free multi-producer / single-consumer ring with a sleeping
// consumer (seed 000, listings 2-4, with the "waiting bit" improvement).
//
// Usage:
//   producers (any thread):   if (!ring.try_push(cmd)) return TSU_EAGAIN;
//   consumer (one at a time): n = ring.pop_batch(buf, max);
//                             if (n == 0 && ring.prepare_sleep()) ring.sleep();
//
// Layout and invariants (memory ordering):
//  - Each slot carries a 64-bit sequence number `seq`.  Slot i starts with seq=i.
//    A producer that claimed position p may write slot p%cap only while
//    seq == p; it publishes the value with seq = p+1 (release).  The consumer
//    reads slot h%cap once seq == h+1 (acquire) and frees it with
//    seq = h+cap (release), which is what the producer of position h+cap waits
//    for.  64-bit positions never wrap in practice, so there is no ABA.
//  - `tail_` holds (next position << 1) | waiting bit.  Producers claim a
//    position with one CAS that also clears the waiting bit; the CAS tells the
//    producer whether the consumer was asleep, so a busy system pays no wake-up
//    (no extra atomic, no syscall) and only the producer that cleared the bit
//    calls futex_wake, after publishing its slot.
//  - The consumer sets the waiting bit only when the ring is empty (tail == head)
//    and then sleeps on the low 32 bits of tail_: any producer that claims a
//    position changes that word, so the sleep cannot miss a push.
//  - `head_` is touched only by the consumer; callers that share the consumer
//    role (manual progress from several threads) serialize with a lock that
//    gives the needed happens-before.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "util/futex.hpp"

namespace tsu::core {

inline constexpr std::size_t kCacheLine = 64;

template <typename T>
class CommandRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring entries are copied by value");

 public:
  explicit CommandRing(uint32_t capacity)
      : capacity_(std::bit_ceil(capacity < 2 ? 2u : capacity)),
        mask_(capacity_ - 1),
        slots_(new Slot[capacity_]) {
    for (uint64_t i = 0; i < capacity_; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
  }
  CommandRing(const CommandRing&) = delete;
  CommandRing& operator=(const CommandRing&) = delete;

  uint32_t capacity() const noexcept { return static_cast<uint32_t>(capacity_); }

  // Any thread.  False when the ring is full (the caller reports TSU_EAGAIN).
  bool try_push(const T& value) noexcept {
    uint64_t t = tail_.word.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t pos = t >> 1;
      Slot& slot = slots_[pos & mask_];
      const uint64_t seq = slot.seq.load(std::memory_order_acquire);
      const auto diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        // Claim `pos`; clearing the waiting bit in the same CAS.
        if (tail_.word.compare_exchange_weak(t, (pos + 1) << 1, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
          slot.value = value;
          slot.seq.store(pos + 1, std::memory_order_release);
          if (t & 1u) util::futex_wake(tail_low32());
          return true;
        }
      } else if (diff < 0) {
        return false;  // the slot still holds an entry from one lap ago: full
      } else {
        t = tail_.word.load(std::memory_order_relaxed);  // another producer won
      }
    }
  }

  // Consumer only.  Copies up to `max` entries in FIFO order per producer.
  std::size_t pop_batch(T* out, std::size_t max) noexcept {
    std::size_t n = 0;
    while (n < max) {
      Slot& slot = slots_[head_ & mask_];
      if (slot.seq.load(std::memory_order_acquire) != head_ + 1) break;
      out[n++] = slot.value;
      slot.seq.store(head_ + capacity_, std::memory_order_release);
      ++head_;
    }
    return n;
  }

  // Consumer only.  True if an entry is published at the head.
  bool has_ready() const noexcept {
    return slots_[head_ & mask_].seq.load(std::memory_order_acquire) == head_ + 1;
  }

  // Consumer only.  Sets the waiting bit if the ring is empty; returns true if
  // the consumer may now call sleep().
  bool prepare_sleep() noexcept {
    uint64_t t = tail_.word.load(std::memory_order_acquire);
    if ((t >> 1) != head_) return false;
    if (t & 1u) return true;
    // seq_cst: pairs with kick() so that either the sleeper sees the flag the
    // kicker set before kicking, or the kicker sees the waiting bit.
    return tail_.word.compare_exchange_strong(t, t | 1u, std::memory_order_seq_cst,
                                              std::memory_order_relaxed);
  }

  // Consumer only, after prepare_sleep() returned true.  Returns when a
  // producer pushed, wake_consumer() was called, or `timeout` passed.
  void sleep(const timespec* timeout = nullptr) noexcept {
    const uint64_t t = tail_.word.load(std::memory_order_acquire);
    if (!(t & 1u)) return;  // a producer already cleared the bit
    util::futex_wait(tail_low32(), static_cast<uint32_t>(t), timeout);
    // Woken by wake_consumer() or a timeout with the bit still set: clear it so
    // producers do not pay a useless wake-up.
    uint64_t cur = tail_.word.load(std::memory_order_acquire);
    if (cur & 1u)
      tail_.word.compare_exchange_strong(cur, cur & ~uint64_t{1}, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }

  // Any thread: wakes the consumer if it is asleep or about to sleep.  Callers
  // set their own flag (e.g. "stop") with seq_cst before calling, and the
  // consumer re-checks that flag after prepare_sleep().
  void kick() noexcept {
    uint64_t t = tail_.word.load(std::memory_order_seq_cst);
    while (t & 1u) {
      // Changing the futex word makes a sleep that has not started yet return.
      if (tail_.word.compare_exchange_weak(t, t & ~uint64_t{1}, std::memory_order_seq_cst,
                                           std::memory_order_relaxed)) {
        util::futex_wake(tail_low32());
        return;
      }
    }
  }

  // Approximate number of queued entries (for stats and tests).
  std::size_t size_approx() const noexcept {
    return static_cast<std::size_t>((tail_.word.load(std::memory_order_relaxed) >> 1) - head_);
  }

 private:
  struct alignas(kCacheLine) Slot {
    std::atomic<uint64_t> seq;
    T value;
  };
  struct alignas(kCacheLine) PaddedWord {
    std::atomic<uint64_t> word{0};
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free);
  static_assert(std::endian::native == std::endian::little,
                "the futex word is the low half of tail_");

  std::atomic<uint32_t>* tail_low32() noexcept {
    // The futex syscall watches 32 bits; on little-endian they are the low half,
    // which changes on every push.
    return reinterpret_cast<std::atomic<uint32_t>*>(&tail_.word);
  }

  const uint64_t capacity_;
  const uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  PaddedWord tail_;
  alignas(kCacheLine) uint64_t head_ = 0;
};

}  // namespace tsu::core
