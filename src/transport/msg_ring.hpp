// A bounded lock-free multi-producer / single-consumer message ring that can
// live in shared memory (one per receiving rank, mapped by every node peer)
// or in private memory (the self transport).  Same sequence-number scheme as
// core/command_ring.hpp, but the slots carry a MessageHeader and up to
// `slot_size - 64` payload bytes, and the consumer's "asleep" flag follows
// core/doorbell.hpp (a separate word, since producers are other processes).
//
// Usage:
//   receiver (init):        MsgRing::format(mem, slots, slot_size)
//   producers (any thread of any process that mapped it):
//                           switch (ring.try_push(src, hdr, payload)) {
//                             case kFull: TSU_EAGAIN;
//                             case kPushedAsleep: ring the receiver's doorbell; }
//   consumer (one at a time, the engine's consumer role):
//                           ring.drain(max, [](src, hdr, payload) {...});
//                           ring.prepare_sleep() ... sleep ... ring.end_sleep()
//
// Memory ordering:
//  - Slot i starts with seq = i.  A producer claims position p with a seq_cst
//    CAS on `tail` (only while slot p%cap has seq == p), writes the slot, and
//    publishes it with seq = p+1 (release).  The consumer reads it once
//    seq == head+1 (acquire), runs the handler on the slot in place, then frees
//    it with seq = head+cap (release).  64-bit positions: no ABA.
//  - Sleep (doorbell.hpp): the consumer stores asleep=1 (seq_cst), then loads
//    tail (seq_cst): a claim it does not see is ordered after its store, so that
//    producer's later seq_cst load of `asleep` sees 1, clears it with an
//    exchange (only one producer rings) and rings the receiver's doorbell.
//  - A producer dying between claim and publish blocks the ring (the job is
//    torn down by tsurun anyway).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "core/message.hpp"

namespace tsu::transport {

class MsgRing {
 public:
  static constexpr uint64_t kMagic = 0x7473756d73677231ull;  // "tsumsgr1"
  static constexpr std::size_t kAlign = 64;

  struct alignas(kAlign) Control {
    uint64_t magic;
    uint32_t slots;      // power of two
    uint32_t slot_size;  // bytes per slot, multiple of 64
    alignas(kAlign) std::atomic<uint64_t> tail;
    alignas(kAlign) std::atomic<uint32_t> asleep;
  };
  struct SlotHeader {
    std::atomic<uint64_t> seq;
    uint32_t src;
    uint32_t reserved;
    core::MessageHeader header;
  };
  static constexpr std::size_t kSlotHeaderBytes = 64;
  static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);
  // A payload of up to 8 bytes (a tagged 1 B message, a collective's double)
  // goes right after the header, in its cache line: one line moves between
  // the cores instead of two.  Larger ones start at the next line (64-byte
  // aligned: copies of misaligned payloads measured slower).
  static constexpr std::size_t kInlinePayloadBytes = kSlotHeaderBytes - sizeof(SlotHeader);
  static_assert(kInlinePayloadBytes == 8);
  static constexpr std::size_t payload_offset(uint32_t len) noexcept {
    return len <= kInlinePayloadBytes ? sizeof(SlotHeader) : kSlotHeaderBytes;
  }
  static_assert(std::atomic<uint64_t>::is_always_lock_free);

  enum class Push { kFull, kPushed, kPushedAsleep };

  static std::size_t bytes_for(uint32_t slots, uint32_t slot_size) noexcept {
    return sizeof(Control) + std::size_t{slots} * slot_size;
  }

  MsgRing() = default;

  // Receiver, once: lays out an empty ring in `mem` (bytes_for() bytes,
  // 64-aligned).  `slots` must be a power of two, `slot_size` a multiple of 64
  // and larger than 64.
  static MsgRing format(void* mem, uint32_t slots, uint32_t slot_size) noexcept {
    auto* c = new (mem) Control{};
    c->magic = kMagic;
    c->slots = slots;
    c->slot_size = slot_size;
    c->tail.store(0, std::memory_order_relaxed);
    c->asleep.store(0, std::memory_order_relaxed);
    MsgRing r(c);
    for (uint32_t i = 0; i < slots; ++i) new (r.slot(i)) SlotHeader{};
    for (uint32_t i = 0; i < slots; ++i) r.slot(i)->seq.store(i, std::memory_order_release);
    return r;
  }

  // Senders: a ring another process formatted.  False if it is not one.
  static bool attach(void* mem, std::size_t size, MsgRing& out) noexcept {
    auto* c = static_cast<Control*>(mem);
    if (size < sizeof(Control) || c->magic != kMagic || !c->slots ||
        (c->slots & (c->slots - 1)) || c->slot_size <= kSlotHeaderBytes ||
        bytes_for(c->slots, c->slot_size) > size)
      return false;
    out = MsgRing(c);
    return true;
  }

  bool valid() const noexcept { return ctl_ != nullptr; }
  uint32_t slots() const noexcept { return static_cast<uint32_t>(cap_); }
  std::size_t max_payload() const noexcept { return slot_size_ - kSlotHeaderBytes; }

  // Any thread of any process.  The caller has checked payload_len against
  // max_payload().
  Push try_push(uint32_t src, const core::MessageHeader& h, const void* payload) noexcept {
    uint64_t pos = ctl_->tail.load(std::memory_order_relaxed);
    SlotHeader* s;
    for (;;) {
      s = slot(pos & mask_);
      const uint64_t seq = s->seq.load(std::memory_order_acquire);
      const auto diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (ctl_->tail.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst,
                                             std::memory_order_relaxed))
          break;
      } else if (diff < 0) {
        return Push::kFull;  // the slot still holds the message of one lap ago
      } else {
        pos = ctl_->tail.load(std::memory_order_relaxed);
      }
    }
    s->src = src;
    s->header = h;
    if (h.payload_len)
      std::memcpy(reinterpret_cast<std::byte*>(s) + payload_offset(h.payload_len), payload,
                  h.payload_len);
    s->seq.store(pos + 1, std::memory_order_release);
    return take_asleep() ? Push::kPushedAsleep : Push::kPushed;
  }
  // Any thread: true if the consumer slept, and then this caller (only one)
  // must ring its doorbell.  After a seq_cst store of what it must see.
  bool take_asleep() noexcept {
    return ctl_->asleep.load(std::memory_order_seq_cst) &&
           ctl_->asleep.exchange(0, std::memory_order_seq_cst);
  }

  // Consumer only.  Calls f(src, header, payload) for up to `max` messages in
  // ring order; the payload is valid during the call only.
  template <typename F>
  std::size_t drain(std::size_t max, F&& f) noexcept {
    std::size_t n = 0;
    while (n < max) {
      SlotHeader* s = slot(head_ & mask_);
      if (s->seq.load(std::memory_order_acquire) != head_ + 1) break;
      f(s->src, s->header,
        reinterpret_cast<const std::byte*>(s) + payload_offset(s->header.payload_len));
      s->seq.store(head_ + cap_, std::memory_order_release);
      ++head_;
      ++n;
    }
    return n;
  }

  // Consumer only: publishes "asleep"; false if a message is claimed already.
  bool prepare_sleep() noexcept {
    ctl_->asleep.store(1, std::memory_order_seq_cst);
    return ctl_->tail.load(std::memory_order_seq_cst) == head_;
  }
  void end_sleep() noexcept { ctl_->asleep.store(0, std::memory_order_relaxed); }

  // Consumer only: a message is claimed or published and not yet drained.
  bool has_pending() const noexcept {
    return ctl_->tail.load(std::memory_order_acquire) != head_;
  }

 private:
  explicit MsgRing(Control* c)
      : ctl_(c),
        base_(reinterpret_cast<std::byte*>(c) + sizeof(Control)),
        cap_(c->slots),
        mask_(c->slots - 1u),
        slot_size_(c->slot_size) {}
  SlotHeader* slot(uint64_t i) const noexcept {
    return reinterpret_cast<SlotHeader*>(base_ + i * slot_size_);
  }

  Control* ctl_ = nullptr;
  std::byte* base_ = nullptr;
  uint64_t cap_ = 0;
  uint64_t mask_ = 0;
  std::size_t slot_size_ = 0;
  uint64_t head_ = 0;  // consumer's position (receiver only)
};

}  // namespace tsu::transport
