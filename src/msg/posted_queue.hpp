// The posted-receive queue a rank shares with its node peers (seed 004), in
// the rank's layer area (Transport::peer_layer_area).  Everything here is
// accessed only under `lock`, by the owner (posting, matching arrivals,
// cancel, freeing) and by senders (single-copy eager), so plain fields are
// fine; the lock's acquire/release orders them.  Senders only try the lock and
// fall back to eager when it is busy: a sender never waits for a receiver.
//
// Layout: Header | uint16_t order[capacity] | Entry[capacity] |
//         SourceCounter[job size]
//  - order[0..count) lists the posted entries in posting order (matching
//    takes the first match).  A sender that fills an entry removes it from
//    the list and tells the owner (a notice message with the length and tag);
//    the owner frees the entry then.
//  - The header's cache line also holds a copy of the first posted entry's
//    match fields (`head`), kept by the owner whenever order[0] changes.  A
//    sender matching the first posted receive (the common case: receives
//    posted in the order messages come) touches only that one line of the
//    owner's (besides the buffer): every further line is a cache-line
//    transfer between the cores, and those transfers, not the copy, are what
//    single-copy eager pays over eager for small messages.
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
  uint32_t src;     // TSU_ANY_SOURCE or a rank
  uint32_t gen;     // bumped on each use of the entry
  uint64_t tag;
  uint64_t mask;
  uint64_t cap;     // buffer bytes
  int32_t seg;      // owner's shared segment holding the buffer, or -1
  uint32_t slot;    // the entry's index
  uint64_t offset;  // buffer offset in seg
};
static_assert(sizeof(PostedFields) == 48);

struct alignas(64) PostedHeader {
  std::atomic<uint32_t> lock;
  uint32_t capacity;
  uint32_t count;     // entries in order[]
  uint32_t magic;
  PostedFields head;  // copy of entry(order[0]) while count > 0
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
  static constexpr uint32_t kMagic = 0x70717531;  // "pqu1"
  static std::size_t order_bytes(uint32_t capacity) noexcept {
    return (std::size_t{capacity} * sizeof(uint16_t) + 63) / 64 * 64;
  }
  static std::size_t bytes_for(uint32_t capacity, uint32_t ranks) noexcept {
    return sizeof(PostedHeader) + order_bytes(capacity) +
           std::size_t{capacity} * sizeof(PostedEntry) + std::size_t{ranks} * sizeof(SourceCounter);
  }
  PostedQueue() = default;
  PostedQueue(std::byte* area, uint32_t capacity, uint32_t ranks) noexcept
      : hdr_(reinterpret_cast<PostedHeader*>(area)),
        order_(reinterpret_cast<uint16_t*>(area + sizeof(PostedHeader))),
        entries_(reinterpret_cast<PostedEntry*>(area + sizeof(PostedHeader) + order_bytes(capacity))),
        counters_(reinterpret_cast<SourceCounter*>(area + sizeof(PostedHeader) +
                                                   order_bytes(capacity) +
                                                   std::size_t{capacity} * sizeof(PostedEntry))) {
    (void)ranks;
  }
  // Owner, at init (the area is zero-filled memory).
  void format(uint32_t capacity) noexcept {
    hdr_->capacity = capacity;
    hdr_->count = 0;
    hdr_->magic = kMagic;
  }
  bool valid() const noexcept { return hdr_ && hdr_->magic == kMagic; }

  // A plain exchange, without reading the word first: the line usually sits
  // in the other process's cache, and a read would fetch it shared and then
  // need a second transfer to own it.
  bool try_lock() noexcept { return hdr_->lock.exchange(1, std::memory_order_acquire) == 0; }
  void lock() noexcept {
    util::Backoff b;
    while (!try_lock())
      while (hdr_->lock.load(std::memory_order_relaxed)) b.pause();
  }
  void unlock() noexcept { hdr_->lock.store(0, std::memory_order_release); }

  uint32_t capacity() const noexcept { return hdr_->capacity; }
  uint32_t count() const noexcept { return hdr_->count; }
  PostedEntry& entry(uint32_t i) noexcept { return entries_[i]; }
  uint16_t order(uint32_t i) const noexcept { return order_[i]; }
  // The match fields of the posted receive at position i: the first one from
  // the header's line.
  const PostedFields& posted(uint32_t i) const noexcept {
    return i == 0 ? hdr_->head : entries_[order_[i]].f;
  }
  // Owner: the entry's fields are written before it is appended.
  void append(uint16_t slot) noexcept {
    order_[hdr_->count++] = slot;
    if (hdr_->count == 1) hdr_->head = entries_[slot].f;
  }
  void remove_at(uint32_t pos) noexcept {
    for (uint32_t i = pos + 1; i < hdr_->count; ++i) order_[i - 1] = order_[i];
    --hdr_->count;
    if (pos == 0 && hdr_->count) hdr_->head = entries_[order_[0]].f;
  }
  std::atomic<uint64_t>& processed(uint32_t src) noexcept { return counters_[src].processed; }

 private:
  PostedHeader* hdr_ = nullptr;
  uint16_t* order_ = nullptr;
  PostedEntry* entries_ = nullptr;
  SourceCounter* counters_ = nullptr;
};

inline bool tag_matches(uint32_t rsrc, uint64_t rtag, uint64_t rmask, uint32_t src,
                        uint64_t tag) noexcept {
  return (rsrc == UINT32_MAX || rsrc == src) && ((tag ^ rtag) & rmask) == 0;
}

}  // namespace tsu::msg
