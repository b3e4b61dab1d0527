#include "msg/msg_layer.hpp"

#include <algorithm>
#include <cstring>

#include "am/am_layer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"

namespace tsu::msg {

using core::MessageHeader;
using transport::Access;

// Wire formats (MessageHeader):
//   eager   args[0] tag; payload = data
//   rts     args[0] tag, [1] length, [2] sender address, [3] sender cookie;
//           flags bit 0: the address is an offset in the sender's shared
//           segment flags>>8 (else a pointer in the sender's process);
//           bit 1: the payload comes as a bulk payload keyed by the cookie's
//           low 32 bits (Transport::bulk_send), no CTS/DATA and no FIN
//           unless the receiver cannot take it
//   fin     args[0] cookie, [1] status (receiver -> sender, rendezvous done)
//   scpoke  no arguments (sender -> receiver: a single-copy record waits in
//           your posted queue; only where the route cannot wake the engine)
//   cts     args[0] sender cookie, [1] receiver cookie (NetPull), [2] bytes
//           wanted (receiver -> sender, off-node rendezvous: "send it"); a
//           receive that cannot take the data answers with a FIN instead
//   data    args[0] receiver cookie, [1] offset; payload = a piece of the
//           sender's buffer (sender -> receiver, after a cts)
namespace {
constexpr uint16_t kRtsShared = 1;
constexpr uint16_t kRtsBulk = 2;

// True when this process reaches `rank`'s memory (self or a node peer);
// false for ranks on other nodes, reached by messages only.
bool memory_reachable(core::Runtime& rt, uint32_t rank) {
  const transport::Transport* t = rt.route(rank);
  return t && (t->capabilities() & transport::kCapMemoryAccess);
}
}

struct MsgLayer::Local {
  uint64_t id;
  uint32_t src;
  uint64_t tag, mask;
  void* buf;
  std::size_t cap;
  tsu_msg_status_t* status;
  tsu_cb_t cb;
  int64_t seg;  // shared segment holding buf, or -1
  uint64_t offset;
  bool watched = false;  // holds a Transport::watch_peer on src until complete()
};

struct MsgLayer::Unexpected {
  uint32_t src;
  uint64_t tag;
  std::size_t len;
  bool rndv;
  uint16_t flags;
  uint64_t addr, cookie;
  std::vector<std::byte> data;
};

// A rendezvous send, named by a cookie in its RTS and in the receiver's FIN
// or CTS (sends_; net_mu_ also orders the sending thread before the handler).
struct MsgLayer::SendReq {
  tsu_cb_t cb;
  const std::byte* buf;  // the user's buffer (off-node: sent on CTS)
  std::size_t len;
  uint32_t dst;
};

// Off-node rendezvous, receiver side: the matched receive and how much of
// the `want` bytes arrived.  DATA pieces come in order (per-pair order), so
// the last one completes it.
struct MsgLayer::NetPull {
  std::unique_ptr<Local> l;
  uint32_t src;
  uint64_t tag;
  std::size_t len, want, got;
  // A bulk payload longer than the receive: taken whole here, `want` bytes
  // copied out (providers differ in how, or whether, they complete a
  // truncated tagged receive: shm's never did, nor rxm's of zero bytes).
  std::unique_ptr<std::byte[]> bounce;
  // A bulk receive: the sender's cookie, for the FIN that fails its request
  // when this receive fails (0: not a bulk receive).
  uint64_t sender_cookie = 0;
};

uint64_t MsgLayer::add_send(std::unique_ptr<SendReq>& req) noexcept {
  std::lock_guard lock(net_mu_);
  const uint64_t cookie = next_cookie_++;
  try {
    sends_[cookie] = std::move(req);  // moved only once the slot exists
  } catch (const std::bad_alloc&) {
    return 0;
  }
  return cookie;
}

std::unique_ptr<MsgLayer::SendReq> MsgLayer::take_send(uint64_t cookie, uint32_t peer) noexcept {
  std::lock_guard lock(net_mu_);
  auto it = sends_.find(cookie);
  if (it == sends_.end() || it->second->dst != peer) return nullptr;
  std::unique_ptr<SendReq> req = std::move(it->second);
  sends_.erase(it);
  return req;
}

uint64_t MsgLayer::add_pull(std::unique_ptr<NetPull>& np) noexcept {
  std::lock_guard lock(net_mu_);
  const uint64_t cookie = next_cookie_++;
  try {
    pulls_[cookie] = std::move(np);  // moved only once the slot exists
  } catch (const std::bad_alloc&) {
    return 0;
  }
  return cookie;
}

std::unique_ptr<MsgLayer::NetPull> MsgLayer::take_pull(uint64_t cookie, uint32_t peer) noexcept {
  std::lock_guard lock(net_mu_);
  auto it = pulls_.find(cookie);
  if (it == pulls_.end() || it->second->src != peer) return nullptr;
  std::unique_ptr<NetPull> np = std::move(it->second);
  pulls_.erase(it);
  return np;
}

bool MsgLayer::source_lost(uint32_t src) const noexcept {
  if (src >= rt_.size()) return false;
  const transport::Transport* t = rt_.message_route(src);
  return t && t->is_peer_lost(src);
}

void MsgLayer::send_fin(uint32_t dst, uint64_t cookie, tsu_status_t st) noexcept {
  MessageHeader fin{};
  fin.handler = kHandlerMsgFin;
  fin.args[0] = cookie;
  fin.args[1] = static_cast<uint64_t>(static_cast<int64_t>(st));
  const tsu_status_t fst = am_.send_or_queue(dst, fin, nullptr);
  // A lost sender's request was failed by its own side's peer-loss handling.
  if (fst != TSU_OK && fst != TSU_ERR_PEER_LOST)
    TSU_LOG_ERROR("rendezvous FIN to rank %u failed: %s", dst, tsu_strerror(fst));
}

MsgLayer::MsgLayer(core::Runtime& rt, am::AmLayer& am)
    : rt_(rt),
      am_(am),
      eager_max_(rt.config().eager_max),
      sceager_min_(rt.config().sceager_min),
      sceager_(rt.config().sceager),
      sent_(new std::atomic<uint64_t>[rt.size()]),
      ranks_(rt.size()),
      sc_skip_(new std::atomic<uint32_t>[rt.size()]),
      peer_capacity_(new std::atomic<uint32_t>[rt.size()]) {
  for (uint32_t r = 0; r < rt.size(); ++r) {
    sent_[r].store(0, std::memory_order_relaxed);
    sc_skip_[r].store(0, std::memory_order_relaxed);
    peer_capacity_[r].store(0, std::memory_order_relaxed);
  }
  std::size_t area_size = 0;
  std::byte* area = rt.layer_area(area_size);
  uint32_t capacity = std::min(rt.config().posted_slots, PostedQueue::kMaxCapacity);
  while (capacity && PostedQueue::bytes_for(capacity, rt.size()) > area_size) capacity /= 2;
  if (!area || !capacity) {
    // No transport shares a layer area (cannot happen with shm or self; kept
    // so the queue and its lock always exist): a private one, which no
    // sender reaches.
    capacity = 1;
    area_size = PostedQueue::bytes_for(capacity, rt.size());
    private_area_.reset(new AreaLine[(area_size + 63) / 64]());
    area = reinterpret_cast<std::byte*>(private_area_.get());
  }
  mine_ = PostedQueue(area, capacity, rt.size());
  mine_.format();
  slots_.resize(capacity);
  for (uint32_t i = capacity; i-- > 0;) free_slots_.push_back(static_cast<uint16_t>(i));
  rt.handlers().set(kHandlerMsgEager, on_eager, this);
  rt.handlers().set(kHandlerMsgRts, on_rts, this);
  rt.handlers().set(kHandlerMsgFin, on_fin, this);
  rt.handlers().set(kHandlerMsgScPoke, on_sc_poke, this);
  rt.handlers().set(kHandlerMsgCts, on_cts, this);
  rt.handlers().set(kHandlerMsgData, on_data, this);
}

MsgLayer::~MsgLayer() = default;

// ---- Sender -------------------------------------------------------------------

// After a busy queue or a message still in flight the next sends to that
// rank go eager without trying: in a stream every try would cost a transfer
// of the receiver's queue line (or counter line) and mostly fail again.
bool MsgLayer::skip_single_copy(uint32_t dst) noexcept {
  uint32_t left = sc_skip_[dst].load(std::memory_order_relaxed);
  if (!left) return false;
  sc_skip_[dst].store(left - 1, std::memory_order_relaxed);  // racy between threads: a hint
  return true;
}

bool MsgLayer::try_single_copy(uint32_t dst, uint64_t tag, const void* buf, std::size_t len,
                               bool& busy) noexcept {
  transport::Transport* mem = rt_.route(dst);
  std::size_t area_size = 0;
  std::byte* area = mem ? mem->peer_layer_area(dst, area_size) : nullptr;
  // (Only memory transports map a peer's layer area: send() does not try
  // single-copy eager towards ranks on other nodes.)
  if (!area || len > UINT32_MAX) return false;
  // The queue's capacity, checked once per peer: the header line is then
  // first touched by the lock's compare-exchange (one transfer, not two).
  uint32_t capacity = peer_capacity_[dst].load(std::memory_order_relaxed);
  if (!capacity) {
    if (area_size < sizeof(PostedInfo)) return false;
    capacity = PostedQueue::capacity_of(area);
    if (!capacity || capacity > PostedQueue::kMaxCapacity ||
        PostedQueue::bytes_for(capacity, rt_.size()) > area_size)
      return false;
    peer_capacity_[dst].store(capacity, std::memory_order_relaxed);
  }
  PostedQueue q(area, capacity, rt_.size());
  const uint32_t me = rt_.rank();
  // Only when none of our earlier messages to dst is still in flight:
  // checked before the lock too, so a stream of eager messages does not
  // pull the receiver's queue line over for nothing (checked again under it).
  if (q.processed(me).load(std::memory_order_acquire) !=
      sent_[dst].load(std::memory_order_seq_cst)) {
    sc_skip_[dst].store(kScSkipAfterBusy, std::memory_order_relaxed);
    return false;
  }
  if (!q.try_lock()) {
    busy = true;
    sc_skip_[dst].store(kScSkipAfterBusy, std::memory_order_relaxed);
    return false;
  }
  if (q.processed(me).load(std::memory_order_acquire) ==
      sent_[dst].load(std::memory_order_seq_cst)) {
    for (uint32_t i = 0; i < q.count(); ++i) {
      const PostedFields& e = q.posted(i);
      if (!tag_matches(e.src, e.tag, e.mask, me, tag)) continue;
      // The earliest match decides: usable or not, nothing later may take it.
      Access a;
      if (e.has_seg && e.slot < capacity && len <= e.cap &&
          mem->resolve(tsu_gaddr(dst, e.seg, e.offset), len, a) ==
              TSU_OK &&
          a.kind == Access::kDirect) {
        if (len) std::memcpy(a.ptr, buf, len);
        const uint16_t slot = e.slot;
        q.remove_at(i);
        // The record rides in the header line we hold; the owner completes
        // the receive when its progress sees it.
        q.publish_filled(slot, me, tag, static_cast<uint32_t>(len));
        if (!mem->notify_peer(dst)) {
          MessageHeader h{};
          h.handler = kHandlerMsgScPoke;
          const tsu_status_t st = am_.send_or_queue(dst, h, nullptr);
          if (st != TSU_OK)
            TSU_LOG_ERROR("single-copy notice to rank %u failed: %s", dst, tsu_strerror(st));
        }
        return true;
      }
      break;
    }
  }
  q.unlock();
  return false;
}

tsu_status_t MsgLayer::send(uint32_t dst, uint64_t tag, const void* buf, std::size_t len,
                            const tsu_cb_t& cb) noexcept {
  if (dst >= rt_.size())
    return core::fail(TSU_ERR_BAD_RANK, "tsu_try_send: rank %u >= job size %u", dst, rt_.size());
  if (len && !buf) return core::fail(TSU_ERR_NULL_POINTER, "tsu_try_send: buf is NULL");
  if (!rt_.message_route(dst))
    return core::fail(TSU_ERR_UNREACHABLE, "tsu_try_send: no transport reaches rank %u", dst);
  std::size_t eager_limit = eager_max_;
  // Another node's route may carry more in one message than the job's limit
  // (ofi: tcp;ofi_rxm's 16 KiB); asked only for sizes above that limit.
  if (len > eager_limit && !memory_reachable(rt_, dst))
    if (const std::size_t route_max = rt_.message_route(dst)->eager_max(dst)) eager_limit = route_max;
  eager_limit = std::min(eager_limit, am_.max_payload(dst));
  if (len <= eager_limit) {
    // Single-copy eager needs the receiver's memory mapped here: node peers
    // (and self) only, never a rank on another node (the network transport).
    if (sceager_ && len >= sceager_min_ && memory_reachable(rt_, dst) && !skip_single_copy(dst)) {
      bool busy = false;
      if (try_single_copy(dst, tag, buf, len, busy)) {
        counters_.sceager.fetch_add(1, std::memory_order_relaxed);
        core::run_callback(cb, TSU_OK);
        return TSU_OK;
      }
      (busy ? counters_.busy : counters_.miss).fetch_add(1, std::memory_order_relaxed);
    }
    MessageHeader h{};
    h.handler = kHandlerMsgEager;
    h.args[0] = tag;
    h.payload_len = static_cast<uint32_t>(len);
    // Counted before the push (and uncounted if refused): processed[me] at
    // the receiver never exceeds sent_[dst], so equality means nothing of
    // ours to dst is in flight (try_single_copy), whatever other threads do.
    sent_[dst].fetch_add(1, std::memory_order_seq_cst);
    const tsu_status_t st = am_.try_send(dst, h, buf);
    if (st != TSU_OK) {
      sent_[dst].fetch_sub(1, std::memory_order_relaxed);
      return st < 0 ? am::AmLayer::transport_error("tsu_try_send", dst, st) : st;
    }
    counters_.eager.fetch_add(1, std::memory_order_relaxed);
    core::run_callback(cb, TSU_OK);
    return TSU_OK;
  }
  // Rendezvous: the receiver copies from our buffer, then says FIN.
  auto req = std::unique_ptr<SendReq>(
      new (std::nothrow) SendReq{cb, static_cast<const std::byte*>(buf), len, dst});
  const uint64_t cookie = req ? add_send(req) : 0;
  if (!cookie) return core::fail(TSU_ERR_NO_MEMORY, "tsu_try_send: out of memory");
  MessageHeader h{};
  h.handler = kHandlerMsgRts;
  h.args[0] = tag;
  h.args[1] = len;
  h.args[2] = reinterpret_cast<uint64_t>(buf);
  h.args[3] = cookie;
  // Another node whose route moves payloads itself: the payload is posted
  // now, the RTS follows (queued, never refused once the payload is out).
  transport::Transport* route = rt_.message_route(dst);
  if (!memory_reachable(rt_, dst) && len <= route->bulk_max(dst))
    return send_bulk(dst, h, cookie, route);
  tsu_seg_t seg;
  uint64_t offset;
  std::byte* p;
  uint32_t state = 0;
  if (rt_.segments().find(buf, seg, offset) &&
      rt_.segments().translate(seg, offset, len, p, &state) == TSU_OK &&
      core::slot_state_shared(state) && seg < 256) {  // flags carry 8 bits of id
    h.flags = static_cast<uint16_t>(kRtsShared | (seg << 8));
    h.args[2] = offset;
  }
  sent_[dst].fetch_add(1, std::memory_order_seq_cst);  // before the push, as for eager
  const tsu_status_t st = am_.try_send(dst, h, nullptr);
  if (st != TSU_OK) {
    sent_[dst].fetch_sub(1, std::memory_order_relaxed);
    // Refused, so no callback may run: unless the peer-loss handler (on the
    // progress thread) took the request first and ran its callback, in
    // which case the request counts as accepted.
    if (!take_send(cookie, dst)) return TSU_OK;
    return st < 0 ? am::AmLayer::transport_error("tsu_try_send", dst, st) : st;
  }
  counters_.rndv.fetch_add(1, std::memory_order_relaxed);
  return TSU_OK;
}

tsu_status_t MsgLayer::send_bulk(uint32_t dst, MessageHeader& h, uint64_t cookie,
                                 transport::Transport* route) noexcept {
  h.flags = kRtsBulk;
  const std::size_t len = h.args[1];
  tsu_status_t st = route->bulk_send(dst, static_cast<uint32_t>(cookie),
                                     reinterpret_cast<const void*>(h.args[2]), len, on_bulk_done,
                                     this, cookie);
  if (st == TSU_OK) {
    sent_[dst].fetch_add(1, std::memory_order_seq_cst);
    st = am_.send_or_queue(dst, h, nullptr);
    if (st == TSU_OK) {
      counters_.rndv.fetch_add(1, std::memory_order_relaxed);
      return TSU_OK;
    }
    sent_[dst].fetch_sub(1, std::memory_order_relaxed);
    // The payload posted stays unclaimed; its completion finds no request.
  }
  // Refused, no callback: unless peer loss took the request and ran it.
  if (!take_send(cookie, dst)) return TSU_OK;
  return am::AmLayer::transport_error("tsu_try_send", dst, st);
}

// A bulk payload finished: the sender's request (the buffer is free again)
// or the receiver's pull.  Cookies name them: whatever peer loss, a FIN or a
// CTS completed first is found no more.
void MsgLayer::on_bulk_done(void* ctx, uint32_t peer, uint64_t cookie,
                            tsu_status_t st) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  if (std::unique_ptr<SendReq> req = self->take_send(cookie, peer)) {
    // A receiver with less room truncated it: the send itself succeeded.
    core::run_callback(req->cb, st == TSU_ERR_TRUNCATED ? TSU_OK : st);
    return;
  }
  std::unique_ptr<NetPull> np = self->take_pull(cookie, peer);
  if (!np) return;
  if (np->bounce && st == TSU_OK && np->want) std::memcpy(np->l->buf, np->bounce.get(), np->want);
  if (st != TSU_OK && st != TSU_ERR_TRUNCATED && st != TSU_ERR_PEER_LOST && np->sender_cookie) {
    // The receive failed with its sender alive (a provider error, or a
    // refusal held until the sender was heard from).  The sender's request
    // waits for its own send's completion, which such a failure may never
    // bring (tcp;ofi_rxm completes a rendezvous send when the receiver has
    // read it): a FIN with the error fails it.  Its payload stays posted in
    // the provider until finalize (libfabric has no cancel for a send);
    // nothing reads the buffer any more, for no receive names its key again
    // (until the sender's cookies wrap at 2^32).
    TSU_LOG_ERROR("bulk receive from rank %u failed: %s", np->src, tsu_strerror(st));
    self->send_fin(np->src, np->sender_cookie, st);
  }
  if (st == TSU_OK && np->len > np->l->cap) st = TSU_ERR_TRUNCATED;
  self->complete(*np->l, np->src, np->tag, np->len, st);
}

void MsgLayer::on_fin(void* ctx, uint32_t src, const MessageHeader& h, const std::byte*) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  std::unique_ptr<SendReq> req = self->take_send(h.args[0], src);
  if (!req) {
    TSU_LOG_ERROR("rendezvous FIN from rank %u names no pending send", src);
    return;
  }
  core::run_callback(req->cb, static_cast<tsu_status_t>(static_cast<int64_t>(h.args[1])));
}

// ---- Receiver -----------------------------------------------------------------

void MsgLayer::lock_queue(Filled& f) noexcept {
  util::Backoff b;
  for (;;) {
    switch (mine_.owner_lock()) {
      case PostedQueue::kTaken:
        return;
      case PostedQueue::kRecordWaits:
        // The pass's thread is the record's only reader: it owns the line
        // now (no sender takes a lock in state kFilled).
        if (core::in_consumer_pass()) {
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
  if (test_defer_filled_.load(std::memory_order_relaxed)) return 0;
  Filled f;
  take_filled(f);
  unlock_queue(f);
  return 1;
}

bool MsgLayer::idle() const noexcept {
  return !sceager_ || !mine_.filled_pending(std::memory_order_seq_cst) ||
         test_defer_filled_.load(std::memory_order_relaxed);
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
  PostedEntry& e = mine_.entry(slot);
  e.state = kEntryPosted;
  e.f.src = l->src;
  e.f.tag = l->tag;
  e.f.mask = l->mask;
  e.f.cap = static_cast<uint32_t>(std::min<std::size_t>(l->cap, UINT32_MAX));
  // With single-copy eager off here no sender may fill it (and progress
  // does not look for records).
  e.f.has_seg = sceager_ && l->seg >= 0;
  e.f.seg = e.f.has_seg ? static_cast<uint32_t>(l->seg) : 0;
  e.f.offset = l->offset;
  e.f.slot = slot;
  slots_[slot] = std::move(l);
  mine_.append(slot);
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
    if (transport::Transport* t = rt_.route(l.src)) t->unwatch_peer(l.src);
  }
  if (l.status) *l.status = tsu_msg_status_t{src, st, tag, len};
  core::run_callback(l.cb, st);
}

// Off-node rendezvous, receiver side: registers the pull, then ask(its
// cookie) asks for the data (a CTS, or a bulk receive from the route).
template <typename Ask>
void MsgLayer::start_pull(std::unique_ptr<NetPull> np, std::unique_ptr<Local> lp, uint32_t src,
                          uint64_t tag, std::size_t len, uint64_t cookie, const char* what,
                          Ask&& ask) noexcept {
  tsu_status_t st = TSU_ERR_NO_MEMORY;
  if (np) {
    np->l = std::move(lp);
    const uint64_t pull_cookie = add_pull(np);
    if (!pull_cookie) {
      lp = std::move(np->l);
    } else {
      st = ask(pull_cookie);
      if (st == TSU_OK) return;
      // Whoever takes it completes it (peer loss may have done so already).
      np = take_pull(pull_cookie, src);
      if (!np) return;
      lp = std::move(np->l);
    }
  }
  // Both sides fail: ours here, the sender's by a FIN carrying the error
  // (it cannot arrive if the sender is lost; its side fails it then).
  if (st != TSU_ERR_PEER_LOST)
    TSU_LOG_ERROR("%s from rank %u failed: %s", what, src, tsu_strerror(st));
  send_fin(src, cookie, st);
  complete(*lp, src, tag, len, st);
}

void MsgLayer::pull(std::unique_ptr<Local> lp, uint32_t src, uint64_t tag, std::size_t len,
                    uint16_t flags, uint64_t addr, uint64_t cookie) noexcept {
  Local& l = *lp;
  const std::size_t n = std::min(len, l.cap);
  if (flags & kRtsBulk) {
    // The payload waits in the route (Transport::bulk_send): receive it
    // into the buffer (through a bounce buffer when it is longer than the
    // receive); on_bulk_done completes.
    auto np =
        std::unique_ptr<NetPull>(new (std::nothrow) NetPull{nullptr, src, tag, len, n, 0, {}});
    void* into = l.buf;
    if (np) np->sender_cookie = cookie;
    if (np && n < len) {
      np->bounce.reset(new (std::nothrow) std::byte[len]);
      into = np->bounce.get();
      if (!into) np.reset();
    }
    auto ask = [&](uint64_t pull_cookie) {
      transport::Transport* route = rt_.message_route(src);
      return route ? route->bulk_recv(src, static_cast<uint32_t>(cookie), into, len, on_bulk_done,
                                      this, pull_cookie)
                   : TSU_ERR_UNREACHABLE;
    };
    start_pull(std::move(np), std::move(lp), src, tag, len, cookie, "bulk receive", ask);
    return;
  }
  if (n && !memory_reachable(rt_, src)) {
    // Another node: ask the sender for the bytes (CTS); DATA completes it.
    auto np =
        std::unique_ptr<NetPull>(new (std::nothrow) NetPull{nullptr, src, tag, len, n, 0, {}});
    auto ask = [&](uint64_t pull_cookie) {
      MessageHeader cts{};
      cts.handler = kHandlerMsgCts;
      cts.args[0] = cookie;
      cts.args[1] = pull_cookie;
      cts.args[2] = n;
      return am_.send_or_queue(src, cts, nullptr);
    };
    start_pull(std::move(np), std::move(lp), src, tag, len, cookie, "rendezvous CTS", ask);
    return;
  }
  transport::Transport* mem = rt_.route(src);
  Access from;
  // Nothing to copy (a zero-byte receive buffer): just the FIN, on any route.
  tsu_status_t st = n ? TSU_ERR_UNSUPPORTED : TSU_OK;
  if (mem && n)
    st = (flags & kRtsShared)
             ? mem->resolve(tsu_gaddr(src, static_cast<uint32_t>(flags >> 8), addr), n, from)
             : mem->resolve_process_memory(src, addr, n, from);
  if (st == TSU_OK && n)
    st = rt_.copy_access(Access{Access::kDirect, static_cast<std::byte*>(l.buf), 0, 0}, from, n);
  send_fin(src, cookie, st);
  if (st != TSU_OK)
    TSU_LOG_WARN("rendezvous copy from rank %u failed: %s", src, tsu_strerror(st));
  complete(l, src, tag, len, st != TSU_OK ? st : (len > l.cap ? TSU_ERR_TRUNCATED : TSU_OK));
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
  self->mine_.processed(src).fetch_add(1, std::memory_order_release);
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
  self->mine_.processed(src).fetch_add(1, std::memory_order_release);
  self->unlock_queue(filled);
  if (l) self->pull(std::move(l), src, tag, h.args[1], h.flags, h.args[2], h.args[3]);
}

// Off-node rendezvous, sender side: the receiver matched our RTS and wants
// args[2] bytes.  They leave in pieces of the route's largest payload (copied
// or queued in order by the AM layer), so the user's buffer is free now.
void MsgLayer::on_cts(void* ctx, uint32_t src, const MessageHeader& h, const std::byte*) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  std::unique_ptr<SendReq> req = self->take_send(h.args[0], src);
  if (!req) {
    TSU_LOG_ERROR("rendezvous CTS from rank %u names no pending send", src);
    return;
  }
  if (h.args[2] > req->len) {
    // Never read past the user's buffer; the receiver is told nothing more.
    TSU_LOG_ERROR("rendezvous CTS from rank %u wants %llu B of a %zu B send", src,
                  static_cast<unsigned long long>(h.args[2]), req->len);
    core::run_callback(req->cb, TSU_ERR_INVALID_ARG);
    return;
  }
  const std::size_t want = h.args[2];
  const std::size_t piece = std::max<std::size_t>(self->am_.max_payload(src), 1);
  tsu_status_t st = TSU_OK;
  for (std::size_t off = 0; off < want && st == TSU_OK; off += piece) {
    MessageHeader d{};
    d.handler = kHandlerMsgData;
    d.args[0] = h.args[1];
    d.args[1] = off;
    d.payload_len = static_cast<uint32_t>(std::min(piece, want - off));
    st = self->am_.send_or_queue(src, d, req->buf + off);
  }
  if (st != TSU_OK && st != TSU_ERR_PEER_LOST)
    TSU_LOG_ERROR("rendezvous data to rank %u failed: %s", src, tsu_strerror(st));
  core::run_callback(req->cb, st);
}

// Off-node rendezvous, receiver side: one piece; the last one completes.
// Only the progress context runs handlers, so the entry is used in place and
// removed on completion (peer loss runs there too).
void MsgLayer::on_data(void* ctx, uint32_t src, const MessageHeader& h,
                       const std::byte* payload) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  const uint64_t cookie = h.args[0];
  NetPull* np = nullptr;
  {
    std::lock_guard lock(self->net_mu_);
    auto it = self->pulls_.find(cookie);
    if (it != self->pulls_.end() && it->second->src == src) np = it->second.get();
  }
  if (!np) {
    TSU_LOG_ERROR("rendezvous data from rank %u names no pending receive", src);
    return;
  }
  const std::size_t off = h.args[1], n = h.payload_len;
  tsu_status_t st = TSU_OK;
  if (off > np->want || n > np->want - off) {
    TSU_LOG_ERROR("rendezvous data from rank %u out of range", src);
    st = TSU_ERR_INVALID_ARG;
  } else {
    if (n) std::memcpy(static_cast<std::byte*>(np->l->buf) + off, payload, n);
    np->got += n;
    if (np->got < np->want) return;
  }
  std::unique_ptr<NetPull> done = self->take_pull(cookie, src);
  if (!done) return;
  if (st == TSU_OK) st = done->len > done->l->cap ? TSU_ERR_TRUNCATED : TSU_OK;
  self->complete(*done->l, done->src, done->tag, done->len, st);
}

void MsgLayer::on_sc_poke(void* ctx, uint32_t, const MessageHeader&, const std::byte*) noexcept {
  static_cast<MsgLayer*>(ctx)->poll();
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
  // directly (single-copy eager).
  tsu_seg_t seg;
  uint64_t offset;
  std::byte* p;
  uint32_t state = 0;
  if (cap && rt_.segments().find(buf, seg, offset) &&
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
    if (transport::Transport* t = rt_.route(src)) {
      t->watch_peer(src);
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
  if (!core::in_progress_context()) rt_.engine().progress();
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

void MsgLayer::on_peer_lost(uint32_t rank) noexcept {
  std::vector<std::unique_ptr<SendReq>> sends;
  std::vector<std::unique_ptr<NetPull>> pulls;
  {
    std::lock_guard lock(net_mu_);
    for (auto it = sends_.begin(); it != sends_.end();) {
      if (it->second->dst == rank) {
        sends.push_back(std::move(it->second));
        it = sends_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = pulls_.begin(); it != pulls_.end();) {
      if (it->second->src == rank) {
        pulls.push_back(std::move(it->second));
        it = pulls_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Posted receives that name the lost rank (any-source ones stay).
  std::vector<std::unique_ptr<Local>> posted;
  Filled filled;
  lock_queue(filled);
  for (uint32_t i = 0; i < mine_.count();) {
    const uint16_t slot = mine_.order(i);
    if (mine_.entry(slot).f.src != rank) {
      ++i;
      continue;
    }
    mine_.remove_at(i);
    posted.push_back(std::move(slots_[slot]));
    free_entry(slot);  // may move overflow receives in at the end: still scanned
  }
  for (auto it = overflow_.begin(); it != overflow_.end();) {
    if ((*it)->src == rank) {
      posted.push_back(std::move(*it));
      it = overflow_.erase(it);
    } else {
      ++it;
    }
  }
  unlock_queue(filled);
  if (!sends.empty() || !pulls.empty() || !posted.empty())
    TSU_LOG_WARN("rank %u lost: failing %zu rendezvous sends, %zu transfers, %zu receives", rank,
                 sends.size(), pulls.size(), posted.size());
  for (auto& req : sends) core::run_callback(req->cb, TSU_ERR_PEER_LOST);
  for (auto& np : pulls) complete(*np->l, np->src, np->tag, np->len, TSU_ERR_PEER_LOST);
  for (auto& l : posted)
    if (l) complete(*l, rank, l->tag, 0, TSU_ERR_PEER_LOST);
}

void MsgLayer::counters(tsu_msg_counters_t& out) const noexcept {
  out.eager = counters_.eager.load(std::memory_order_relaxed);
  out.sceager = counters_.sceager.load(std::memory_order_relaxed);
  out.sceager_busy = counters_.busy.load(std::memory_order_relaxed);
  out.sceager_miss = counters_.miss.load(std::memory_order_relaxed);
  out.rendezvous = counters_.rndv.load(std::memory_order_relaxed);
  out.unexpected = counters_.unexpected.load(std::memory_order_relaxed);
}

void MsgLayer::test_hold_lock(bool hold) noexcept {
  if (hold) {
    util::Backoff b;
    while (!mine_.try_lock()) {
      rt_.engine().progress();  // a record waiting there keeps senders (and us) out
      b.pause();
    }
  } else {
    mine_.unlock();
  }
}

}  // namespace tsu::msg
