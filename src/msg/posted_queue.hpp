// The posted-receive queue a rank shares with its node peers (seed 004), in
// the rank's layer area (MemoryAccess::peer_layer_area).  The owner posts,
// matches arrivals, cancels and frees; senders (single-copy eager) fill the
// buffer of a posted receive.  Everything is accessed under `lock`, whose
// acquire/release orders the plain fields.  Senders only try the lock and
// fall back to eager when it is busy: a sender never waits for a receiver.
//
// Layout: Info | Header | uint16_t order[capacity] | Entry[capacity] |
//         SourceCounter[job size]
//  - order[0..count) lists the posted entries in posting order (matching
//    takes the first match).
//  - The header's cache line also holds a copy of the first posted entry's
//    match fields (`head`, kept by the owner whenever order[0] changes) and
//    the "filled" record.  A sender that fills a receive removes it from
//    order[], writes the record (entry, source, tag, length) into the same
//    line and leaves the lock in state kFilled instead of releasing it; the
//    owner's progress sees kFilled, completes the receive and releases.  In
//    the common case (receives posted in the order messages come) a message
//    then costs two transfers of this one line -- the sender's lock, the
//    owner's read -- instead of the lock, a notice through the ring and the
//    owner taking the line back to free the entry: those transfers, not the
//    copy, are what single-copy eager pays over eager for small messages.
//  - Lock states: kFree; kHeld (a sender, or an owner thread); kFilled (the
//    record is valid).  Invariant: only the owner's thread running the
//    progress pass (one at a time: it holds the engine's consumer role)
//    leaves kFilled; no sender and no other owner thread takes a lock in that
//    state, so that thread reads the record and writes the line with plain
//    stores, then releases with kFree.  Other owner threads that find
//    kFilled wait for (or run) progress (MsgLayer::lock_queue).
//  - A sender that leaves kFilled wakes the owner's engine if it sleeps
//    (MemoryAccess::notify_peer): seq_cst store of kFilled then seq_cst load of
//    the owner's "asleep" word, against the owner's seq_cst store of "asleep"
//    then seq_cst load of the lock (MsgLayer::idle): one of them sees the other.
//  - processed[s] counts the tagged messages from rank s (eager and
//    rendezvous requests) the owner has matched or queued as unexpected.  A
//    sender counts a message in sent[dst] BEFORE pushing it (and uncounts it
//    if the push is refused), so processed[me] <= sent[dst] always, and a
//    sender may bypass the queue only when they are equal, i.e. none of its
//    process's earlier messages is still in flight: otherwise a later message
//    could overtake an earlier one that matches the same receive.  (Counting
//    after the push races between threads: found by the non-overtaking test.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "util/backoff.hpp"

namespace tsu::msg {

// What a sender needs to match and fill a posted receive.
struct PostedFields {
  uint64_t tag;
  uint64_t mask;
  uint64_t offset;  // buffer offset in seg
  uint32_t src;     // TSU_ANY_SOURCE or a rank
  uint32_t cap;     // buffer bytes (clipped: eager messages are far smaller)
  uint32_t seg;     // owner's shared segment holding the buffer (if has_seg)
  uint16_t slot;    // the entry's index
  uint8_t has_seg;  // 0: the buffer is in no shared segment
  uint8_t reserved;
};
static_assert(sizeof(PostedFields) == 40);

// Read once per peer: the sender caches the capacity.
struct alignas(64) PostedInfo {
  uint32_t capacity;
  uint32_t magic;
};

enum LockState : uint32_t { kFree = 0, kHeld = 1, kFilled = 2 };

struct alignas(64) PostedHeader {
  std::atomic<uint32_t> lock;
  uint16_t count;        // entries in order[]
  uint16_t filled_slot;  // record (valid while lock == kFilled)
  PostedFields head;     // copy of entry(order[0]) while count > 0
  uint64_t filled_tag;
  uint32_t filled_len;
  uint32_t filled_src;
};
static_assert(sizeof(PostedHeader) == 64);

enum EntryState : uint32_t { kEntryFree = 0, kEntryPosted = 1 };

struct alignas(64) PostedEntry {
  PostedFields f;
  uint32_t state;  // owner only
};
static_assert(sizeof(PostedEntry) == 64);

struct alignas(64) SourceCounter {
  std::atomic<uint64_t> processed;
};

class PostedQueue {
 public:
  static constexpr uint32_t kMagic = 0x70717532;  // "pqu2"
  static constexpr uint32_t kMaxCapacity = UINT16_MAX;
  static std::size_t order_bytes(uint32_t capacity) noexcept {
    return (std::size_t{capacity} * sizeof(uint16_t) + 63) / 64 * 64;
  }
  static std::size_t bytes_for(uint32_t capacity, uint32_t ranks) noexcept {
    return sizeof(PostedInfo) + sizeof(PostedHeader) + order_bytes(capacity) +
           std::size_t{capacity} * sizeof(PostedEntry) + std::size_t{ranks} * sizeof(SourceCounter);
  }
  // The capacity a peer's area says it has (0 if it is not a queue).
  static uint32_t capacity_of(const std::byte* area) noexcept {
    const auto* info = reinterpret_cast<const PostedInfo*>(area);
    return info->magic == kMagic ? info->capacity : 0;
  }
  PostedQueue() = default;
  PostedQueue(std::byte* area, uint32_t capacity, uint32_t ranks) noexcept
      : info_(reinterpret_cast<PostedInfo*>(area)),
        hdr_(reinterpret_cast<PostedHeader*>(area + sizeof(PostedInfo))),
        order_(reinterpret_cast<uint16_t*>(area + sizeof(PostedInfo) + sizeof(PostedHeader))),
        entries_(reinterpret_cast<PostedEntry*>(area + sizeof(PostedInfo) + sizeof(PostedHeader) +
                                                order_bytes(capacity))),
        counters_(reinterpret_cast<SourceCounter*>(
            area + sizeof(PostedInfo) + sizeof(PostedHeader) + order_bytes(capacity) +
            std::size_t{capacity} * sizeof(PostedEntry))),
        capacity_(capacity) {
    (void)ranks;
  }
  // Owner, at init (the area is zero-filled memory).
  void format() noexcept {
    info_->capacity = capacity_;
    hdr_->count = 0;
    info_->magic = kMagic;
  }
  bool valid() const noexcept { return hdr_ != nullptr; }

  // ---- Senders ----
  // A compare-exchange without reading the word first: the line usually sits
  // in the other process's cache, and a read would fetch it shared and then
  // need a second transfer to own it.  Fails on kHeld and kFilled.
  bool try_lock() noexcept {
    uint32_t expected = kFree;
    return hdr_->lock.compare_exchange_strong(expected, kHeld, std::memory_order_acquire,
                                              std::memory_order_relaxed);
  }
  void unlock() noexcept { hdr_->lock.store(kFree, std::memory_order_release); }
  // Lock held, the receive at `slot` filled and removed from order[]: hands
  // the lock to the owner with the record (seq_cst: see the header comment).
  void publish_filled(uint16_t slot, uint32_t src, uint64_t tag, uint32_t len) noexcept {
    hdr_->filled_slot = slot;
    hdr_->filled_src = src;
    hdr_->filled_tag = tag;
    hdr_->filled_len = len;
    hdr_->lock.store(kFilled, std::memory_order_seq_cst);
  }

  // ---- Owner ----
  // One compare-exchange (the line is usually ours already): kTaken (we hold
  // it), kRecordWaits (a sender left a record: only the progress pass may
  // take it, and then owns the line until unlock()), kBusy (a sender holds it).
  enum OwnerLock { kTaken, kRecordWaits, kBusy };
  OwnerLock owner_lock() noexcept {
    uint32_t v = kFree;
    if (hdr_->lock.compare_exchange_strong(v, kHeld, std::memory_order_acquire,
                                           std::memory_order_acquire))
      return kTaken;
    return v == kFilled ? kRecordWaits : kBusy;
  }
  // Progress, idle check: a record waits (seq_cst for the sleep handshake).
  bool filled_pending(std::memory_order mo = std::memory_order_acquire) const noexcept {
    return hdr_->lock.load(mo) == kFilled;
  }
  uint16_t filled_slot() const noexcept { return hdr_->filled_slot; }
  uint32_t filled_src() const noexcept { return hdr_->filled_src; }
  uint64_t filled_tag() const noexcept { return hdr_->filled_tag; }
  uint32_t filled_len() const noexcept { return hdr_->filled_len; }

  uint32_t capacity() const noexcept { return capacity_; }
  uint32_t count() const noexcept { return hdr_->count; }
  PostedEntry& entry(uint32_t i) noexcept { return entries_[i]; }
  uint16_t order(uint32_t i) const noexcept { return order_[i]; }
  // The match fields of the posted receive at position i: the first one from
  // the header's line.
  const PostedFields& posted(uint32_t i) const noexcept {
    return i == 0 ? hdr_->head : entries_[order_[i]].f;
  }
  // Owner: the entry's fields are written before it is appended.
  // `f`: the entry's fields, as just stored in entries_[f.slot].
  void append(const PostedFields& f) noexcept {
    order_[hdr_->count++] = f.slot;
    if (hdr_->count == 1) hdr_->head = f;
  }
  void remove_at(uint32_t pos) noexcept {
    // The count in a local: with `i < hdr_->count` as the bound, each
    // uint16_t store (same type, may alias) forced a reload of the count,
    // and with 64 receives posted the shift took 70% of matching an arrival.
    const uint32_t count = hdr_->count;
    uint16_t* const order = order_;
    for (uint32_t i = pos + 1; i < count; ++i) order[i - 1] = order[i];
    hdr_->count = static_cast<uint16_t>(count - 1);
    if (pos == 0 && count > 1) hdr_->head = entries_[order_[0]].f;
  }
  std::atomic<uint64_t>& processed(uint32_t src) noexcept { return counters_[src].processed; }

 private:
  PostedInfo* info_ = nullptr;
  PostedHeader* hdr_ = nullptr;
  uint16_t* order_ = nullptr;
  PostedEntry* entries_ = nullptr;
  SourceCounter* counters_ = nullptr;
  uint32_t capacity_ = 0;
};

inline bool tag_matches(uint32_t rsrc, uint64_t rtag, uint64_t rmask, uint32_t src,
                        uint64_t tag) noexcept {
  return (rsrc == UINT32_MAX || rsrc == src) && ((tag ^ rtag) & rmask) == 0;
}

}  // namespace tsu::msg
