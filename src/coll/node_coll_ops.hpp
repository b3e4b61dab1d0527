// NodeColl's teams and ops, shared by the files that define its members:
// node_coll.cpp (teams, starting and driving ops), node_coll_advance.cpp
// (small data through the slots, large data by CMA) and node_coll_staged.cpp
// (large data through the stages).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "coll/node_area.hpp"
#include "coll/node_coll.hpp"
#include "coll/reduce_ops.hpp"
#include "coll/scratch_pool.hpp"

namespace tsu::coll {

struct NodeColl::Team {
  std::vector<uint32_t> ranks;         // job ranks by team rank
  std::vector<node::SlotArea*> slot;   // member j's slot, mapped here
  std::vector<uint64_t> seen_done;     // last done count seen per member (saves loads)
  std::vector<uint64_t> seen_ready;    // last ready count seen per member
  uint64_t stage_free = 0;             // done count that frees the stages (last staged s+1)
  uint64_t staged_ops = 0;             // staged collectives started (probes: stage_store_choice.hpp)
  // The stores the last staged collective per size class and kind used
  // (true: streaming).
  std::array<std::array<bool, node::kStagedKinds>, node::kStagedSizes> streaming{};
  uint32_t me = 0, n = 0, tag = 0;
  uint64_t next_seq = 0;
  // The small-data ring (node_area.hpp): where the next op's bytes go, and
  // per kRingUnit which op last used it (seq + 1; 0: none).  Every member
  // computes the same offsets: the same ops, in the same order.
  std::size_t ring_head = 0;
  std::array<uint64_t, node::kRingBytes / node::kRingUnit> ring_last{};
  std::deque<std::unique_ptr<Op>> queue;  // started, not complete, in order
  bool lost = false;  // a member died: every collective of the team fails (on_peer_lost)
};

namespace node {
// An op's progress, reset field by field when a finished Op is reused
// (assigning a whole Op{} zeroed ~200 bytes with `rep stos`, a visible part
// of a tiny collective's start; the Request is assigned anyway).
struct OpState {
  uint64_t seq = 0;
  int stage = 0;
  bool small = false;   // data through the slots (else CMA from user buffers)
  bool tiny = false;    // small enough to ride with its flag (SlotArea::tiny)
  bool staged = false;  // large, through the stages (SlotArea::stage)
  uint64_t stage_free = 0;  // staged: every peer's done must reach this first
  std::size_t ring_off = 0;  // small: its bytes in the data ring
  uint64_t ring_reuse = 0;   // small: every peer's ready must reach this before writing
  uint32_t peer = 0;        // staged reading: the member being copied
  std::size_t copied = 0;   // staged reading: bytes of it copied
  bool stream = false;      // staged: this member writes its stage with non-temporal stores
  bool timed = false;       // staged: this member times its copying (stage_store_choice.hpp)
  uint64_t busy_ns = 0;     // staged, timed: time spent copying (not waiting)
  bool exposes = false;  // peers read this rank's buffers: complete after their done
  bool done_read = false;  // peers wait for this rank's done flag (large data)
  tsu_status_t status = TSU_OK;
  const std::atomic<uint64_t>* wait_line = nullptr;  // what the op waits for
  uint64_t wait_count = 0;
};

// Member j's slice of `count` elements: [lo, lo + len).
inline void slice_of(uint32_t j, uint32_t n, std::size_t count, std::size_t& lo,
                     std::size_t& len) {
  const std::size_t base = count / n, extra = count % n;
  lo = j * base + std::min<std::size_t>(j, extra);
  len = base + (j < extra ? 1 : 0);
}

// Whether member `me` gets the result: every member of an all-collective,
// else the root.
inline bool is_root(const NodeColl::Request& r, uint32_t me) {
  using K = NodeColl::Kind;
  const bool all = r.kind == K::kAllreduce || r.kind == K::kAllgather || r.kind == K::kAlltoall;
  return all || r.root == me;
}

// An element's bytes in a reduction (1 otherwise: bytes are counted).
inline std::size_t elem_size(const NodeColl::Request& r) {
  using K = NodeColl::Kind;
  return (r.kind == K::kReduce || r.kind == K::kAllreduce) ? dtype_size(r.type) : 1;
}

// Keeps the first failure of an op's copies.
inline void keep_first_error(OpState& op, tsu_status_t st) {
  if (st != TSU_OK && op.status == TSU_OK) op.status = st;
}
}  // namespace node

struct NodeColl::Op : node::OpState {
  Request r;
  ScratchBuffer chunk;  // large reductions: a peer's chunk
  ScratchBuffer slice;  // large reduce, non-root: its reduced slice
};

}  // namespace tsu::coll
