// MsgLayer's send path: eager (single-copy into a node peer's posted
// receive where it can, else a message) and the start of a rendezvous (an
// RTS, with the payload posted first where the route moves it itself).
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
  if (len > UINT32_MAX) return false;
  // The peer's queue and its capacity, found once per peer: the header line
  // is then first touched by the lock's compare-exchange (one transfer, not
  // two).  Both are fixed for the job; a thread that sees either unset looks
  // them up itself.
  std::byte* area = peer_queue_[dst].load(std::memory_order_relaxed);
  uint32_t capacity = peer_capacity_[dst].load(std::memory_order_relaxed);
  if (!area || !capacity) {
    // (Only memory transports map a peer's layer area: send() does not try
    // single-copy eager towards ranks on other nodes.)
    std::size_t area_size = 0;
    area = rt_.peer_layer_area(dst, area_id_, area_size);
    if (!area || area_size < sizeof(PostedInfo)) return false;
    capacity = PostedQueue::capacity_of(area);
    if (!capacity || capacity > PostedQueue::kMaxCapacity ||
        PostedQueue::bytes_for(capacity, rt_.size()) > area_size)
      return false;
    peer_queue_[dst].store(area, std::memory_order_relaxed);
    peer_capacity_[dst].store(capacity, std::memory_order_relaxed);
  }
  transport::MemoryAccess* mem = rt_.memory_access(dst);  // non-null: it mapped the area
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
        runtime::run_callback(cb, TSU_OK);
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
    runtime::run_callback(cb, TSU_OK);
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
  transport::BulkTransfer* route = rt_.bulk_route(dst);
  if (route && !memory_reachable(rt_, dst) && len <= route->bulk_max(dst))
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
                                 transport::BulkTransfer* route) noexcept {
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

}  // namespace tsu::msg
