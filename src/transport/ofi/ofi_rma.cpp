#include "transport/ofi/ofi_rma.hpp"

#include "transport/memory_access.hpp"

#include <algorithm>
#include <cstring>

#include "core/atomic_exec.hpp"
#include "core/log.hpp"
#include "transport/message_rma/message_wire.hpp"

namespace tsu::transport::ofi {

OfiRma::OfiRma(RmaHost& host, OfiTransport& transport)
    : host_(host), t_(transport), fallback_(host) {
  fallback_.register_handlers(host.handler_table());
  host.handler_table().set(kOfiKeyReq, on_key_req, this);
  host.handler_table().set(kOfiKeyRep, on_key_rep, this);
}

OfiRma::Op* OfiRma::alloc() noexcept {
  try {
    if (free_.empty()) {
      ops_.push_back(std::make_unique<Op>());
      free_.push_back(ops_.back().get());
    }
  } catch (...) {
    return nullptr;
  }
  Op* op = free_.back();
  free_.pop_back();
  *op = Op{};
  op->owner = this;
  op->used = true;
  op->done = &OfiRma::on_done;
  return op;
}

void OfiRma::release(Op* op) noexcept {
  if (op->watched) t_.unwatch_peer(op->rank);
  op->watched = false;
  op->used = false;
  free_.push_back(op);  // capacity reserved: ops_ never shrinks
}

tsu_status_t OfiRma::start(const core::Command& cmd, uint32_t completion_id) noexcept {
  // A rank already known lost: its peer-loss handler has run, so nothing
  // parked below (waiting for its key) would ever be failed.
  if (t_.is_peer_lost(cmd.dst.rank) ||
      (cmd.kind == core::CommandKind::kCopy && t_.is_peer_lost(cmd.src.rank)))
    return TSU_ERR_PEER_LOST;
  if (cmd.kind == core::CommandKind::kAtomic) return start_atomic(cmd, completion_id);
  if (!native_ok_ || cmd.kind != core::CommandKind::kCopy || cmd.len == 0 ||
      cmd.len > t_.max_rma())
    return fallback_.start(cmd, completion_id);
  // A small put or get behind others still in flight rides a message, so
  // that many leave in one provider send (TSU_OFI_BUNDLE) and their replies
  // come back together, at a much higher rate than one fi_write each.  One
  // that finds nothing in flight goes native: a lone fi_write completes
  // sooner than the message round trip (docs/ofi.md, "Bundles").
  if (cmd.len <= t_.rma_message_max() &&
      (ops_.size() != free_.size() || fallback_.in_flight() != 0))
    return fallback_.start(cmd, completion_id);
  const bool src_here = host_.memory_route(cmd.src.rank);
  const bool dst_here = host_.memory_route(cmd.dst.rank);
  if (src_here == dst_here) return fallback_.start(cmd, completion_id);  // forwarded copy
  const tsu_gaddr_t local = src_here ? cmd.src : cmd.dst;
  const tsu_gaddr_t remote = src_here ? cmd.dst : cmd.src;
  // Only the main segment is registered with the NIC (register_memory says
  // why); other segments are reached by messages.
  if (remote.seg != TSU_SEG_MAIN) return fallback_.start(cmd, completion_id);
  // The side this process holds is checked whole first (as every route does).
  Access a;
  const tsu_status_t st = host_.resolve(local, cmd.len, a);
  if (st != TSU_OK) return st;
  if (a.kind != Access::kDirect) return fallback_.start(cmd, completion_id);
  Op* op = alloc();
  if (!op) return TSU_ERR_NO_MEMORY;
  op->put = src_here;
  op->rank = remote.rank;
  op->remote = remote;
  op->local = a.ptr;
  op->len = cmd.len;
  op->completion_id = completion_id;
  op->cmd = cmd;
  return dispatch_when_keyed(op);
}

tsu_status_t OfiRma::start_atomic(const core::Command& cmd, uint32_t completion_id) noexcept {
  const tsu_gaddr_t target = cmd.dst;
  // The main segment is always a CPU segment (only tsu_segment_alloc_ex
  // makes NIC ones): its atomics go to the target's CPU at once.
  if (target.seg == TSU_SEG_MAIN) return fallback_.start(cmd, completion_id);
  Op* op = alloc();
  if (!op) return TSU_ERR_NO_MEMORY;
  op->atomic = true;
  op->rank = target.rank;
  op->remote = target;
  op->completion_id = completion_id;
  op->cmd = cmd;
  op->operand = cmd.operand;
  op->compare = cmd.compare;
  if (target.rank == host_.host_rank()) {
    // This rank's own segment: its site and key from the runtime, no message.
    AtomicSite site;
    if (!host_.atomic_site(target.seg, site)) {
      release(op);
      return TSU_ERR_BAD_SEGMENT;
    }
    MemoryKey mk;
    WireKey key{};
    const bool has_key = host_.memory_key(target.seg, mk) && mk.len == sizeof(WireKey);
    if (has_key) std::memcpy(&key, mk.bytes.data(), sizeof key);
    dispatch(op, has_key, site, key);
    return core::kStarted;
  }
  return dispatch_when_keyed(op);
}

tsu_status_t OfiRma::dispatch_when_keyed(Op* op) noexcept {
  // Watched from here until released: waiting for the key, in the backlog
  // or held by the provider.  A peer that stops answering without its
  // connection failing (a frozen or crashed node: no RST) would otherwise
  // leave a fi_read or a fetching atomic pending until tcp gives up; the
  // watch's keep-alives declare it lost and on_peer_lost fails the request.
  t_.watch_peer(op->rank);
  op->watched = true;
  KeyState* ks;
  try {
    ks = &keys_[key_of(op->remote.rank, op->remote.seg)];
    if (!ks->known) ks->waiting.push_back(op);
  } catch (...) {
    release(op);
    return TSU_ERR_NO_MEMORY;
  }
  if (ks->known) {
    dispatch(op, ks->has_key, ks->site, ks->key);
  } else if (!ks->requested) {
    // The first op for this segment asks its owner once; the answer
    // dispatches every op waiting by then.
    ks->requested = true;
    core::MessageHeader h{};
    h.handler = kOfiKeyReq;
    h.args[0] = op->remote.seg;
    send(op->remote.rank, h, nullptr);
  }
  return core::kStarted;
}

void OfiRma::dispatch(Op* op, bool has_key, AtomicSite site, WireKey key) noexcept {
  if (!op->atomic) {
    if (has_key) issue(op, key);
    else to_messages(op);  // a put or get the target has no key for
    return;
  }
  if (site == AtomicSite::kNic && has_key) {
    issue_atomic(op, key);
    return;
  }
  if (site == AtomicSite::kNic) {
    finish(op, TSU_ERR_SYSTEM);  // registered without a key: cannot happen
    return;
  }
  // A CPU segment.  One this process reaches never comes here (the runtime
  // runs its atomics itself); refuse rather than run a CPU atomic here.
  if (host_.memory_route(op->rank)) {
    finish(op, TSU_ERR_UNSUPPORTED);
    return;
  }
  to_messages(op);
}

void OfiRma::to_messages(Op* op) noexcept {
  const core::Command cmd = op->cmd;
  const uint32_t id = op->completion_id;
  release(op);
  const tsu_status_t st = fallback_.start(cmd, id);
  if (st != core::kStarted) host_.complete(id, st);
}

void OfiRma::issue_atomic(Op* op, const WireKey& key) noexcept {
  const auto type = static_cast<tsu_atype_t>(op->cmd.atype);
  const auto aop = static_cast<tsu_aop_t>(op->cmd.aop);
  const uint64_t width = core::atomic_type_size(type);
  // The word against the size the target gave (the adapter checks again);
  // the caller checked alignment, and segments start on a page.
  const uint64_t off = op->remote.offset;
  if (off > key.size || width > key.size - off) {
    finish(op, TSU_ERR_OUT_OF_BOUNDS);
    return;
  }
  FiAtomic a;
  if (!fi_atomic_of(aop, type, a)) {
    finish(op, TSU_ERR_INVALID_ARG);
    return;
  }
  const tsu_status_t st = t_.atomic(op->rank, a, &op->operand, &op->compare, &op->result,
                                    key.base + off, key.key, op);
  if (st == TSU_ERR_UNSUPPORTED) {
    refused(op);
    return;
  }
  if (st == TSU_EAGAIN) {
    try {
      backlog_.emplace_back(op, key);
    } catch (...) {
      finish(op, TSU_ERR_NO_MEMORY);
    }
    return;
  }
  if (st != TSU_OK) finish(op, st);
}

void OfiRma::refused(Op* op) noexcept {
  // NIC atomics on this segment may have completed already (here or from
  // other ranks): running this one on a CPU would break atomicity with them.
  t_.count_atomic_refused();
  if (!atomic_refusal_logged_) {
    atomic_refusal_logged_ = true;
    TSU_LOG_WARN("ofi: provider %s refused a NIC atomic (ENOSYS) on segment %u of rank %u: it "
                 "fails with TSU_ERR_UNSUPPORTED (a NIC segment's atomics never move to a CPU "
                 "once it is in use)",
                 t_.provider_name(), op->remote.seg, op->rank);
  }
  finish(op, TSU_ERR_UNSUPPORTED);
}

void OfiRma::issue(Op* op, const WireKey& key) noexcept {
  if (op->atomic) {
    issue_atomic(op, key);
    return;
  }
  // The range against the size the target gave (the NIC checks it again).
  const uint64_t off = op->remote.offset;
  if (off > key.size || op->len > key.size - off) {
    finish(op, TSU_ERR_OUT_OF_BOUNDS);
    return;
  }
  // One piece at a time, each completing on its own: a long transfer then
  // shows the peer alive at every piece (a keep-alive waits behind the data
  // in the provider's stream, and one large transfer on a lossy link can
  // outlast TSU_OFI_PEER_TIMEOUT: docs/ofi.md, "Keep-alive / peer loss"),
  // and a put's bytes land in order of pieces.
  op->key = key;
  op->piece = std::min(op->len - op->done_len, t_.rma_piece());
  const uint64_t raddr = key.base + off + op->done_len;
  std::byte* local = op->local + op->done_len;
  const tsu_status_t st = op->put ? t_.rma_write(op->rank, local, op->piece, raddr, key.key, op)
                                  : t_.rma_read(op->rank, local, op->piece, raddr, key.key, op);
  if (st == TSU_ERR_UNSUPPORTED) {
    fall_back(op);
    return;
  }
  if (st == TSU_EAGAIN) {
    try {
      backlog_.emplace_back(op, key);
    } catch (...) {
      finish(op, TSU_ERR_NO_MEMORY);
    }
    return;
  }
  if (st != TSU_OK) finish(op, st);
}

void OfiRma::finish(Op* op, tsu_status_t st) noexcept {
  host_.complete(op->completion_id, st);
  release(op);
}

void OfiRma::fall_back(Op* op) noexcept {
  if (native_ok_) {
    native_ok_ = false;
    TSU_LOG_WARN("ofi: provider %s refused native RMA (ENOSYS); put and get go over messages",
                 t_.provider_name());
  }
  t_.count_rma_fallback();
  const core::Command cmd = op->cmd;
  const uint32_t id = op->completion_id;
  release(op);
  const tsu_status_t st = fallback_.start(cmd, id);
  if (st != core::kStarted) host_.complete(id, st);
}

void OfiRma::on_done(RmaContext* ctx, tsu_status_t st) noexcept {
  auto* op = static_cast<Op*>(ctx);
  OfiRma& self = *op->owner;
  if (op->abandoned) {  // already failed by peer loss; the provider let go now
    self.release(op);
    return;
  }
  if (op->atomic && st == TSU_ERR_UNSUPPORTED) {
    self.refused(op);
    return;
  }
  if (st == TSU_ERR_UNSUPPORTED) {
    self.fall_back(op);
    return;
  }
  if (op->atomic && st == TSU_OK && core::atomic_op_fetches(static_cast<tsu_aop_t>(op->cmd.aop)) &&
      op->cmd.result)
    core::atomic_store_result(op->cmd.result, static_cast<tsu_atype_t>(op->cmd.atype), op->result);
  if (!op->atomic && st == TSU_OK && op->done_len + op->piece < op->len) {
    op->done_len += op->piece;  // the next piece
    self.issue(op, op->key);
    return;
  }
  if (st == TSU_ERR_BAD_SEGMENT) {
    // The target no longer holds that key: forget it (a later request for
    // the same id asks again and learns the segment is gone).
    self.keys_.erase(key_of(op->rank, op->remote.seg));
  }
  self.finish(op, st);
}

void OfiRma::send(uint32_t dst, const core::MessageHeader& h, const void* payload) noexcept {
  if (messages_.empty()) {
    const tsu_status_t st = t_.send_message(dst, h, payload);
    if (st != TSU_EAGAIN) {
      if (st != TSU_OK && st != TSU_ERR_PEER_LOST)
        TSU_LOG_WARN("ofi: key message to rank %u failed: %s", dst, tsu_strerror(st));
      return;
    }
  }
  try {
    const auto* p = static_cast<const std::byte*>(payload);
    messages_.push_back(PendingMessage{dst, h, std::vector<std::byte>(p, p + (p ? h.payload_len : 0))});
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory queueing a key message to rank %u", dst);
  }
}

// Target: the key of one of this rank's segments, or why there is none.
void OfiRma::on_key_req(void* ctx, uint32_t src, const core::MessageHeader& h,
                        const std::byte*) noexcept {
  auto& self = *static_cast<OfiRma*>(ctx);
  const auto seg = static_cast<tsu_seg_t>(h.args[0]);
  MemoryKey key;
  core::MessageHeader r{};
  r.handler = kOfiKeyRep;
  r.args[0] = seg;
  // Every live segment answers with its atomic site (args[2]); those
  // registered with the adapter add their key.
  AtomicSite site;
  if (!self.host_.atomic_site(seg, site)) {
    r.args[1] = status_arg(TSU_ERR_BAD_SEGMENT);
    self.send(src, r, nullptr);
    return;
  }
  r.args[1] = status_arg(TSU_OK);
  r.args[2] = static_cast<uint64_t>(site);
  if (self.host_.memory_key(seg, key) && key.len == sizeof(WireKey)) {
    r.payload_len = key.len;
    self.send(src, r, key.bytes.data());
  } else {
    self.send(src, r, nullptr);
  }
}

// Origin: the key arrived (or the segment does not exist): run the parked ops.
void OfiRma::on_key_rep(void* ctx, uint32_t src, const core::MessageHeader& h,
                        const std::byte* p) noexcept {
  auto& self = *static_cast<OfiRma*>(ctx);
  auto it = self.keys_.find(key_of(src, static_cast<tsu_seg_t>(h.args[0])));
  if (it == self.keys_.end()) return;
  KeyState& ks = it->second;
  std::vector<Op*> waiting;
  waiting.swap(ks.waiting);
  tsu_status_t st = arg_status(h.args[1]);
  if (st == TSU_OK && h.payload_len != 0 && h.payload_len != sizeof(WireKey)) st = TSU_ERR_SYSTEM;
  if (st == TSU_OK) {
    ks.has_key = h.payload_len == sizeof(WireKey);
    if (ks.has_key) std::memcpy(&ks.key, p, sizeof ks.key);
    ks.site = h.args[2] == static_cast<uint64_t>(AtomicSite::kNic) ? AtomicSite::kNic
                                                                   : AtomicSite::kCpu;
    ks.known = true;
    ks.requested = false;
    const WireKey key = ks.key;
    const bool has_key = ks.has_key;
    const AtomicSite site = ks.site;
    for (Op* op : waiting) self.dispatch(op, has_key, site, key);
  } else {
    // Not cached: a segment created later under a new id asks again.
    self.keys_.erase(it);
    for (Op* op : waiting) self.finish(op, st);
  }
}

std::size_t OfiRma::pump() noexcept {
  std::size_t work = 0;
  while (!messages_.empty()) {
    PendingMessage& m = messages_.front();
    const tsu_status_t st =
        t_.send_message(m.dst, m.h, m.payload.empty() ? nullptr : m.payload.data());
    if (st == TSU_EAGAIN) break;
    messages_.pop_front();
    ++work;
  }
  for (std::size_t n = backlog_.size(); n > 0 && !backlog_.empty(); --n) {
    auto [op, key] = backlog_.front();
    backlog_.pop_front();
    const std::size_t before = backlog_.size();
    issue(op, key);
    if (backlog_.size() == before) ++work;  // it left (or failed)
    else break;                             // still no room
  }
  return work + fallback_.pump();
}

bool OfiRma::idle() const noexcept {
  return backlog_.empty() && messages_.empty() && fallback_.idle();
}

void OfiRma::on_peer_lost(uint32_t rank) noexcept {
  fallback_.on_peer_lost(rank);
  std::erase_if(messages_, [&](const PendingMessage& m) { return m.dst == rank; });
  for (auto it = keys_.begin(); it != keys_.end();) {
    if ((it->first >> 32) == rank) {
      for (Op* op : it->second.waiting) finish(op, TSU_ERR_PEER_LOST);
      it = keys_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(backlog_, [&](const std::pair<Op*, WireKey>& e) {
    if (e.first->rank != rank) return false;
    finish(e.first, TSU_ERR_PEER_LOST);
    return true;
  });
  // Ops the provider still holds: their requests fail now; the provider's
  // own completion (an error, or a cancel at close) frees them later.
  for (auto& op : ops_)
    if (op->used && !op->abandoned && op->rank == rank) {
      op->abandoned = true;
      host_.complete(op->completion_id, TSU_ERR_PEER_LOST);
    }
}

}  // namespace tsu::transport::ofi
