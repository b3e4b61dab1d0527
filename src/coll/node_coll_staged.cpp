// NodeColl's large data through the stages (node_area.hpp): each member
// stages its data in its slot's stage chunk by chunk, and the readers copy
// (or combine) it out behind the writer.  advance_staged and its steps.
#include <algorithm>
#include <cstring>

#include "coll/node_coll.hpp"
#include "coll/node_coll_ops.hpp"
#include "coll/reduce_ops.hpp"
#include "coll/stage_store_choice.hpp"
#include "coll/stream_copy.hpp"
#include "util/clock.hpp"

namespace tsu::coll {

using node::SlotArea;

namespace {
using K = NodeColl::Kind;

std::size_t chunks_for(std::size_t bytes) {
  return (bytes + node::kStageChunk - 1) / node::kStageChunk;
}

// A reduce of two members: the root combines the peer's data into dst
// chunk by chunk as the peer stages it, and stages nothing itself.  (The
// slice scheme below would stage both inputs whole, combine half on each
// side, then copy the peer's half: 3 passes over the data on the root's
// path instead of one, behind Open MPI; docs/messaging.md, "Why these
// paths".)
bool pair_reduce(const NodeColl::Request& r, uint32_t n) { return r.kind == K::kReduce && n == 2; }

// The bytes of an op's data: an alltoall's src holds a block per member.
std::size_t data_len(const NodeColl::Request& r, uint32_t n) {
  return r.kind == K::kAlltoall ? r.bytes * n : r.bytes;
}
}  // namespace

// Large data through the stages (node_area.hpp).  Stages: 0 stage this
// member's data, 1 copy (or combine) the peers' data, 2 reductions: copy the
// peers' slices, 3 say done.
bool NodeColl::advance_staged(Team& t, Op& op) noexcept {
  for (;;) {
    op.wait_line = nullptr;
    switch (op.stage) {
      case 0:  // stage this member's data
        if (!stage_own_data(t, op)) return false;
        publish(t, true, 2 * op.seq + 1);
        op.stage = 1;
        break;
      case 1:  // the peers' data (it picks the next stage)
        if (!read_stages(t, op)) return false;
        break;
      case 2:  // reductions: the peers' slices
        if (!copy_staged_slices(t, op)) return false;
        op.stage = 3;
        break;
      default:  // this member reads no stage of s any more
        finish_staged(t, op);
        return true;
    }
  }
}

// Waits until member j staged its first `bytes` bytes of op.
bool NodeColl::wait_staged(Team& t, Op& op, uint32_t j, std::size_t bytes) noexcept {
  return wait_line(t, op, t.slot[j]->staged, op.seq * node::kStagedPerOp + chunks_for(bytes),
                   nullptr);
}

// Copies member j's staged [from, from + m) to `to` as it gets staged
// (op.copied: progress, kept across calls).
bool NodeColl::copy_staged(Team& t, Op& op, uint32_t j, std::size_t from, std::byte* to,
                           std::size_t m) noexcept {
  const bool timed = op.timed;
  while (op.copied < m) {
    const std::size_t piece = std::min(node::kStageChunk, m - op.copied);
    if (!wait_staged(t, op, j, from + op.copied + piece)) return false;
    const uint64_t t0 = timed ? util::now_ns() : 0;
    std::memcpy(to + op.copied, t.slot[j]->stage + from + op.copied, piece);
    if (timed) op.busy_ns += util::now_ns() - t0;
    op.copied += piece;
  }
  op.copied = 0;
  return true;
}

bool NodeColl::stage_own_data(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t me = t.me;
  const uint64_t s = op.seq;
  const std::size_t len = data_len(r, t.n);
  SlotArea& mine = *t.slot[me];
  // Only what peers read: a broadcast's root and a gather's peers
  // stage; an alltoall member stages every block but its own (it
  // copies that one from src).  Chunks are counted in address order
  // all the same (readers wait for the count that covers their bytes).
  const bool writes = r.kind == K::kBroadcast ? me == r.root
                      : r.kind == K::kGather || pair_reduce(r, t.n) ? me != r.root
                                                                    : true;
  if (!writes) return true;
  if (op.stage_free && !wait_all(t, op, false, op.stage_free)) return false;
  const std::byte* from = r.kind == K::kBroadcast ? r.dst : r.src;
  // An alltoall's stage holds the peers' blocks packed: stage byte x
  // is src byte x below the own block, x + bytes above it (so n - 1
  // blocks fit where n would not: 2 ranks, 1 MiB).
  const std::size_t own_lo = r.kind == K::kAlltoall ? std::size_t{me} * r.bytes : len;
  const std::size_t gap = r.kind == K::kAlltoall ? r.bytes : 0;
  const std::size_t staged_len = len - gap;
  std::size_t k = 0;
  const bool stream = op.stream;
  auto stage_copy = [stream](std::byte* to, const std::byte* src, std::size_t m) {
    if (stream) {
      stream_copy(to, src, m);
    } else {
      std::memcpy(to, src, m);
    }
  };
  const uint64_t t0 = op.timed ? util::now_ns() : 0;
  for (std::size_t off = 0; off < staged_len; off += node::kStageChunk) {
    const std::size_t end = std::min(off + node::kStageChunk, staged_len);
    // [off, end): below own_lo from src as is, above it shifted by gap.
    if (off < own_lo) stage_copy(mine.stage + off, from + off, std::min(end, own_lo) - off);
    if (end > own_lo) {
      const std::size_t lo = std::max(off, own_lo);
      stage_copy(mine.stage + lo, from + lo + gap, end - lo);
    }
    if (stream) stream_fence();  // the chunk before its count
    store_flag(mine.staged, node::flag_value(t.tag, s * node::kStagedPerOp + ++k));
  }
  if (op.timed) op.busy_ns += util::now_ns() - t0;
  return true;
}

bool NodeColl::read_stages(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  switch (r.kind) {
    case K::kBarrier:
    case K::kScatter:  // (never staged)
      break;
    case K::kBroadcast:
      if (t.me != r.root && !copy_staged(t, op, r.root, 0, r.dst, r.bytes)) return false;
      break;
    case K::kGather:
    case K::kAllgather:
    case K::kAlltoall:
      if (!copy_staged_blocks(t, op)) return false;
      break;
    case K::kReduce:
    case K::kAllreduce:
      if (!pair_reduce(r, t.n)) return reduce_staged_slice(t, op);
      if (!combine_pair_stage(t, op)) return false;
      break;
  }
  op.stage = 3;
  return true;
}

bool NodeColl::copy_staged_blocks(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  if (!node::is_root(r, me)) return true;
  // Member me+k in turn (own block first): readers start on
  // different writers instead of all queueing on member 0.
  for (; op.peer < n; ++op.peer) {
    const uint32_t j = (me + op.peer) % n;
    std::byte* to = r.dst + std::size_t{j} * r.bytes;
    const std::size_t own = r.kind == K::kAlltoall ? std::size_t{me} * r.bytes : 0;
    // (Block me in j's packed stage: one block lower above j's own.)
    const std::size_t from = r.kind == K::kAlltoall && me > j ? own - r.bytes : own;
    if (j == me) {
      std::memmove(to, r.src + own, r.bytes);
    } else if (!copy_staged(t, op, j, from, to, r.bytes)) {
      return false;
    }
  }
  return true;
}

bool NodeColl::combine_pair_stage(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  if (!node::is_root(r, t.me)) return true;
  const uint32_t j = 1 - t.me;
  const std::size_t len = data_len(r, t.n);
  const std::size_t es = node::elem_size(r);
  // op.copied: bytes combined so far (kept across calls).
  while (op.copied < len) {
    const std::size_t piece = std::min(node::kStageChunk, len - op.copied);
    if (!wait_staged(t, op, j, op.copied + piece)) return false;
    const uint64_t t0 = op.timed ? util::now_ns() : 0;
    // One pass: dst = src op the peer's chunk (dst may be src).
    combine_into(r.type, r.rop, r.dst + op.copied, r.src + op.copied,
                 t.slot[j]->stage + op.copied, piece / es);
    if (op.timed) op.busy_ns += util::now_ns() - t0;
    op.copied += piece;
  }
  op.copied = 0;
  return true;
}

bool NodeColl::reduce_staged_slice(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  const std::size_t len = data_len(r, n);
  const std::size_t es = node::elem_size(r);
  for (uint32_t j = 0; j < n; ++j)
    if (j != me && !wait_staged(t, op, j, len)) return false;
  // Slice `me`, combined in place in this member's stage, straight
  // out of the peers' stages; every element by one member only.
  std::size_t lo = 0, cnt = 0;
  node::slice_of(me, n, r.count, lo, cnt);
  std::byte* acc = t.slot[me]->stage + lo * es;
  const uint64_t t0 = op.timed ? util::now_ns() : 0;
  // (In place with plain stores whichever stores staged the data:
  // combining in scratch and streaming the slice out measured no faster;
  // docs/messaging.md, "Why these paths".)
  for (uint32_t j = 0; j < n; ++j)
    if (j != me && cnt) combine(r.type, r.rop, acc, t.slot[j]->stage + lo * es, cnt);
  if (node::is_root(r, me) && cnt) std::memcpy(r.dst + lo * es, acc, cnt * es);
  if (op.timed) op.busy_ns += util::now_ns() - t0;
  publish(t, true, 2 * op.seq + 2);
  op.stage = 2;
  return true;
}

bool NodeColl::copy_staged_slices(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  const std::size_t es = node::elem_size(r);
  if (!node::is_root(r, me)) return true;
  for (; op.peer < n; ++op.peer) {
    const uint32_t j = op.peer;
    if (j == me) continue;
    if (!wait_for(t, op, j, true, 2 * op.seq + 2)) return false;
    std::size_t lo = 0, cnt = 0;
    node::slice_of(j, n, r.count, lo, cnt);
    const uint64_t t0 = op.timed ? util::now_ns() : 0;
    if (cnt) std::memcpy(r.dst + lo * es, t.slot[j]->stage + lo * es, cnt * es);
    if (op.timed) op.busy_ns += util::now_ns() - t0;
  }
  return true;
}

void NodeColl::finish_staged(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const std::size_t len = data_len(r, t.n);
  if (op.timed && len) {
    SlotArea& mine = *t.slot[t.me];
    record_stage_cost(mine.stage_cost[stage_size_class(len)][static_cast<unsigned>(r.kind)][op.stream],
                      op.busy_ns * (uint64_t{1} << 20) / len);
  }
  publish(t, false, op.seq + 1);
}

}  // namespace tsu::coll
