// Bounded lock-free multi-producer / single-consumer ring with a sleeping
// consumer (seed 000, listings 2-4, with the "waiting bit" improvement).
//
// Usage:
//   producers (any thread):   switch (ring.try_push(cmd)) { case kFull: EAGAIN;
//                             case kPushedConsumerAsleep: wake the consumer; ... }
//   consumer (one at a time): n = ring.pop_batch(buf, max);
//                             if (n == 0 && ring.prepare_sleep()) { sleep; ring.end_sleep(); }
//
// Layout and invariants (memory ordering):
//  - Each slot carries a 32-bit sequence number `seq` and a 32-bit `tag`
//    the producer stores beside the value (the thread rings keep a command's
//    kind there, so a command and its seq fill exactly one cache line).
//    Positions are 64-bit; the producer of position p writes slot p%cap and
//    publishes it with seq = (p+1) mod 2^32 (release); the consumer reads
//    slot h%cap once seq == (h+1) mod 2^32 (acquire).  A slot's seq from
//    the previous lap is p+1-cap, which differs from p+1 mod 2^32 for any
//    capacity below 2^32, so nothing else marks a slot (no ABA).
//  - The consumer never writes a slot: it publishes how far it has read in
//    `head_` (release, once per batch).  A producer may claim position p only
//    while p < head + cap, which it checks against `head_seen_`, a copy of
//    `head_` that producers refresh (acquire load, release store) only when
//    the ring looks full.  So in steady state a producer reads no line the
//    consumer has written: each request costs it stores into lines it owns
//    (an earlier design freed slots by writing seq, and every push then
//    missed on a line the consumer had just written).  A stale head_seen_
//    is only ever smaller than head_, so the check errs towards kFull.
//  - `tail_` holds (next position << 1) | waiting bit.  Producers claim a
//    position with one CAS that also clears the waiting bit; the CAS tells the
//    producer whether the consumer was asleep, so a busy system pays no wake-up
//    (no extra atomic, no syscall).  Only the producer that cleared the bit
//    reports kPushedConsumerAsleep, after publishing its slot, and the owner of
//    the ring (the progress engine) then rings the consumer's doorbell.
//  - The consumer sets the waiting bit only when the ring is empty (tail ==
//    head), with seq_cst, and must re-check for entries (has_ready / a changed
//    doorbell) after reading its doorbell value and before sleeping.
//  - `head_` is written only by the consumer; callers that share the consumer
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


namespace tsu::core {

inline constexpr std::size_t kCacheLine = 64;

enum class PushResult { kFull, kPushed, kPushedConsumerAsleep };

template <typename T>
class CommandRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring entries are copied by value");

 public:
  // `consumer_waiting`: the ring starts with the waiting bit set, so its
  // first producer reports the consumer asleep (a ring made while the
  // consumer sleeps must wake it; see ProgressEngine's thread rings).
  explicit CommandRing(uint32_t capacity, bool consumer_waiting = false)
      : capacity_(std::bit_ceil(capacity < 2 ? 2u : capacity)),
        mask_(capacity_ - 1),
        slots_(new Slot[capacity_]) {
    for (uint64_t i = 0; i < capacity_; ++i)
      slots_[i].seq.store(static_cast<uint32_t>(i), std::memory_order_relaxed);
    if (consumer_waiting) tail_.word.store(1, std::memory_order_relaxed);
  }
  CommandRing(const CommandRing&) = delete;
  CommandRing& operator=(const CommandRing&) = delete;

  uint32_t capacity() const noexcept { return static_cast<uint32_t>(capacity_); }

  // Any thread.  kFull when the ring is full (the caller reports TSU_EAGAIN).
  PushResult try_push(const T& value, uint32_t tag = 0) noexcept {
    return try_push_with(tag, [&](T& slot) { slot = value; });
  }

  // As try_push, but fill(T&) writes the entry in place in its slot (no
  // temporary to copy: a temporary built from differently sized stores and
  // copied out with wide loads costs a store-forwarding stall per push).
  template <typename Fill>
  PushResult try_push_with(uint32_t tag, Fill&& fill) noexcept {
    uint64_t t = tail_.word.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t pos = t >> 1;
      if (pos - tail_.head_seen.load(std::memory_order_acquire) >= capacity_) {
        // Looks full: learn how far the consumer has read.
        const uint64_t head = head_.load(std::memory_order_acquire);
        if (pos - head >= capacity_) return PushResult::kFull;
        tail_.head_seen.store(head, std::memory_order_release);
      }
      // Claim `pos`, clearing the waiting bit in the same CAS; a failed CAS
      // reloads `t` (another producer won, or the consumer set the bit).
      if (tail_.word.compare_exchange_weak(t, (pos + 1) << 1, std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
        Slot& slot = slots_[pos & mask_];
        slot.tag = tag;
        fill(slot.value);
        slot.seq.store(static_cast<uint32_t>(pos + 1), std::memory_order_release);
        return (t & 1u) ? PushResult::kPushedConsumerAsleep : PushResult::kPushed;
      }
    }
  }

  // Consumer only.  Copies up to `max` entries in FIFO order per producer.
  std::size_t pop_batch(T* out, std::size_t max) noexcept {
    std::size_t n = 0;
    uint64_t head = head_.load(std::memory_order_relaxed);
    while (n < max) {
      Slot& slot = slots_[head & mask_];
      if (slot.seq.load(std::memory_order_acquire) != static_cast<uint32_t>(head + 1)) break;
      out[n++] = slot.value;
      ++head;
    }
    // Release: the copies above happen before a producer reuses the slots.
    if (n) head_.store(head, std::memory_order_release);
    return n;
  }

  // Consumer only.  Calls f(tag, value) for up to `max` entries, like
  // pop_batch but read in place; the slots go back to producers after the
  // last call.
  template <typename F>
  std::size_t consume(std::size_t max, F&& f) {
    std::size_t n = 0;
    uint64_t head = head_.load(std::memory_order_relaxed);
    while (n < max) {
      const Slot& slot = slots_[head & mask_];
      if (slot.seq.load(std::memory_order_acquire) != static_cast<uint32_t>(head + 1)) break;
      f(slot.tag, slot.value);
      ++n;
      ++head;
    }
    if (n) head_.store(head, std::memory_order_release);
    return n;
  }

  // Consumer only.  True if an entry is published at the head.
  bool has_ready() const noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    return slots_[head & mask_].seq.load(std::memory_order_acquire) ==
           static_cast<uint32_t>(head + 1);
  }

  // Any thread, without the consumer role: a hint that an entry may be ready
  // at the head (the consumer's idle watch).  It can be stale either way; a
  // consumer pass decides.  Costs one load that stays in the watcher's cache
  // until a producer writes the head slot's line.
  bool peek_ready() const noexcept { return has_ready(); }

  // Consumer only.  Sets the waiting bit if the ring is empty; returns true if
  // the consumer may go to sleep (after the re-check described above).
  bool prepare_sleep() noexcept {
    uint64_t t = tail_.word.load(std::memory_order_acquire);
    if ((t >> 1) != head_.load(std::memory_order_relaxed)) return false;
    if (t & 1u) return true;
    // seq_cst: a producer's claiming CAS is ordered with this one, so either
    // it sees the bit (and reports the sleeper) or we see its claim.
    return tail_.word.compare_exchange_strong(t, t | 1u, std::memory_order_seq_cst,
                                              std::memory_order_relaxed);
  }

  // Consumer only, after waking: clears the waiting bit if no producer did,
  // so producers do not report a sleeper that is awake.
  void end_sleep() noexcept {
    uint64_t cur = tail_.word.load(std::memory_order_acquire);
    while ((cur & 1u) &&
           !tail_.word.compare_exchange_weak(cur, cur & ~uint64_t{1}, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
  }

  // True if a producer has claimed a position the consumer has not taken
  // (its entry may still be being written).
  bool has_claimed() const noexcept {
    return (tail_.word.load(std::memory_order_seq_cst) >> 1) != head_.load(std::memory_order_relaxed);
  }

 private:
  struct alignas(kCacheLine) Slot {
    std::atomic<uint32_t> seq;
    uint32_t tag;
    T value;
  };
  static_assert(std::atomic<uint32_t>::is_always_lock_free);

 public:
  // Bytes per slot: one cache line for a value of up to 56 bytes.
  static constexpr std::size_t kSlotBytes = sizeof(Slot);

 private:
  // Producers' line: the claim word and their copy of the consumer's head.
  struct alignas(kCacheLine) ProducerLine {
    std::atomic<uint64_t> word{0};
    std::atomic<uint64_t> head_seen{0};
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free);

  const uint64_t capacity_;
  const uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  ProducerLine tail_;
  // Written only by the consumer-role holder; atomic so that peek_ready()
  // may read it from a thread that does not hold the role.
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
};

}  // namespace tsu::core
