// NodeColl's teams and its ops' lives: teams added and freed, collectives
// started (their route chosen: tiny, small, CMA or staged), driven in order
// and failed when a member is lost.  The ops' steps live in
// node_coll_advance.cpp and node_coll_staged.cpp.
#include "coll/node_coll.hpp"

#include <algorithm>
#include <cstdio>

#include "coll/node_coll_ops.hpp"
#include "coll/stage_store_choice.hpp"
#include "core/log.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"

namespace tsu::coll {

using node::SlotArea;

namespace {
uint32_t tag_of(uint64_t ctx) noexcept {  // 24 bits, never 0 (a fresh area's value)
  ctx ^= ctx >> 29;
  ctx *= 0xbf58476d1ce4e5b9ull;
  ctx ^= ctx >> 32;
  return static_cast<uint32_t>(ctx % 0xffffffu) + 1;
}
}  // namespace

NodeColl::NodeColl(runtime::Runtime& rt, uint32_t area_id)
    : rt_(rt),
      area_id_(area_id),
      notify_(!rt.manual_progress()) {
  std::size_t size = 0;
  std::byte* slice = rt.layer_area(area_id, size);  // (sets size: not in one expression)
  mine_ = node::slots_of(slice, size);
}

std::size_t NodeColl::area_bytes() noexcept { return node::kAreaBytes; }

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
      std::size_t size = 0;
      std::byte* slice = rt_.peer_layer_area(r, area_id_, size);
      SlotArea* s = node::slots_of(slice, size);
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
  for (std::size_t i = 0; i < done.count; ++i) runtime::run_callback(done.items[i].cb, done.items[i].status);
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
      static_cast<node::OpState&>(*op) = node::OpState{};
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
    // of what would be staged, so one CMA copy beats copying everything in).
    // A gather is staged at every size too: the peers stage in parallel and
    // the root's copies out follow them chunk by chunk, where CMA reads of
    // the blocks run one after the other at about half memcpy's speed
    // (docs/messaging.md, "Why these paths").  An alltoall is staged while
    // the n - 1 blocks its peers read fit, packed.
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

std::size_t NodeColl::drive_teams() noexcept {
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
