// The collectives' slice of a rank's layer area (runtime/layer_area.hpp):
// one slot per node team this rank belongs to.  A slot is written only by its
// owner and read by the team's node peers, who map the area
// (MemoryAccess::peer_layer_area).  Pages are only backed where a team uses
// them.
//
// Flags: `ready` and `done` hold (team tag << 40 | count).  The tag tells a
// team's values from those left by an earlier team in the same slot; counts
// only grow.  For the team's collective number s:
//   ready >= 2s+1  the owner's inputs of s are published (data[s%kDepth],
//                  pub[s%kDepth]); it has completed every collective before s
//   ready >= 2s+2  the owner's part of a two-phase collective is ready
//   done  >= s+1   the owner reads nothing of anybody's for s any more (stored
//                  only by collectives whose buffers peers read in place)
// Memory ordering: the owner writes data/pub with plain stores, then stores
// the flag (release; seq_cst where engines sleep: the store half of the
// sleep handshake, see NodeColl::idle); a reader loads the flag (acquire)
// before it reads data/pub.  The owner overwrites pub[s % kDepth] for s only
// after every peer's ready >= 2(s-kDepth+1)+1: they started s-kDepth+1, so
// they completed s-kDepth, the previous user of that entry.  (Every member
// starts every collective of the team, so that wait ends.)
//
// Small data (up to kDataBytes published per member) goes to `data`, a ring
// taken in kRingUnit steps in op order (every member computes the same
// offsets; an op that does not fit before the end starts at 0).  The owner
// writes an op's bytes only after every peer's ready >= 2(p+1)+1, p the last
// op that used any of them: small ops a root runs ahead by are bounded by
// bytes, not by a count (64 B ops: 512 in flight, 8 KiB ones: 4).
//
// Tiny data (up to kTinyBytes published per member) rides with its own flag
// in one line, tiny[s % kTinyDepth]: seq = (tag, s+1) stored (release) after
// the data, so a reader pulls one line per peer; kTinyDepth lines let a
// root run far ahead (reuse waits for every peer's ready >= 2(s-kTinyDepth+1)+1).
// The depth sets how many tiny ops a member that has a core does while the
// members it is ahead of wait for theirs: with more ranks than cores, a
// member that catches up yields, and each such turn costs context switches,
// so a deep ring makes fewer, longer turns (docs/messaging.md, "Reuse").
//
// Large data (up to kStageBytes published per member) is staged: the owner
// copies it into `stage` a kStageChunk at a time and raises `staged` to
// (tag, s * kStagedPerOp + chunks copied) after each chunk (release), so
// readers copy out behind it (a pipeline across cores).  Reductions combine
// straight out of the peers' stages (no copy) and leave each slice's result
// in its owner's stage.  Before the owner stages for s, every peer's done
// has reached the previous staged collective's s+1.  The owner writes its
// stage with plain or non-temporal stores (sfence before the count), chosen
// by the costs in `stage_cost` (coll/stage_store_choice.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>


namespace tsu::coll::node {

inline constexpr uint32_t kSlots = 16;
inline constexpr uint32_t kDepth = 4;  // pub entries: a root may run kDepth-1 large ops ahead
inline constexpr std::size_t kDataBytes = 8u << 10;  // the small path: bytes published per op
inline constexpr std::size_t kRingBytes = kDepth * kDataBytes;
inline constexpr std::size_t kRingUnit = 64;

struct Published {  // user buffer addresses, for peers' Cross Memory Attach reads
  uint64_t src, dst;
};

// Tiny-data lines per slot: how many tiny collectives a rank may run ahead of
// a team peer (64 KiB a slot).
inline constexpr uint32_t kTinyDepth = 1024;
inline constexpr std::size_t kTinyBytes = 56;

inline constexpr std::size_t kStageBytes = 1u << 20;
inline constexpr std::size_t kStageChunk = 64u << 10;
inline constexpr uint64_t kStagedPerOp = 32;  // > kStageBytes / kStageChunk
static_assert(kStageBytes / kStageChunk < kStagedPerOp);
inline constexpr unsigned kStagedKinds = 8;  // NodeColl::Kind values
inline constexpr unsigned kStagedSizes = 3;  // stage_store_choice.hpp: stage_size_class

struct alignas(64) TinyLine {
  std::atomic<uint64_t> seq;
  std::byte data[kTinyBytes];
};
static_assert(sizeof(TinyLine) == 64);

struct SlotArea {
  alignas(64) std::atomic<uint64_t> ready;
  alignas(64) std::atomic<uint64_t> done;
  alignas(64) std::atomic<uint64_t> staged;
  // Per size class, collective kind, plain (0) and streaming (1) stores:
  // this member's average copying time in probed staged collectives, ns per
  // MiB (0: none).
  alignas(64) std::atomic<uint32_t> stage_cost[kStagedSizes][kStagedKinds][2];
  alignas(64) Published pub[kDepth];
  TinyLine tiny[kTinyDepth];
  alignas(64) std::byte data[kRingBytes];
  alignas(64) std::byte stage[kStageBytes];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "flags are shared between processes");
// What the collectives reserve of the layer area (CollLayer::area_bytes).
inline constexpr std::size_t kAreaBytes = sizeof(SlotArea) * kSlots;

inline constexpr unsigned kCountBits = 40;
inline constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;

inline uint64_t flag_value(uint32_t tag, uint64_t count) noexcept {
  return (uint64_t{tag} << kCountBits) | (count & kCountMask);
}
// True when flag value `v` is this team's (tag) and at least `count`.
inline bool reached(uint64_t v, uint32_t tag, uint64_t count) noexcept {
  return (v >> kCountBits) == tag && (v & kCountMask) >= count;
}

// The slots in the collectives' slice of a layer area (`size` bytes).
inline SlotArea* slots_of(std::byte* slice, std::size_t size) noexcept {
  if (!slice || size < kAreaBytes) return nullptr;
  return reinterpret_cast<SlotArea*>(slice);
}

}  // namespace tsu::coll::node
