// The collective engine: running a collective's steps (sends, receives,
// the next round), the data handler, and failing collectives of a lost rank.
#include "coll/coll_layer.hpp"

#include <algorithm>
#include <cstring>

#include "am/am_layer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/trace.hpp"
#include "runtime/runtime.hpp"
#include "coll/coll_mix.hpp"

namespace tsu::coll {

using core::MessageHeader;

// Wire format of kHandlerCollData: args[0] team context, [1] op sequence,
// [2] round << 32 | sender's team rank, [3] byte offset; payload = fragment.
namespace {

// Timeline (docs/trace.md): a collective is an async span from its first
// step to its end, each step a span inside it, both keyed by trace_id(op).
constexpr core::trace::EventType kTraceCollBegin{"collective", "coll", 'b', {"team_size", "seq", nullptr}};
constexpr core::trace::EventType kTraceCollEnd{"collective", "coll", 'e', {"status", nullptr, nullptr}};
constexpr core::trace::EventType kTraceStepBegin{"step", "coll", 'b', {"step", "sends", "recvs"}};
constexpr core::trace::EventType kTraceStepEnd{"step", "coll", 'e', {nullptr, nullptr, nullptr}};

}  // namespace

// ---- Engine ---------------------------------------------------------------------

void CollLayer::send_data(Op& op, const Send& s) noexcept {
  const uint32_t dst = op.team->members[s.dst];
  const std::size_t max = std::max<std::size_t>(am_.max_payload(dst), 1);
  MessageHeader h{};
  h.handler = kHandlerCollData;
  h.args[0] = op.team->ctx;
  h.args[1] = op.seq;
  h.args[2] = (uint64_t{s.round} << 32) | op.team->me;
  std::size_t off = 0;
  do {
    const std::size_t n = std::min(max, s.len - off);
    h.args[3] = off;
    h.payload_len = static_cast<uint32_t>(n);
    const tsu_status_t st = am_.send_or_queue(dst, h, s.data + off);
    if (st != TSU_OK) TSU_LOG_ERROR("collective message to rank %u failed: %s", dst, tsu_strerror(st));
    off += n;
  } while (off < s.len);
}

bool CollLayer::advance(Op& op) noexcept {
  const uint64_t trace_id = mix(op.team->ctx) ^ op.seq;
  if (op.cur == 0 && !op.started)
    TSU_TRACE_NAMED(kTraceCollBegin, op.name, trace_id, op.team->members.size(), op.seq, 0);
  while (op.cur < op.steps.size()) {
    Step& s = op.steps[op.cur];
    if (!op.started) {
      op.started = true;
      TSU_TRACE_NAMED(kTraceStepBegin, nullptr, trace_id, op.cur, s.sends.size(), s.recvs.size());
      for (const Send& snd : s.sends) send_data(op, snd);
      for (Recv& r : s.recvs) {
        auto it = stash_.find(StashKey{op.team->ctx, op.seq, r.round, r.src});
        if (it == stash_.end()) {
          // Waiting on this member: make sure its death would be noticed
          // even if this rank never sent to it (PeerLoss::watch_peer),
          // until its message is here or the op ends (end_watch).
          const uint32_t from = op.team->members[r.src];
          if (rt_.route(from)) {
            rt_.watch_peer(from);
            r.watched = true;
          }
          continue;
        }
        const std::size_t n = std::min(it->second.data.size(), r.len);
        if (n) std::memcpy(r.buf, it->second.data.data(), n);
        r.got += it->second.got;
        r.any = true;
        pool_.give(std::move(it->second.data));
        stash_.erase(it);
      }
    }
    for (const Recv& r : s.recvs)
      if (!r.any || r.got < r.len) return false;
    end_watches(op);  // none left normally (on_data ended each as its data came)
    if (s.post) s.post();
    TSU_TRACE_NAMED(kTraceStepEnd, nullptr, trace_id, 0, 0, 0);
    ++op.cur;
    op.started = false;
  }
  if (op.finish) op.finish();
  TSU_TRACE_NAMED(kTraceCollEnd, op.name, trace_id, static_cast<int64_t>(op.status), 0, 0);
  return true;
}

void CollLayer::on_data(void* ctx, uint32_t, const MessageHeader& h,
                        const std::byte* payload) noexcept {
  auto* self = static_cast<CollLayer*>(ctx);
  const uint64_t tctx = h.args[0], seq = h.args[1];
  const auto round = static_cast<uint32_t>(h.args[2] >> 32);
  const auto src = static_cast<uint32_t>(h.args[2] & 0xffffffffu);
  const std::size_t off = h.args[3], n = h.payload_len;
  tsu_cb_t done{};
  tsu_status_t status = TSU_OK;
  bool finished = false;
  {
    std::lock_guard lock(self->mu_);
    auto it = self->active_.find(OpKey{tctx, seq});
    Recv* target = nullptr;
    if (it != self->active_.end() && it->second->started)
      for (Recv& r : it->second->steps[it->second->cur].recvs)
        if (r.src == src && r.round == round) target = &r;
    if (target) {
      if (off < target->len && n) std::memcpy(target->buf + off, payload, std::min(n, target->len - off));
      target->got += n;
      target->any = true;
      // This member's part is here: nothing waits on it for this step.
      if (target->got >= target->len) self->end_watch(*it->second, *target);
      if (self->advance(*it->second)) {
        done = it->second->cb;
        status = it->second->status;
        finished = true;
        self->retire(*it->second);
        self->active_.erase(it);
      }
    } else {
      auto [slot, fresh] = self->stash_.try_emplace(StashKey{tctx, seq, round, src});
      Stash& s = slot->second;
      if (fresh) s.data = self->pool_.take();
      if (s.data.size() < off + n) s.data.resize(off + n);
      if (n) std::memcpy(s.data.data() + off, payload, n);
      s.got += n;
    }
  }
  if (finished) runtime::run_callback(done, status);
}

void CollLayer::end_watch(const Op& op, Recv& r) noexcept {
  if (!r.watched) return;
  r.watched = false;
  const uint32_t from = op.team->members[r.src];
  rt_.unwatch_peer(from);
}

void CollLayer::end_watches(Op& op) noexcept {
  // Only the current step's receives can hold one: a step's watches end
  // before the next starts.
  if (op.cur < op.steps.size())
    for (Recv& r : op.steps[op.cur].recvs) end_watch(op, r);
}

void CollLayer::retire(Op& op) noexcept {
  pool_.give(std::move(op.tmp));
  pool_.give(std::move(op.tmp2));
}

bool CollLayer::has_lost_member(const Team& t) const noexcept {
  for (uint32_t r : lost_)
    if (std::find(t.members.begin(), t.members.end(), r) != t.members.end()) return true;
  return false;
}

void CollLayer::on_peer_lost(uint32_t rank) noexcept {
  std::vector<tsu_cb_t> failed;
  {
    std::lock_guard lock(mu_);
    try {
      lost_.push_back(rank);
      for (auto it = active_.begin(); it != active_.end();) {
        const std::vector<uint32_t>& m = it->second->team->members;
        if (std::find(m.begin(), m.end(), rank) != m.end()) {
          failed.push_back(it->second->cb);
          end_watches(*it->second);
          TSU_TRACE_NAMED(kTraceCollEnd, it->second->name, mix(it->second->team->ctx) ^ it->second->seq,
                          static_cast<int64_t>(TSU_ERR_PEER_LOST), 0, 0);
          it = active_.erase(it);
        } else {
          ++it;
        }
      }
    } catch (const std::bad_alloc&) {
      TSU_LOG_ERROR("collectives: out of memory while failing rank %u's collectives", rank);
    }
  }
  if (!failed.empty())
    TSU_LOG_WARN("rank %u lost: %zu collectives fail", rank, failed.size());
  for (const tsu_cb_t& cb : failed) runtime::run_callback(cb, TSU_ERR_PEER_LOST);
  node_.on_peer_lost(rank);  // a node peer: its teams' shared-memory collectives
}

tsu_status_t CollLayer::start(std::unique_ptr<Op> op) noexcept {
  tsu_cb_t cb{};
  tsu_status_t status = TSU_OK;
  bool finished = false;
  {
    std::lock_guard lock(mu_);
    op->seq = op->team->next_seq++;
    Op& ref = *op;
    if (has_lost_member(*ref.team)) {
      // A member is gone: the collective can never complete.
      cb = ref.cb;
      finished = true;
      status = TSU_ERR_PEER_LOST;
    } else if (advance(ref)) {
      cb = ref.cb;
      status = ref.status;
      finished = true;
      retire(ref);
    } else {
      active_.emplace(OpKey{ref.team->ctx, ref.seq}, std::move(op));
    }
  }
  if (finished) runtime::run_callback(cb, status);
  return TSU_OK;
}

}  // namespace tsu::coll
