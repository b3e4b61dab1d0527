// MsgLayer's rendezvous transfers: a matched RTS pulled (a copy from a node
// peer's memory, a CTS answered with DATA pieces, or a bulk payload from
// the route), and the FIN that completes the sender's request.
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
    // The payload waits in the route (BulkTransfer::bulk_send): receive it
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
      transport::BulkTransfer* route = rt_.bulk_route(src);
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
  transport::MemoryAccess* mem = rt_.memory_access(src);
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

// A bulk payload finished: the sender's request (the buffer is free again)
// or the receiver's pull.  Cookies name them: whatever peer loss, a FIN or a
// CTS completed first is found no more.
void MsgLayer::on_bulk_done(void* ctx, uint32_t peer, uint64_t cookie,
                            tsu_status_t st) noexcept {
  auto* self = static_cast<MsgLayer*>(ctx);
  if (std::unique_ptr<SendReq> req = self->take_send(cookie, peer)) {
    // A receiver with less room truncated it: the send itself succeeded.
    runtime::run_callback(req->cb, st == TSU_ERR_TRUNCATED ? TSU_OK : st);
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
  runtime::run_callback(req->cb, static_cast<tsu_status_t>(static_cast<int64_t>(h.args[1])));
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
    runtime::run_callback(req->cb, TSU_ERR_INVALID_ARG);
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
  runtime::run_callback(req->cb, st);
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

}  // namespace tsu::msg
