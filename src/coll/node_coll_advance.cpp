// NodeColl's flags and the steps of an op that moves its data through the
// slots (small: a tiny line or the data ring) or reads it out of the peers'
// user buffers by Cross Memory Attach (large, beyond the stages).  The staged
// route is node_coll_staged.cpp's.
#include <algorithm>
#include <cstring>

#include "coll/node_coll.hpp"
#include "coll/node_coll_ops.hpp"
#include "coll/reduce_ops.hpp"
#include "core/log.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"

namespace tsu::coll {

using node::SlotArea;

namespace {
using K = NodeColl::Kind;

// Large reductions read a peer's slice a chunk at a time: the chunk stays in
// cache between the cross-memory read and the combine.
constexpr std::size_t kChunkBytes = 64u << 10;
constexpr std::size_t kCmaPiece = 256u << 10;

// PREFETCHW (a no-op on x86 CPUs without it; GCC's __builtin_prefetch
// emits it only where the target flags enable it).
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}
}  // namespace

// ---- Flags ------------------------------------------------------------------

void NodeColl::publish(Team& t, bool ready, uint64_t count) noexcept {
  SlotArea& mine = *t.slot[t.me];
  // seq_cst: the store half of the sleep handshake (idle() loads seq_cst
  // after the peer's engine published "asleep"; notify_peer reads that).
  store_flag(ready ? mine.ready : mine.done, node::flag_value(t.tag, count));
  if (!notify_) return;
  for (uint32_t j = 0; j < t.n; ++j)
    if (j != t.me) {
      transport::MemoryAccess* tr = rt_.memory_access(t.ranks[j]);
      if (tr) tr->notify_peer(t.ranks[j]);
    }
}

bool NodeColl::wait_for(Team& t, Op& op, uint32_t j, bool ready, uint64_t count) noexcept {
  // Counts only grow: one seen is still reached (and its acquire load
  // already ordered the reads that depend on it).
  uint64_t& seen = ready ? t.seen_ready[j] : t.seen_done[j];
  if (seen >= count) return true;
  const std::atomic<uint64_t>& line = ready ? t.slot[j]->ready : t.slot[j]->done;
  return wait_line(t, op, line, count, &seen);
}

bool NodeColl::wait_line(Team& t, Op& op, const std::atomic<uint64_t>& line, uint64_t count,
                         uint64_t* seen) noexcept {
  // acquire: what the owner wrote before the flag (data, pub) is visible.
  const uint64_t v = line.load(std::memory_order_acquire);
  if (node::reached(v, t.tag, count)) {
    if (seen) *seen = v & node::kCountMask;
    return true;
  }
  op.wait_line = &line;
  op.wait_count = count;
  return false;
}

bool NodeColl::wait_all(Team& t, Op& op, bool ready, uint64_t count, int64_t only) noexcept {
  for (uint32_t j = 0; j < t.n; ++j)
    if (j != t.me && (only < 0 || j == only) && !wait_for(t, op, j, ready, count)) return false;
  return true;
}

tsu_status_t NodeColl::read_peer(Team& t, uint32_t j, uint64_t addr, std::byte* to,
                                 std::size_t n) noexcept {
  if (!n) return TSU_OK;
  const uint32_t rank = t.ranks[j];
  transport::MemoryAccess* tr = rt_.memory_access(rank);
  tsu_status_t st = TSU_OK;
  // In pieces: one large process_vm_readv pins every page of both ranges at
  // once and runs out of cache (measured: slower than 256 KiB pieces).
  for (std::size_t off = 0; off < n && st == TSU_OK; off += kCmaPiece) {
    const std::size_t m = std::min(kCmaPiece, n - off);
    transport::Access from;
    st = tr ? tr->resolve_process_memory(rank, addr + off, m, from) : TSU_ERR_UNREACHABLE;
    if (st == TSU_OK)
      st = rt_.copy_access(transport::Access{transport::Access::kDirect, to + off, 0, 0}, from, m);
  }
  if (st != TSU_OK)
    TSU_LOG_ERROR("collective: reading rank %u's buffer failed: %s", rank, tsu_strerror(st));
  return st;
}

// ---- The collectives ----------------------------------------------------------

void NodeColl::reduce_slice(Team& t, Op& op, std::byte* acc) noexcept {
  const Request& r = op.r;
  const std::size_t es = dtype_size(r.type);
  const uint32_t p = static_cast<uint32_t>(op.seq % node::kDepth);
  std::size_t lo = 0, len = 0;
  node::slice_of(t.me, t.n, r.count, lo, len);
  const std::size_t bytes = len * es;
  if (!bytes) return;
  if (acc != r.src + lo * es) std::memmove(acc, r.src + lo * es, bytes);
  op.chunk.resize(std::min(bytes, kChunkBytes));
  for (std::size_t off = 0; off < bytes; off += kChunkBytes) {
    const std::size_t m = std::min(kChunkBytes, bytes - off);
    for (uint32_t j = 0; j < t.n; ++j) {
      if (j == t.me) continue;
      const tsu_status_t st = read_peer(t, j, t.slot[j]->pub[p].src + lo * es + off, op.chunk.data(), m);
      if (st != TSU_OK) {
        if (op.status == TSU_OK) op.status = st;
        return;
      }
      combine(r.type, r.rop, acc + off, op.chunk.data(), m / es);
    }
  }
}

// Small data through the slots (a tiny line or the data ring), large data
// read out of the peers' user buffers.  Stages: 0 publish this rank's
// inputs, 1 read the peers' inputs, 2 large reductions: copy the peers'
// reduced slices, 3 say done, then wait until no peer reads this rank's
// buffers.
bool NodeColl::advance(Team& t, Op& op) noexcept {
  if (op.staged) return advance_staged(t, op);
  const uint64_t s = op.seq;
  for (;;) {
    op.wait_line = nullptr;
    switch (op.stage) {
      case 0:  // publish this rank's inputs
        if (!publish_inputs(t, op)) return false;
        publish(t, true, 2 * s + 1);
        op.stage = 1;
        break;
      case 1:  // read the peers' inputs (it picks the next stage)
        if (!read_inputs(t, op)) return false;
        break;
      case 2:  // large reductions: copy the peers' reduced slices
        if (!copy_reduced_slices(t, op)) return false;
        op.stage = 3;
        break;
      case 3:  // this rank reads nothing of s any more (said where peers wait for it)
        if (op.done_read) publish(t, false, s + 1);
        op.stage = 4;
        break;
      default:  // peers reading this rank's buffers are through
        return !op.exposes || wait_all(t, op, false, s + 1);
    }
  }
}

// Where member j's small inputs of op are, and waiting for them.
const std::byte* NodeColl::small_input(Team& t, const Op& op, uint32_t j) noexcept {
  const uint32_t tb = static_cast<uint32_t>(op.seq % node::kTinyDepth);
  return op.tiny ? t.slot[j]->tiny[tb].data : t.slot[j]->data + op.ring_off;
}

bool NodeColl::wait_small_input(Team& t, Op& op, uint32_t j) noexcept {
  const uint64_t s = op.seq;
  const uint32_t tb = static_cast<uint32_t>(s % node::kTinyDepth);
  return op.tiny ? wait_line(t, op, t.slot[j]->tiny[tb].seq, s + 1, nullptr)
                 : wait_for(t, op, j, true, 2 * s + 1);
}

bool NodeColl::wait_small_inputs(Team& t, Op& op) noexcept {
  for (uint32_t j = 0; j < t.n; ++j)
    if (j != t.me && !wait_small_input(t, op, j)) return false;
  return true;
}

// Publishes len bytes of small inputs (tiny: data, then its line's flag).
void NodeColl::put_small(Team& t, Op& op, const std::byte* from, std::size_t len) noexcept {
  SlotArea& mine = *t.slot[t.me];
  const uint32_t tb = static_cast<uint32_t>(op.seq % node::kTinyDepth);
  std::byte* to = op.tiny ? mine.tiny[tb].data : mine.data + op.ring_off;
  if (len) std::memcpy(to, from, len);
  if (!op.tiny) {
    // (As below for the tiny lines: the ring's next bytes, the next op's
    // first line where it fits after this one.)
    const std::size_t next = op.ring_off + (len + node::kRingUnit - 1) / node::kRingUnit * node::kRingUnit;
    prefetch_for_write(mine.data + (next < node::kRingBytes ? next : 0));
    return;
  }
  store_flag(mine.tiny[tb].seq, node::flag_value(t.tag, op.seq + 1));
  // Own the next line before writing it: readers left it shared, and
  // taking it back now (not at the store, where the next locked
  // instruction would wait for it) keeps that off the next op's path.
  prefetch_for_write(&mine.tiny[(tb + 1) % node::kTinyDepth]);
}

bool NodeColl::publish_inputs(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  const uint64_t s = op.seq;
  const uint32_t p = static_cast<uint32_t>(s % node::kDepth);
  // Before overwriting buffer p (tiny line tb): every peer completed
  // s - depth (node_area.hpp).
  // (Small data: its ring bytes' previous user, found by start().)
  const uint64_t depth = op.tiny ? node::kTinyDepth : node::kDepth;
  const uint64_t reuse = op.small && !op.tiny ? op.ring_reuse : s >= depth ? 2 * (s - depth + 1) + 1 : 0;
  SlotArea& mine = *t.slot[me];
  bool writes = true;
  switch (r.kind) {
    case K::kBarrier:  // a flag in a tiny line, like any tiny collective
      if (reuse && !wait_all(t, op, true, reuse)) return false;
      put_small(t, op, nullptr, 0);
      break;
    case K::kBroadcast:
    case K::kScatter: {
      writes = me == r.root;
      if (writes && reuse && !wait_all(t, op, true, reuse)) return false;
      if (!writes) break;
      const bool bc = r.kind == K::kBroadcast;
      const std::byte* from = bc ? r.dst : r.src;
      if (op.small) {
        put_small(t, op, from, bc ? r.bytes : r.bytes * n);
      } else {
        mine.pub[p] = node::Published{reinterpret_cast<uint64_t>(from), 0};
      }
      break;
    }
    case K::kReduce:
    case K::kAllreduce:
    case K::kGather:
    case K::kAllgather:
    case K::kAlltoall: {
      // A small gather's root publishes no data: nobody reads it (it
      // copies its own block from src).  (A small reduce's root does:
      // it combines every input from the slots, its own included.)
      const bool is_root = node::is_root(r, me);
      const bool gather_root = r.kind == K::kGather && is_root;
      if (op.small && gather_root) break;
      if (reuse && !wait_all(t, op, true, reuse)) return false;
      const std::size_t len = r.kind == K::kAlltoall ? r.bytes * n : r.bytes;
      if (op.small) {
        put_small(t, op, r.src, len);
      } else {
        std::byte* slice_base = r.dst;
        if (r.kind == K::kReduce && !is_root) {
          const std::size_t es = node::elem_size(r);
          std::size_t lo = 0, cnt = 0;
          node::slice_of(me, n, r.count, lo, cnt);
          op.slice.resize(cnt * es);
          slice_base = op.slice.data() - lo * es;  // address arithmetic only
        }
        mine.pub[p] = node::Published{reinterpret_cast<uint64_t>(r.src),
                                      reinterpret_cast<uint64_t>(slice_base)};
      }
      break;
    }
  }
  return true;
}

bool NodeColl::read_inputs(Team& t, Op& op) noexcept {
  switch (op.r.kind) {
    case K::kBarrier:
      if (!wait_small_inputs(t, op)) return false;
      break;
    case K::kBroadcast:
    case K::kScatter:
      if (!read_from_root(t, op)) return false;
      break;
    case K::kReduce:
    case K::kAllreduce:
      if (!op.small) return reduce_own_slice(t, op);
      if (!combine_small_inputs(t, op)) return false;
      break;
    case K::kGather:
    case K::kAllgather:
    case K::kAlltoall:
      if (!read_blocks(t, op)) return false;
      break;
  }
  op.stage = 3;
  return true;
}

bool NodeColl::read_from_root(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t me = t.me;
  const uint32_t p = static_cast<uint32_t>(op.seq % node::kDepth);
  const uint64_t in = 2 * op.seq + 1;
  if (r.kind == K::kBroadcast) {
    if (me == r.root) return true;
    if (op.small) {
      if (!wait_small_input(t, op, r.root)) return false;
      if (r.bytes) std::memcpy(r.dst, small_input(t, op, r.root), r.bytes);
    } else {
      if (!wait_for(t, op, r.root, true, in)) return false;
      node::keep_first_error(op, read_peer(t, r.root, t.slot[r.root]->pub[p].src, r.dst, r.bytes));
    }
    return true;
  }
  const std::size_t off = std::size_t{me} * r.bytes;
  if (me == r.root) {
    if (r.bytes) std::memmove(r.dst, r.src + off, r.bytes);
  } else if (op.small) {
    if (!wait_small_input(t, op, r.root)) return false;
    if (r.bytes) std::memcpy(r.dst, small_input(t, op, r.root) + off, r.bytes);
  } else {
    if (!wait_for(t, op, r.root, true, in)) return false;
    node::keep_first_error(op, read_peer(t, r.root, t.slot[r.root]->pub[p].src + off, r.dst,
                                         r.bytes));
  }
  return true;
}

bool NodeColl::reduce_own_slice(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint64_t s = op.seq;
  if (!wait_all(t, op, true, 2 * s + 1)) return false;
  const std::size_t es = node::elem_size(r);
  std::size_t lo = 0, cnt = 0;
  node::slice_of(t.me, t.n, r.count, lo, cnt);
  reduce_slice(t, op, node::is_root(r, t.me) ? r.dst + lo * es : op.slice.data());
  publish(t, true, 2 * s + 2);
  op.stage = 2;
  return true;
}

bool NodeColl::combine_small_inputs(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  if (!node::is_root(r, t.me)) return true;
  if (!wait_small_inputs(t, op)) return false;
  // Team-rank order on every member: bit-identical results.
  if (r.bytes) {
    std::memcpy(r.dst, small_input(t, op, 0), r.bytes);
    for (uint32_t j = 1; j < t.n; ++j)
      combine(r.type, r.rop, r.dst, small_input(t, op, j), r.count);
  }
  return true;
}

bool NodeColl::read_blocks(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  const uint32_t p = static_cast<uint32_t>(op.seq % node::kDepth);
  const uint64_t in = 2 * op.seq + 1;
  if (!node::is_root(r, me)) return true;
  // Each peer's block as soon as that peer has published it (not
  // after all of them): op.peer keeps the place across calls.
  // Staggered, own block first (see advance_staged).
  for (; op.peer < n; ++op.peer) {
    const uint32_t j = (me + op.peer) % n;
    std::byte* to = r.dst + std::size_t{j} * r.bytes;
    const std::size_t from_off = r.kind == K::kAlltoall ? std::size_t{me} * r.bytes : 0;
    if (j == me) {
      if (r.bytes) std::memmove(to, r.src + from_off, r.bytes);
    } else if (op.small) {
      if (!wait_small_input(t, op, j)) return false;
      if (r.bytes) std::memcpy(to, small_input(t, op, j) + from_off, r.bytes);
    } else {
      if (!wait_for(t, op, j, true, in)) return false;
      node::keep_first_error(op, read_peer(t, j, t.slot[j]->pub[p].src + from_off, to, r.bytes));
    }
  }
  return true;
}

bool NodeColl::copy_reduced_slices(Team& t, Op& op) noexcept {
  const Request& r = op.r;
  const uint64_t s = op.seq;
  const uint32_t p = static_cast<uint32_t>(s % node::kDepth);
  if (!node::is_root(r, t.me)) return true;
  if (!wait_all(t, op, true, 2 * s + 2)) return false;
  const std::size_t es = node::elem_size(r);
  for (uint32_t j = 0; j < t.n; ++j) {
    if (j == t.me) continue;
    std::size_t lo = 0, cnt = 0;
    node::slice_of(j, t.n, r.count, lo, cnt);
    node::keep_first_error(
        op, read_peer(t, j, t.slot[j]->pub[p].dst + lo * es, r.dst + lo * es, cnt * es));
  }
  return true;
}

}  // namespace tsu::coll
