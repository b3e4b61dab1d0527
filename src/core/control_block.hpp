// The rank control block: a small shared-memory page per rank, mapped by every
// node peer, holding the rank's segment table.  It is the authority for bounds
// checks: a peer applying a request reads the slot of the target segment here,
// so a freed or too-short segment is refused wherever the request executes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/doorbell.hpp"

namespace tsu::core {

inline constexpr uint32_t kMaxSegments = 256;
inline constexpr uint64_t kControlBlockMagic = 0x7473756e61676931ull;  // "tsunagi1"

enum SegmentState : uint32_t {
  kSegmentUnused = 0,      // never allocated
  kSegmentShared = 1,      // memfd region: peers map it
  kSegmentRegistered = 2,  // user memory: peers use Cross Memory Attach
  kSegmentRetired = 3,     // freed; the id is never reused
};

// One segment.  The owner writes fd/size/owner_addr, then publishes `state`
// with release; readers load `state` with acquire before reading the rest.
struct alignas(64) SegmentSlot {
  std::atomic<uint32_t> state;
  int32_t fd;           // owner's memfd descriptor (shared segments)
  uint64_t size;        // bytes usable
  uint64_t owner_addr;  // base address in the owner's address space
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
static_assert(std::is_standard_layout_v<ControlBlock>);
static_assert(sizeof(SegmentSlot) == 64, "one cache line per slot");
static_assert(offsetof(ControlBlock, msg_ring_fd) % 64 == 0);
static_assert(offsetof(ControlBlock, slots) % 64 == 0);

}  // namespace tsu::core
