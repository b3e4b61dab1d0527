// The rank control block: a shared-memory region per rank (about 1 MiB of
// address space, its pages touched as slots are used), mapped by every node
// peer, holding the rank's segment table.  It is the authority for bounds
// checks: a peer applying a request reads the slot of the target segment here,
// so a freed or too-short segment is refused wherever the request executes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/doorbell.hpp"

namespace tsu::core {

// Segment ids: tsu_seg_t = (generation << kSegIndexBits) | index.  The index
// picks the slot below; the generation counts how often the slot was reused,
// so an id kept after tsu_segment_free (a stale address) no longer matches the
// slot and fails with TSU_ERR_BAD_SEGMENT on every route.  The main segment is
// index 0, generation 0: id 0 (TSU_SEG_MAIN).
inline constexpr uint32_t kSegIndexBits = 14;
inline constexpr uint32_t kSegGenerationBits = 32 - kSegIndexBits;  // 18
inline constexpr uint32_t kMaxSegments = 1u << kSegIndexBits;        // slots per rank
inline constexpr uint32_t kSegIndexMask = kMaxSegments - 1;
inline constexpr uint32_t kSegGenerationMask = (1u << kSegGenerationBits) - 1;
// Freed indices wait in a FIFO and are reused only while at least this many
// are waiting, so between two reuses of one index at least kSegQuarantine
// segments are freed: a stale id can alias a later segment only after its
// index's 18-bit generation wrapped, i.e. after at least
// 2^18 * 1024 = 268,435,456 frees by this rank (with few segments live the
// FIFO holds ~16,000 indices and it takes ~4.3e9 frees).
inline constexpr uint32_t kSegQuarantine = 1024;
// Live segments per rank, the main one included: an allocation fails with
// TSU_ERR_LIMIT only when no index was never used and fewer than
// kSegQuarantine freed ones wait.
inline constexpr uint32_t kMaxLiveSegments = kMaxSegments - kSegQuarantine + 1;  // 15361

constexpr uint32_t seg_index(uint32_t id) noexcept { return id & kSegIndexMask; }
constexpr uint32_t seg_generation(uint32_t id) noexcept { return id >> kSegIndexBits; }
constexpr uint32_t seg_make_id(uint32_t generation, uint32_t index) noexcept {
  return ((generation & kSegGenerationMask) << kSegIndexBits) | (index & kSegIndexMask);
}

inline constexpr uint64_t kControlBlockMagic = 0x7473756e61676932ull;  // "tsunagi2"

enum SegmentState : uint32_t {
  kSegmentUnused = 0,      // never allocated
  kSegmentShared = 1,      // memfd region: peers map it
  kSegmentRegistered = 2,  // user memory: peers use Cross Memory Attach
  kSegmentRetired = 3,     // freed; the index may later carry a new generation
  // A memfd region like kSegmentShared whose atomics the network adapter
  // executes (TSU_SEG_NIC_ATOMICS): node peers map it for copies and send
  // its atomics to the network transport (seed 002: one executor per word).
  kSegmentSharedNic = 4,
};

// The slot's state word: the current id in the high half, the state low.
constexpr uint64_t slot_word(uint32_t id, uint32_t state) noexcept {
  return (static_cast<uint64_t>(id) << 32) | state;
}
constexpr uint32_t slot_word_id(uint64_t word) noexcept {
  return static_cast<uint32_t>(word >> 32);
}
constexpr uint32_t slot_word_state(uint64_t word) noexcept {
  return static_cast<uint32_t>(word);
}
constexpr bool slot_state_live(uint32_t state) noexcept {
  return state == kSegmentShared || state == kSegmentRegistered || state == kSegmentSharedNic;
}
// Live and in shared memory (node peers map it).
constexpr bool slot_state_shared(uint32_t state) noexcept {
  return state == kSegmentShared || state == kSegmentSharedNic;
}

// One segment index.  Other processes (node peers) and other threads read a
// slot while its owner may retire it and later rewrite it for a new
// generation, so every field is an atomic and readers use a seqlock built from
// acquire/release accesses only (no standalone fences, which ThreadSanitizer
// does not model):
//
//   reader: w = word.load(acquire); check id and state of w;
//           read fd/size/owner_addr with acquire loads;
//           if (word.load(relaxed) != w) the segment changed: the id is stale.
//   owner:  free:  word.store(<id, retired>, release)
//           reuse (later, under the table's mutex): write fd/size/owner_addr
//                  with release stores; word.store(<new id, state>, release)
//
// Invariant: fields that a reader saw between two loads of the same live
// word w belong to the segment named by w.  If the reader read any field
// value written for a later generation, its acquire load synchronizes with
// that release store, before which the retirement of w happened; the
// reader's second word load comes after (the acquire load orders it), so it
// sees the retirement or something later and differs from w.  The word never
// returns to an earlier value (the id's generation grows; see kSegQuarantine
// for the wrap), so there is no ABA within one check.  On x86 these acquire
// loads and release stores are plain moves.
//
// Pages of the control block are only touched for slots that are used: the
// memfd is zero-filled, and all-zero is "unused" for every slot.
struct alignas(64) SegmentSlot {
  std::atomic<uint64_t> word;        // slot_word(id, state)
  std::atomic<int32_t> fd;           // owner's memfd descriptor (shared segments)
  uint32_t reserved;
  std::atomic<uint64_t> size;        // bytes usable
  std::atomic<uint64_t> owner_addr;  // base address in the owner's address space
};

struct ControlBlock {
  uint64_t magic;
  uint32_t rank;
  int32_t pid;
  int32_t wake_eventfd;  // the engine's eventfd (node peers duplicate it)
  uint32_t reserved;
  alignas(64) DoorbellShared doorbell;  // wakes this rank's progress engine
  // Messaging (written by the owner before it publishes its bootstrap record,
  // read by node peers when they connect): the receive ring node peers push
  // messages into, and the area the layers above core share with node peers
  // (the tagged layer's posted-receive queue).
  alignas(64) int32_t msg_ring_fd;
  uint32_t reserved2;
  uint64_t msg_ring_size;
  int32_t layer_area_fd;
  uint32_t reserved3;
  uint64_t layer_area_size;
  alignas(64) SegmentSlot slots[kMaxSegments];
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "atomics must be address-free");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "atomics must be address-free");
static_assert(std::is_standard_layout_v<ControlBlock>);
static_assert(sizeof(SegmentSlot) == 64, "one cache line per slot");
static_assert(offsetof(ControlBlock, msg_ring_fd) % 64 == 0);
static_assert(offsetof(ControlBlock, slots) % 64 == 0);

}  // namespace tsu::core
