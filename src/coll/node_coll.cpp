#include "coll/node_coll.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "coll/reduce_ops.hpp"
#include "coll/stage_store_choice.hpp"
#include "coll/stream_copy.hpp"
#include "core/log.hpp"
#include "runtime/runtime.hpp"
#include "util/clock.hpp"
#include "transport/transport.hpp"

namespace tsu::coll {

using node::SlotArea;

namespace {
// Large reductions read a peer's slice a chunk at a time: the chunk stays in
// cache between the cross-memory read and the combine.
constexpr std::size_t kChunkBytes = 64u << 10;
constexpr std::size_t kCmaPiece = 256u << 10;

// Member j's slice of `count` elements: [lo, lo + len).
void slice_of(uint32_t j, uint32_t n, std::size_t count, std::size_t& lo, std::size_t& len) {
  const std::size_t base = count / n, extra = count % n;
  lo = j * base + std::min<std::size_t>(j, extra);
  len = base + (j < extra ? 1 : 0);
}

// PREFETCHW (a no-op on x86 CPUs without it; GCC's __builtin_prefetch
// emits it only where the target flags enable it).
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

uint32_t tag_of(uint64_t ctx) noexcept {  // 24 bits, never 0 (a fresh area's value)
  ctx ^= ctx >> 29;
  ctx *= 0xbf58476d1ce4e5b9ull;
  ctx ^= ctx >> 32;
  return static_cast<uint32_t>(ctx % 0xffffffu) + 1;
}
}  // namespace

struct NodeColl::Team {
  std::vector<uint32_t> ranks;         // job ranks by team rank
  std::vector<SlotArea*> slot;         // member j's slot, mapped here
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

namespace {
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
}  // namespace

struct NodeColl::Op : OpState {
  Request r;
  ScratchBuffer chunk;  // large reductions: a peer's chunk
  ScratchBuffer slice;  // large reduce, non-root: its reduced slice
};

NodeColl::NodeColl(core::Runtime& rt)
    : rt_(rt),
      notify_(!rt.manual_progress()) {
  std::size_t size = 0;
  std::byte* area = rt.layer_area(size);  // (sets size: not in one expression)
  mine_ = node::slots_of(area, size);
}

NodeColl::~NodeColl() = default;

uint32_t NodeColl::free_slots() const noexcept {
  std::lock_guard lock(mu_);
  if (!mine_) return 0;
  return ~used_ & ((node::kSlots >= 32) ? ~0u : ((1u << node::kSlots) - 1));
}

int32_t NodeColl::add_team(const std::vector<uint32_t>& members, uint32_t me, uint32_t slot,
                           uint64_t ctx) noexcept {
  if (!mine_ || slot >= node::kSlots) return -1;
  try {
    auto t = std::make_unique<Team>();
    t->ranks = members;
    t->me = me;
    t->n = static_cast<uint32_t>(members.size());
    t->tag = tag_of(ctx);
    t->seen_done.assign(t->n, 0);
    t->seen_ready.assign(t->n, 0);
    for (uint32_t r : members) {
      transport::Transport* tr = rt_.route(r);
      std::size_t size = 0;
      std::byte* area = tr ? tr->peer_layer_area(r, size) : nullptr;
      SlotArea* s = node::slots_of(area, size);
      if (!s) return -1;
      t->slot.push_back(s + slot);
    }
    std::lock_guard lock(mu_);
    used_ |= 1u << slot;
    TSU_LOG_DEBUG("collectives: team ctx %llx of %u members through shared memory (slot %u)",
                  static_cast<unsigned long long>(ctx), t->n, slot);
    teams_.push_back(std::move(t));
    return static_cast<int32_t>(teams_.size() - 1);
  } catch (const std::bad_alloc&) {
    return -1;
  }
}

void NodeColl::free_team(int32_t handle) noexcept {
  std::lock_guard lock(mu_);
  if (handle >= 0 && static_cast<std::size_t>(handle) < teams_.size()) teams_[handle].reset();
}

// ---- Flags ------------------------------------------------------------------

void NodeColl::publish(Team& t, bool ready, uint64_t count) noexcept {
  SlotArea& mine = *t.slot[t.me];
  // seq_cst: the store half of the sleep handshake (idle() loads seq_cst
  // after the peer's engine published "asleep"; notify_peer reads that).
  store_flag(ready ? mine.ready : mine.done, node::flag_value(t.tag, count));
  if (!notify_) return;
  for (uint32_t j = 0; j < t.n; ++j)
    if (j != t.me) {
      transport::Transport* tr = rt_.route(t.ranks[j]);
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
  transport::Transport* tr = rt_.route(rank);
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
  slice_of(t.me, t.n, r.count, lo, len);
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

// Large data through the stages (node_area.hpp).  Stages: 0 stage this
// member's data, 1 copy (or combine) the peers' data, 2 reductions: copy the
// peers' slices, 3 say done.
bool NodeColl::advance_staged(Team& t, Op& op) noexcept {
  using K = Kind;
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  const uint64_t s = op.seq;
  SlotArea& mine = *t.slot[me];
  const bool reduction = r.kind == K::kReduce || r.kind == K::kAllreduce;
  const bool all = r.kind == K::kAllreduce || r.kind == K::kAllgather || r.kind == K::kAlltoall;
  const bool is_root = all || r.root == me;
  const std::size_t es = reduction ? dtype_size(r.type) : 1;
  const std::size_t len = r.kind == K::kAlltoall ? r.bytes * n : r.bytes;
  const bool timed = op.timed;
  // A reduce of two members: the root combines the peer's data into dst
  // chunk by chunk as the peer stages it, and stages nothing itself.  (The
  // slice scheme below would stage both inputs whole, combine half on each
  // side, then copy the peer's half: 3 passes over the data on the root's
  // path instead of one; 16-core machine, 2 ranks, 1 MiB: 230 us against
  // Open MPI's 167, docs/benchmarks-coll.md.)
  const bool pair_reduce = r.kind == K::kReduce && n == 2;
  auto chunks_for = [](std::size_t bytes) { return (bytes + node::kStageChunk - 1) / node::kStageChunk; };
  // Waits until member j staged its first `bytes` bytes of s.
  auto wait_staged = [&](uint32_t j, std::size_t bytes) {
    return wait_line(t, op, t.slot[j]->staged, s * node::kStagedPerOp + chunks_for(bytes), nullptr);
  };
  // Copies member j's staged [from, from + m) to `to` as it gets staged
  // (op.copied: progress, kept across calls).
  auto copy_out = [&](uint32_t j, std::size_t from, std::byte* to, std::size_t m) {
    while (op.copied < m) {
      const std::size_t piece = std::min(node::kStageChunk, m - op.copied);
      if (!wait_staged(j, from + op.copied + piece)) return false;
      const uint64_t t0 = timed ? util::now_ns() : 0;
      std::memcpy(to + op.copied, t.slot[j]->stage + from + op.copied, piece);
      if (timed) op.busy_ns += util::now_ns() - t0;
      op.copied += piece;
    }
    op.copied = 0;
    return true;
  };
  for (;;) {
    op.wait_line = nullptr;
    switch (op.stage) {
      case 0: {  // stage this member's data
        // Only what peers read: a broadcast's root and a gather's peers
        // stage; an alltoall member stages every block but its own (it
        // copies that one from src).  Chunks are counted in address order
        // all the same (readers wait for the count that covers their bytes).
        const bool writes = r.kind == K::kBroadcast ? me == r.root
                            : r.kind == K::kGather || pair_reduce ? me != r.root
                                                                  : true;
        if (writes) {
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
          const uint64_t t0 = timed ? util::now_ns() : 0;
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
          if (timed) op.busy_ns += util::now_ns() - t0;
        }
        publish(t, true, 2 * s + 1);
        op.stage = 1;
        break;
      }
      case 1: {  // the peers' data
        switch (r.kind) {
          case K::kBarrier:
          case K::kScatter:  // (never staged)
            break;
          case K::kBroadcast:
            if (me != r.root && !copy_out(r.root, 0, r.dst, r.bytes)) return false;
            break;
          case K::kGather:
          case K::kAllgather:
          case K::kAlltoall:
            if (!is_root) break;
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
              } else if (!copy_out(j, from, to, r.bytes)) {
                return false;
              }
            }
            break;
          case K::kReduce:
          case K::kAllreduce: {
            if (pair_reduce) {
              if (!is_root) break;
              const uint32_t j = 1 - me;
              // op.copied: bytes combined so far (kept across calls).
              while (op.copied < len) {
                const std::size_t piece = std::min(node::kStageChunk, len - op.copied);
                if (!wait_staged(j, op.copied + piece)) return false;
                const uint64_t t0 = timed ? util::now_ns() : 0;
                // One pass: dst = src op the peer's chunk (dst may be src).
                combine_into(r.type, r.rop, r.dst + op.copied, r.src + op.copied,
                             t.slot[j]->stage + op.copied, piece / es);
                if (timed) op.busy_ns += util::now_ns() - t0;
                op.copied += piece;
              }
              op.copied = 0;
              break;
            }
            for (uint32_t j = 0; j < n; ++j)
              if (j != me && !wait_staged(j, len)) return false;
            // Slice `me`, combined in place in this member's stage, straight
            // out of the peers' stages; every element by one member only.
            std::size_t lo = 0, cnt = 0;
            slice_of(me, n, r.count, lo, cnt);
            std::byte* acc = mine.stage + lo * es;
            const uint64_t t0 = timed ? util::now_ns() : 0;
            // (In place with plain stores whichever stores staged the data:
            // combining in scratch and streaming the slice out measured no
            // faster, 2 ranks 1 MiB allreduce 217-302 us vs ~200.)
            for (uint32_t j = 0; j < n; ++j)
              if (j != me && cnt) combine(r.type, r.rop, acc, t.slot[j]->stage + lo * es, cnt);
            if (is_root && cnt) std::memcpy(r.dst + lo * es, acc, cnt * es);
            if (timed) op.busy_ns += util::now_ns() - t0;
            publish(t, true, 2 * s + 2);
            op.stage = 2;
            continue;
          }
        }
        op.stage = 3;
        break;
      }
      case 2:  // reductions: the peers' slices
        if (is_root)
          for (; op.peer < n; ++op.peer) {
            const uint32_t j = op.peer;
            if (j == me) continue;
            if (!wait_for(t, op, j, true, 2 * s + 2)) return false;
            std::size_t lo = 0, cnt = 0;
            slice_of(j, n, r.count, lo, cnt);
            const uint64_t t0 = timed ? util::now_ns() : 0;
            if (cnt) std::memcpy(r.dst + lo * es, t.slot[j]->stage + lo * es, cnt * es);
            if (timed) op.busy_ns += util::now_ns() - t0;
          }
        op.stage = 3;
        break;
      default:  // this member reads no stage of s any more
        if (timed && len)
          record_stage_cost(mine.stage_cost[stage_size_class(len)][static_cast<unsigned>(r.kind)][op.stream],
                            op.busy_ns * (uint64_t{1} << 20) / len);
        publish(t, false, s + 1);
        return true;
    }
  }
}

bool NodeColl::advance(Team& t, Op& op) noexcept {
  if (op.staged) return advance_staged(t, op);
  using K = Kind;
  const Request& r = op.r;
  const uint32_t n = t.n, me = t.me;
  const uint64_t s = op.seq;
  const uint32_t p = static_cast<uint32_t>(s % node::kDepth);
  const uint32_t tb = static_cast<uint32_t>(s % node::kTinyDepth);
  // Before overwriting buffer p (tiny line tb): every peer completed
  // s - depth (node_area.hpp).
  // (Small data: its ring bytes' previous user, found by start().)
  const uint64_t depth = op.tiny ? node::kTinyDepth : node::kDepth;
  const uint64_t reuse = op.small && !op.tiny ? op.ring_reuse : s >= depth ? 2 * (s - depth + 1) + 1 : 0;
  SlotArea& mine = *t.slot[me];
  // Where member j's small inputs of s are, and waiting for them.
  auto input = [&](uint32_t j) -> const std::byte* {
    return op.tiny ? t.slot[j]->tiny[tb].data : t.slot[j]->data + op.ring_off;
  };
  auto wait_input = [&](uint32_t j) {
    return op.tiny ? wait_line(t, op, t.slot[j]->tiny[tb].seq, s + 1, nullptr)
                   : wait_for(t, op, j, true, 2 * s + 1);
  };
  auto wait_inputs = [&]() {
    for (uint32_t j = 0; j < n; ++j)
      if (j != me && !wait_input(j)) return false;
    return true;
  };
  // Publishes len bytes of small inputs (tiny: data, then its line's flag).
  auto put_small = [&](const std::byte* from, std::size_t len) {
    std::byte* to = op.tiny ? mine.tiny[tb].data : mine.data + op.ring_off;
    if (len) std::memcpy(to, from, len);
    if (!op.tiny) {
      // (As below for the tiny lines: the ring's next bytes, the next op's
      // first line where it fits after this one.)
      const std::size_t next = op.ring_off + (len + node::kRingUnit - 1) / node::kRingUnit * node::kRingUnit;
      prefetch_for_write(mine.data + (next < node::kRingBytes ? next : 0));
      return;
    }
    store_flag(mine.tiny[tb].seq, node::flag_value(t.tag, s + 1));
    // Own the next line before writing it: readers left it shared, and
    // taking it back now (not at the store, where the next locked
    // instruction would wait for it) keeps that off the next op's path.
    prefetch_for_write(&mine.tiny[(tb + 1) % node::kTinyDepth]);
  };
  const bool all = r.kind == K::kAllreduce || r.kind == K::kAllgather || r.kind == K::kAlltoall;
  const bool is_root = all || r.root == me;
  const std::size_t es = (r.kind == K::kReduce || r.kind == K::kAllreduce) ? dtype_size(r.type) : 1;
  auto fail = [&](tsu_status_t st) {
    if (st != TSU_OK && op.status == TSU_OK) op.status = st;
  };
  for (;;) {
    op.wait_line = nullptr;
    switch (op.stage) {
      case 0: {  // publish this rank's inputs
        bool writes = true;
        switch (r.kind) {
          case K::kBarrier:  // a flag in a tiny line, like any tiny collective
            if (reuse && !wait_all(t, op, true, reuse)) return false;
            put_small(nullptr, 0);
            break;
          case K::kBroadcast:
          case K::kScatter: {
            writes = me == r.root;
            if (writes && reuse && !wait_all(t, op, true, reuse)) return false;
            if (!writes) break;
            const bool bc = r.kind == K::kBroadcast;
            const std::byte* from = bc ? r.dst : r.src;
            if (op.small) {
              put_small(from, bc ? r.bytes : r.bytes * n);
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
            const bool gather_root = r.kind == K::kGather && is_root;
            if (op.small && gather_root) break;
            if (reuse && !wait_all(t, op, true, reuse)) return false;
            const std::size_t len = r.kind == K::kAlltoall ? r.bytes * n : r.bytes;
            if (op.small) {
              put_small(r.src, len);
            } else {
              std::byte* slice_base = r.dst;
              if (r.kind == K::kReduce && !is_root) {
                std::size_t lo = 0, cnt = 0;
                slice_of(me, n, r.count, lo, cnt);
                op.slice.resize(cnt * es);
                slice_base = op.slice.data() - lo * es;  // address arithmetic only
              }
              mine.pub[p] = node::Published{reinterpret_cast<uint64_t>(r.src),
                                            reinterpret_cast<uint64_t>(slice_base)};
            }
            break;
          }
        }
        publish(t, true, 2 * s + 1);
        op.stage = 1;
        break;
      }
      case 1: {  // read the peers' inputs
        const uint64_t in = 2 * s + 1;
        switch (r.kind) {
          case K::kBarrier:
            if (!wait_inputs()) return false;
            break;
          case K::kBroadcast:
            if (me == r.root) break;
            if (op.small) {
              if (!wait_input(r.root)) return false;
              if (r.bytes) std::memcpy(r.dst, input(r.root), r.bytes);
            } else {
              if (!wait_for(t, op, r.root, true, in)) return false;
              fail(read_peer(t, r.root, t.slot[r.root]->pub[p].src, r.dst, r.bytes));
            }
            break;
          case K::kScatter: {
            const std::size_t off = std::size_t{me} * r.bytes;
            if (me == r.root) {
              if (r.bytes) std::memmove(r.dst, r.src + off, r.bytes);
            } else if (op.small) {
              if (!wait_input(r.root)) return false;
              if (r.bytes) std::memcpy(r.dst, input(r.root) + off, r.bytes);
            } else {
              if (!wait_for(t, op, r.root, true, in)) return false;
              fail(read_peer(t, r.root, t.slot[r.root]->pub[p].src + off, r.dst, r.bytes));
            }
            break;
          }
          case K::kReduce:
          case K::kAllreduce:
            if (!op.small) {
              if (!wait_all(t, op, true, in)) return false;
              std::size_t lo = 0, cnt = 0;
              slice_of(me, n, r.count, lo, cnt);
              reduce_slice(t, op, is_root ? r.dst + lo * es : op.slice.data());
              publish(t, true, 2 * s + 2);
              op.stage = 2;
              continue;
            }
            if (!is_root) break;
            if (!wait_inputs()) return false;
            // Team-rank order on every member: bit-identical results.
            if (r.bytes) {
              std::memcpy(r.dst, input(0), r.bytes);
              for (uint32_t j = 1; j < n; ++j) combine(r.type, r.rop, r.dst, input(j), r.count);
            }
            break;
          case K::kGather:
          case K::kAllgather:
          case K::kAlltoall: {
            if (!is_root) break;
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
                if (!wait_input(j)) return false;
                if (r.bytes) std::memcpy(to, input(j) + from_off, r.bytes);
              } else {
                if (!wait_for(t, op, j, true, in)) return false;
                fail(read_peer(t, j, t.slot[j]->pub[p].src + from_off, to, r.bytes));
              }
            }
            break;
          }
        }
        op.stage = 3;
        break;
      }
      case 2: {  // large reductions: copy the peers' reduced slices
        if (is_root) {
          if (!wait_all(t, op, true, 2 * s + 2)) return false;
          for (uint32_t j = 0; j < n; ++j) {
            if (j == me) continue;
            std::size_t lo = 0, cnt = 0;
            slice_of(j, n, r.count, lo, cnt);
            fail(read_peer(t, j, t.slot[j]->pub[p].dst + lo * es, r.dst + lo * es, cnt * es));
          }
        }
        op.stage = 3;
        break;
      }
      case 3:  // this rank reads nothing of s any more (said where peers wait for it)
        if (op.done_read) publish(t, false, s + 1);
        op.stage = 4;
        break;
      default:  // peers reading this rank's buffers are through
        return !op.exposes || wait_all(t, op, false, s + 1);
    }
  }
}

std::size_t NodeColl::drive(Team& t, Completed& done) noexcept {
  std::size_t work = 0;
  while (!t.queue.empty() && done.count < done.items.size()) {
    Op& head = *t.queue.front();
    const int before = head.stage;
    if (!advance(t, head)) {
      if (head.stage != before) ++work;
      break;
    }
    ++work;
    done.items[done.count++] = {head.r.cb, head.status};
    // (mu_ held by every writer: no locked read-modify-write needed.)
    pending_.store(pending_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    if (head.chunk.capacity()) pool_.give(std::move(head.chunk));
    if (head.slice.capacity()) pool_.give(std::move(head.slice));
    if (free_ops_.size() < kKeptOps) free_ops_.push_back(std::move(t.queue.front()));
    t.queue.pop_front();
  }
  return work;
}

void NodeColl::print_stats(uint32_t rank) const noexcept {
  std::lock_guard lock(mu_);
  std::fprintf(stderr,
               "tsunagi[%u] coll: node_staged=%llu node_staged_streamed=%llu node_stage_probes=%llu "
               "node_stage_switches=%llu\n",
               rank, static_cast<unsigned long long>(stage_stats_.staged),
               static_cast<unsigned long long>(stage_stats_.streamed),
               static_cast<unsigned long long>(stage_stats_.probes),
               static_cast<unsigned long long>(stage_stats_.switches));
}

void NodeColl::finish(const Completed& done) noexcept {
  for (std::size_t i = 0; i < done.count; ++i) core::run_callback(done.items[i].cb, done.items[i].status);
}

void NodeColl::start(int32_t handle, const Request& req) noexcept {
  Completed done;
  {
    std::lock_guard lock(mu_);
    Team& t = *teams_[handle];
    if (t.lost) {  // a member is gone: it can never complete
      done.items[done.count++] = {req.cb, TSU_ERR_PEER_LOST};
      goto finished;  // (after the lock is released)
    }
    std::unique_ptr<Op> op;
    if (free_ops_.empty()) {
      op = std::make_unique<Op>();
    } else {  // recycled: no allocation on the small-message path
      op = std::move(free_ops_.back());
      free_ops_.pop_back();
      static_cast<OpState&>(*op) = OpState{};
      // (drive() moved the scratch out: only a moved-from one holds a size.)
      if (op->chunk.capacity()) op->chunk = ScratchBuffer{};
      if (op->slice.capacity()) op->slice = ScratchBuffer{};
    }
    op->r = req;
    op->seq = t.next_seq++;
    const bool per_member = req.kind == Kind::kAlltoall || req.kind == Kind::kScatter;
    const std::size_t published = per_member ? req.bytes * t.n : req.bytes;
    op->small = published <= node::kDataBytes;
    op->tiny = published <= node::kTinyBytes;
    if (op->small && !op->tiny) {
      // Next bytes of the ring (wrapping to its start where they do not fit
      // before its end).  Before writing them, every peer must have completed
      // the last op that used any of them: ready >= 2(seq + 1) + 1.
      const std::size_t len = (published + node::kRingUnit - 1) / node::kRingUnit * node::kRingUnit;
      if (t.ring_head + len > node::kRingBytes) t.ring_head = 0;
      op->ring_off = t.ring_head;
      t.ring_head += len;
      uint64_t last = 0;  // seq + 1 of the previous user
      for (std::size_t u = op->ring_off / node::kRingUnit; u < t.ring_head / node::kRingUnit; ++u) {
        last = std::max(last, t.ring_last[u]);
        t.ring_last[u] = op->seq + 1;
      }
      op->ring_reuse = last ? 2 * last + 1 : 0;
    }
    const bool all = req.kind == Kind::kAllreduce || req.kind == Kind::kAllgather ||
                     req.kind == Kind::kAlltoall;
    const bool is_root = all || req.root == t.me;
    switch (req.kind) {
      case Kind::kBarrier: break;
      case Kind::kBroadcast:
      case Kind::kScatter: op->exposes = !op->small && is_root; break;
      case Kind::kGather: op->exposes = !op->small && !is_root; break;
      default: op->exposes = !op->small; break;
    }
    op->done_read = !op->small && req.kind != Kind::kBarrier;
    // Staged up to the stage's size, except a scatter (each reader wants 1/n
    // of what would be staged, so one CMA copy beats copying everything in;
    // measured on this 2-core machine).  A gather is staged at every size
    // too: the peers stage in parallel and the root's copies out follow
    // them chunk by chunk, where CMA reads of the blocks run one after the
    // other at about half memcpy's speed (1 MiB, quiet machine: 2 ranks 62-67
    // us staged vs 139-173 CMA, 4 ranks 187-237 vs 384-397).  An alltoall
    // is staged while the n - 1 blocks its peers read fit, packed
    // (docs/benchmarks-coll.md).
    const std::size_t staged_bytes = req.kind == Kind::kAlltoall ? req.bytes * (t.n - 1) : published;
    op->staged = !op->small && staged_bytes <= std::min(node::kStageBytes, rt_.config().coll_stage_max) &&
                 (!per_member || req.kind == Kind::kAlltoall);
    if (op->staged) {  // stages, not user buffers: nobody waits to complete
      op->exposes = false;
      op->stage_free = t.stage_free;
      t.stage_free = op->seq + 1;
      switch (rt_.config().coll_stage_stream) {
        case kStagePlain: break;
        case kStageStream: op->stream = true; break;
        default: {
          const uint64_t k = t.staged_ops++;
          const int probe = stage_probe(k);
          bool& last = t.streaming[stage_size_class(published)][static_cast<unsigned>(req.kind)];
          if (probe < 0) {
            const bool next = stage_stream_next(t.slot, stage_size_class(published),
                                                static_cast<unsigned>(req.kind), last);
            stage_stats_.switches += next != last;
            last = next;
          }
          op->stream = probe < 0 ? last : probe == 1;
          op->timed = probe >= 0 || stage_timed(k);
          stage_stats_.probes += probe >= 0;
        }
      }
      ++stage_stats_.staged;
      stage_stats_.streamed += op->stream;
    }
    if (!op->small && !op->staged) {  // scratch for large reductions
      op->chunk = pool_.take();
      op->slice = pool_.take();
    }
    t.queue.push_back(std::move(op));
    // Where engines sleep: seq_cst, before its first flag load (see idle()).
    // Else a plain increment (mu_ held by every writer).
    if (notify_)
      pending_.fetch_add(1, std::memory_order_seq_cst);
    else
      pending_.store(pending_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (t.queue.size() == 1) drive(t, done);
  }
finished:
  finish(done);
}

void NodeColl::on_peer_lost(uint32_t rank) noexcept {
  // Fails every queued collective of each team the rank belongs to, a batch
  // of callbacks at a time (run without mu_, like drive()'s).
  for (;;) {
    Completed done;
    {
      std::lock_guard lock(mu_);
      for (auto& t : teams_) {
        if (!t || std::find(t->ranks.begin(), t->ranks.end(), rank) == t->ranks.end()) continue;
        t->lost = true;
        while (!t->queue.empty() && done.count < done.items.size()) {
          done.items[done.count++] = {t->queue.front()->r.cb, TSU_ERR_PEER_LOST};
          pending_.store(pending_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
          t->queue.pop_front();  // its scratch goes with it (not back to the pool)
        }
      }
    }
    finish(done);
    if (done.count < done.items.size()) return;
  }
}

std::size_t NodeColl::poll() noexcept {
  if (!pending_.load(std::memory_order_relaxed)) return 0;
  Completed done;
  std::size_t work = 0;
  {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    for (auto& t : teams_)
      if (t && !t->queue.empty()) work += drive(*t, done);
  }
  finish(done);
  return work;
}

bool NodeColl::idle() const noexcept {
  if (!pending_.load(std::memory_order_seq_cst)) return true;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  for (const auto& t : teams_) {
    if (!t || t->queue.empty()) continue;
    const Op& head = *t->queue.front();
    // seq_cst: after the engine published "asleep" (see publish()).
    if (!head.wait_line ||
        node::reached(head.wait_line->load(std::memory_order_seq_cst), t->tag, head.wait_count))
      return false;
  }
  return true;
}

}  // namespace tsu::coll
