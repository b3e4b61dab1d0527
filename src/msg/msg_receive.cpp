// MsgLayer's receiver: the posted queue (shared with node peers that fill
// it by single-copy eager) and its lock, matching against posted receives
// and unexpected messages, eager and RTS arrivals, recv, probe and cancel.
#include "msg/msg_layer.hpp"

#include <algorithm>
#include <cstring>

#include "am/am_layer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "msg/msg_records.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"

namespace tsu::msg {

using core::MessageHeader;
using transport::Access;

void MsgLayer::lock_queue(Filled& f) noexcept {
  util::Backoff b;
  for (;;) {
    switch (mine_.owner_lock()) {
      case PostedQueue::kTaken:
        return;
      case PostedQueue::kRecordWaits:
        // The pass's thread is the record's only reader: it owns the line
        // now (no sender takes a lock in state kFilled).
        if (runtime::in_consumer_pass()) {
          take_filled(f);
          return;
        }
        if (rt_.engine().progress()) continue;  // took it (manual progress)
        break;
      case PostedQueue::kBusy:
        break;
    }
    b.pause();
  }
}

void MsgLayer::unlock_queue(Filled& f) noexcept {
  mine_.unlock();
  if (f.l) {
    std::unique_ptr<Local> l = std::move(f.l);
    // Single-copy eager only fills a buffer the message fits in: never truncated.
    complete(*l, f.src, f.tag, f.len, TSU_OK);
  }
}

void MsgLayer::take_filled(Filled& f) noexcept {
  const uint32_t slot = mine_.filled_slot();
  // The sender removed the entry from order[] (so neither matching nor
  // cancel reaches it) but left it posted.  A record naming anything else
  // (a corrupt or buggy peer) is dropped, not followed.
  if (slot >= mine_.capacity() || mine_.entry(slot).state != kEntryPosted || !slots_[slot] ||
      mine_.filled_src() >= rt_.size() || mine_.filled_len() > slots_[slot]->cap) {
    TSU_LOG_ERROR("single-copy record for entry %u from rank %u does not match", slot,
                  mine_.filled_src());
    return;
  }
  f.l = std::move(slots_[slot]);
  f.src = mine_.filled_src();
  f.tag = mine_.filled_tag();
  f.len = mine_.filled_len();
  free_entry(slot);
}

// poll() found a record: one load of a line that stays in our cache until a
// sender takes it.  (In the progress pass only: the record's one reader.)
std::size_t MsgLayer::take_waiting_record() noexcept {
  if (core::kFaultInjection && test_defer_filled_.load(std::memory_order_relaxed)) return 0;
  Filled f;
  take_filled(f);
  unlock_queue(f);
  return 1;
}

bool MsgLayer::idle() const noexcept {
  return !sceager_ || !mine_.filled_pending(std::memory_order_seq_cst) ||
         (core::kFaultInjection && test_defer_filled_.load(std::memory_order_relaxed));
}

void MsgLayer::free_entry(uint32_t slot) noexcept {
  mine_.entry(slot).state = kEntryFree;
  slots_[slot].reset();
  free_slots_.push_back(static_cast<uint16_t>(slot));
  // Keep "every shared entry was posted before every overflow one".
  while (!overflow_.empty() && !free_slots_.empty()) {
    const uint16_t s = free_slots_.back();
    free_slots_.pop_back();
    post_entry(s, std::move(overflow_.front()));
    overflow_.pop_front();
  }
}

void MsgLayer::post_entry(uint16_t slot, std::unique_ptr<Local> l) noexcept {
  // Built in a local and stored whole: append() may copy it to the queue's
  // head, and a copy read back from field-by-field stores stalls the load.
  PostedFields f{};
  f.src = l->src;
  f.tag = l->tag;
  f.mask = l->mask;
  f.cap = static_cast<uint32_t>(std::min<std::size_t>(l->cap, UINT32_MAX));
  // With single-copy eager off here no sender may fill it (and progress
  // does not look for records).
  f.has_seg = sceager_ && l->seg >= 0;
  f.seg = f.has_seg ? static_cast<uint32_t>(l->seg) : 0;
  f.offset = l->offset;
  f.slot = slot;
  PostedEntry& e = mine_.entry(slot);
  e.state = kEntryPosted;
  e.f = f;
  slots_[slot] = std::move(l);
  mine_.append(f);
}

std::unique_ptr<MsgLayer::Local> MsgLayer::take_posted(uint32_t src, uint64_t tag) noexcept {
  for (uint32_t i = 0; i < mine_.count(); ++i) {
    const uint16_t s = mine_.order(i);
    const PostedFields& e = mine_.entry(s).f;
    if (!tag_matches(e.src, e.tag, e.mask, src, tag)) continue;
    mine_.remove_at(i);
    std::unique_ptr<Local> l = std::move(slots_[s]);
    free_entry(s);
    return l;
  }
  for (auto it = overflow_.begin(); it != overflow_.end(); ++it)
    if (tag_matches((*it)->src, (*it)->tag, (*it)->mask, src, tag)) {
      std::unique_ptr<Local> l = std::move(*it);
      overflow_.erase(it);
      return l;
    }
  return nullptr;
}

void MsgLayer::complete(Local& l, uint32_t src, uint64_t tag, std::size_t len,
                        tsu_status_t st) noexcept {
  if (l.watched) {
    // Matched, cancelled or failed: nothing waits on the source any more.
    l.watched = false;
    rt_.unwatch_peer(l.src);
  }
  if (l.status) *l.status = tsu_msg_status_t{src, st, tag, len};
  runtime::run_callback(l.cb, st);
}

void MsgLayer::on_eager(void* ctx, uint32_t src, const MessageHeader& h,
                        const std::byte* payload) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  const uint64_t tag = h.args[0];
  const std::size_t len = h.payload_len;
  Filled filled;
  self->lock_queue(filled);
  std::unique_ptr<Local> l = self->take_posted(src, tag);
  if (!l) {
    auto u = std::unique_ptr<Unexpected>(new Unexpected{src, tag, len, false, 0, 0, 0, {}});
    u->data.assign(payload, payload + len);
    self->unexpected_.push_back(std::move(u));
    self->counters_.unexpected.fetch_add(1, std::memory_order_relaxed);
  }
  self->count_processed(src);
  self->unlock_queue(filled);
  if (!l) return;
  const std::size_t n = std::min(len, l->cap);
  if (n) std::memcpy(l->buf, payload, n);
  self->complete(*l, src, tag, len, len > l->cap ? TSU_ERR_TRUNCATED : TSU_OK);
}

void MsgLayer::on_rts(void* ctx, uint32_t src, const MessageHeader& h, const std::byte*) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  const uint64_t tag = h.args[0];
  Filled filled;
  self->lock_queue(filled);
  std::unique_ptr<Local> l = self->take_posted(src, tag);
  if (!l) {
    self->unexpected_.push_back(std::unique_ptr<Unexpected>(
        new Unexpected{src, tag, h.args[1], true, h.flags, h.args[2], h.args[3], {}}));
    self->counters_.unexpected.fetch_add(1, std::memory_order_relaxed);
  }
  self->count_processed(src);
  self->unlock_queue(filled);
  if (l) self->pull(std::move(l), src, tag, h.args[1], h.flags, h.args[2], h.args[3]);
}

void MsgLayer::on_sc_poke(void* ctx, uint32_t, const MessageHeader&, const std::byte*) noexcept {
  static_cast<MsgLayer*>(ctx)->poll();
}

bool MsgLayer::source_lost(uint32_t src) const noexcept {
  if (src >= rt_.size()) return false;
  return rt_.peer_lost(src);
}

tsu_status_t MsgLayer::recv(uint32_t src, uint64_t tag, uint64_t mask, void* buf, std::size_t cap,
                            tsu_msg_status_t* status, const tsu_cb_t& cb,
                            tsu_recv_t* handle) noexcept {
  if (cap && !buf) return core::fail(TSU_ERR_NULL_POINTER, "tsu_try_recv: buf is NULL");
  if (src != TSU_ANY_SOURCE && src >= rt_.size())
    return core::fail(TSU_ERR_BAD_RANK, "tsu_try_recv: rank %u >= job size %u", src, rt_.size());
  auto l = std::unique_ptr<Local>(
      new (std::nothrow) Local{0, src, tag, mask, buf, cap, status, cb, -1, 0, false});
  if (!l) return core::fail(TSU_ERR_NO_MEMORY, "tsu_try_recv: out of memory");
  // A buffer in one of our shared segments can be filled by a node peer
  // directly (single-copy eager), if it can hold a message that goes that
  // way: smaller ones skip the segment lookup (a lock and a tree search).
  tsu_seg_t seg;
  uint64_t offset;
  std::byte* p;
  uint32_t state = 0;
  if (sceager_ && cap && cap >= sceager_min_ && rt_.segments().find(buf, seg, offset) &&
      rt_.segments().translate(seg, offset, cap, p, &state) == TSU_OK &&
      core::slot_state_shared(state)) {
    l->seg = static_cast<int64_t>(seg);
    l->offset = offset;
  }
  Filled filled;
  lock_queue(filled);
  l->id = next_id_++;
  if (handle) *handle = l->id;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!tag_matches(src, tag, mask, (*it)->src, (*it)->tag)) continue;
    std::unique_ptr<Unexpected> u = std::move(*it);
    unexpected_.erase(it);
    unlock_queue(filled);
    if (u->rndv) {
      pull(std::move(l), u->src, u->tag, u->len, u->flags, u->addr, u->cookie);
    } else {
      const std::size_t n = std::min(u->len, cap);
      if (n) std::memcpy(buf, u->data.data(), n);
      complete(*l, u->src, u->tag, u->len, u->len > cap ? TSU_ERR_TRUNCATED : TSU_OK);
    }
    return TSU_OK;
  }
  // Nothing more will come from a lost source (checked under the lock, so a
  // receive either sees the loss here or is found by on_peer_lost).
  if (src != TSU_ANY_SOURCE && source_lost(src)) {
    unlock_queue(filled);
    complete(*l, src, tag, 0, TSU_ERR_PEER_LOST);
    return TSU_OK;
  }
  // A receive posted for one source that may never have heard from us: have
  // its transport watch it, so its death fails this receive (watch_peer),
  // until complete() ends the watch.  Before the receive is posted: once it
  // is, another thread may match and complete it.
  if (src != TSU_ANY_SOURCE)
    if (rt_.route(src)) {
      rt_.watch_peer(src);
      l->watched = true;
    }
  if (!free_slots_.empty() && overflow_.empty()) {
    const uint16_t s = free_slots_.back();
    free_slots_.pop_back();
    post_entry(s, std::move(l));
  } else {
    overflow_.push_back(std::move(l));
  }
  unlock_queue(filled);
  return TSU_OK;
}

tsu_status_t MsgLayer::probe(uint32_t src, uint64_t tag, uint64_t mask,
                             tsu_msg_status_t* status) noexcept {
  if (!status) return core::fail(TSU_ERR_NULL_POINTER, "tsu_msg_probe: status is NULL");
  if (src != TSU_ANY_SOURCE && src >= rt_.size())
    return core::fail(TSU_ERR_BAD_RANK, "tsu_msg_probe: rank %u >= job size %u", src, rt_.size());
  if (!runtime::in_progress_context()) rt_.engine().progress();
  Filled filled;
  lock_queue(filled);
  for (const auto& u : unexpected_)
    if (tag_matches(src, tag, mask, u->src, u->tag)) {
      *status = tsu_msg_status_t{u->src, TSU_OK, u->tag, u->len};
      unlock_queue(filled);
      return TSU_OK;
    }
  unlock_queue(filled);
  return TSU_EAGAIN;
}

tsu_status_t MsgLayer::cancel(tsu_recv_t handle) noexcept {
  std::unique_ptr<Local> l;
  Filled filled;
  lock_queue(filled);
  for (uint32_t i = 0; i < mine_.count(); ++i) {
    const uint16_t s = mine_.order(i);
    if (slots_[s] && slots_[s]->id == handle) {
      mine_.remove_at(i);
      l = std::move(slots_[s]);
      free_entry(s);
      break;
    }
  }
  if (!l)
    for (auto it = overflow_.begin(); it != overflow_.end(); ++it)
      if ((*it)->id == handle) {
        l = std::move(*it);
        overflow_.erase(it);
        break;
      }
  unlock_queue(filled);
  if (!l)
    return core::fail(TSU_ERR_INVALID_ARG,
                      "tsu_recv_cancel: receive %llu is not pending (matched, done or unknown)",
                      static_cast<unsigned long long>(handle));
  complete(*l, l->src, l->tag, 0, TSU_ERR_CANCELED);
  return TSU_OK;
}

}  // namespace tsu::msg
