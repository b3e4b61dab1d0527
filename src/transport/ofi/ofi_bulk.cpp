// Bulk payloads over libfabric's tagged interface (BulkTransfer::bulk_send).
//
// The tagged layer sends a large message as an RTS (a message, matched by
// tsunagi's own queues, wildcards and per-pair order included) and hands the
// payload here: the sender posts fi_tsendmsg at once, the receiver posts
// fi_trecvmsg into the matched receive's buffer once the RTS matched.  The
// provider pairs them by a tag that names the sender and the sender's key,
// unique among the payloads a receiver can see, so no ordering or wildcard
// is asked of it.  What the provider then does is its own rendezvous:
// tcp;ofi_rxm reads a large payload straight into the posted buffer (no
// copy through tsunagi's receive buffers, no DATA message per 64 KiB), and
// a NIC with tag matching places it without the CPU.
//
// Contexts: one BulkContext per call, owned by the provider while posted,
// freed by bulk_done when its completion (or its failure at posting) has
// run; those still posted when the endpoint closes are freed after it.
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "core/log.hpp"
#include "transport/ofi/ofi_transport.hpp"

namespace tsu::transport::ofi {

namespace {
// Tag layout: bit 63 set (nothing else here uses tags), the sender's rank in
// bits 32..62, the sender's key in bits 0..31.
constexpr uint64_t kBulkTagBit = uint64_t{1} << 63;
uint64_t bulk_tag(uint32_t sender, uint32_t key) {
  return kBulkTagBit | (uint64_t{sender & 0x7fffffffu} << 32) | key;
}
}  // namespace

struct OfiTransport::BulkContext : RmaContext {
  OfiTransport* owner = nullptr;
  uint32_t peer = 0;
  bool recv = false;
  BulkTransfer::Done fn = nullptr;
  void* fn_ctx = nullptr;
  uint64_t cookie = 0;
};

std::size_t OfiTransport::bulk_max(uint32_t peer) const noexcept {
  if (!bulk_ || peer >= size_ || peer == rank_) return 0;
  return info_->ep_attr->max_msg_size;
}

tsu_status_t OfiTransport::bulk_send(uint32_t dst, uint32_t key, const void* buf,
                                     std::size_t len, Done done, void* ctx,
                                     uint64_t cookie) noexcept {
  // The provider only reads a send's buffer.
  return post_bulk(Staged::kTagSend, dst, key, const_cast<void*>(buf), len, done, ctx, cookie);
}

tsu_status_t OfiTransport::bulk_recv(uint32_t src, uint32_t key, void* buf, std::size_t len,
                                     Done done, void* ctx, uint64_t cookie) noexcept {
  return post_bulk(Staged::kTagRecv, src, key, buf, len, done, ctx, cookie);
}

tsu_status_t OfiTransport::post_bulk(Staged::Kind kind, uint32_t peer, uint32_t key, void* buf,
                                     std::size_t len, Done done, void* ctx,
                                     uint64_t cookie) noexcept {
  if (bulk_max(peer) < len) return TSU_ERR_UNSUPPORTED;
  if (len && !buf) return TSU_ERR_NULL_POINTER;
  auto* c = new (std::nothrow) BulkContext;
  if (!c) return TSU_ERR_NO_MEMORY;
  fi_addr_t to;
  if (const tsu_status_t st = rma_peer(peer, c, to); st != TSU_OK) {
    delete c;
    return st;
  }
  c->owner = this;
  c->peer = peer;
  c->recv = kind == Staged::kTagRecv;
  c->fn = done;
  c->fn_ctx = ctx;
  c->cookie = cookie;
  c->done = &OfiTransport::bulk_done;
  Staged s;
  s.kind = kind;
  s.rank = peer;
  // A receive takes the payload from any address: the tag names the sender
  // (no FI_DIRECTED_RECV needed).
  s.to = c->recv ? FI_ADDR_UNSPEC : to;
  s.buf = buf;
  s.len = len;
  s.raddr = c->recv ? bulk_tag(peer, key) : bulk_tag(rank_, key);
  s.ctx = c;
  s.flags = FI_COMPLETION;
  std::lock_guard lock(mu_);
  try {
    bulk_pending_.insert(c);
  } catch (...) {
    delete c;
    return TSU_ERR_NO_MEMORY;
  }
  (c->recv ? bulk_recvs_ : bulk_sends_).fetch_add(1, std::memory_order_relaxed);
  // Behind whatever waits for room (in order with the sends before it),
  // inside a batch with the batch; never TSU_EAGAIN.
  std::deque<Staged>& queue = !retry_.empty() ? retry_ : staged_;
  if (batching_ || !retry_.empty()) {
    try {
      queue.push_back(s);
    } catch (...) {
      bulk_pending_.erase(c);
      delete c;
      return TSU_ERR_NO_MEMORY;
    }
    if (batching_ && staged_.size() >= kMaxStaged) flush_staged();
    return TSU_OK;
  }
  const ssize_t rc = post(s, 0, false);
  if (rc == 0) return TSU_OK;
  if (rc == -FI_EAGAIN) {
    try {
      retry_.push_back(s);  // posted again by poll
      watch_backpressured(peer);
      return TSU_OK;
    } catch (...) {
    }
  }
  fail_staged(s, rc == -FI_EAGAIN ? -FI_ENOMEM : rc);  // its callback in the next poll
  return TSU_OK;
}

void OfiTransport::bulk_done(RmaContext* ctx, tsu_status_t status) noexcept {
  auto* c = static_cast<BulkContext*>(ctx);
  {
    std::lock_guard lock(c->owner->mu_);
    c->owner->bulk_pending_.erase(c);
  }
  if (status != TSU_OK && status != TSU_ERR_TRUNCATED)
    TSU_LOG_DEBUG("ofi: bulk %s with rank %u failed: %s", c->recv ? "receive" : "send", c->peer,
                  tsu_strerror(status));
  c->fn(c->fn_ctx, c->peer, c->cookie, status);
  delete c;
}

void OfiTransport::cancel_bulk(uint32_t rank) noexcept {
  // Sends stay: the provider fails or drops them; the layer above has failed
  // their requests already (peer loss), and their completions find nothing.
  for (BulkContext* c : bulk_pending_)
    if (c->recv && c->peer == rank && fi_cancel(&ep_->fid, &c->ctx) == 0)
      bulk_cancels_.fetch_add(1, std::memory_order_relaxed);
}

void OfiTransport::free_bulk_pending() noexcept {
  for (BulkContext* c : bulk_pending_) delete c;
  bulk_pending_.clear();
}

}  // namespace tsu::transport::ofi
