// OfiTransport's progress: poll reads the completion queue (in named
// steps), runs messages in per-pair order, answers keep-alives, reposts
// receive buffers, and tells the engine when it may sleep.
#include <rdma/fi_errno.h>

#include <poll.h>

#include <cstring>

#include "core/log.hpp"
#include "transport/ofi/ofi_internal.hpp"
#include "transport/ofi/ofi_transport.hpp"
#include "util/clock.hpp"

namespace tsu::transport::ofi {

namespace {
constexpr int kCqBatch = 32;

bool descriptor_readable(int fd) noexcept {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}
}  // namespace

// Called with mu_ held.  A buffer the provider cannot take now (it needs
// progress first) waits in unposted_ for the next poll.
tsu_status_t OfiTransport::post_recv(Buffer& b) noexcept {
  const ssize_t rc = fi_recv(ep_, b.data, buffer_size_, desc_, FI_ADDR_UNSPEC, &b.ctx);
  if (rc == 0) return TSU_OK;
  if (rc == -FI_EAGAIN) {
    unposted_.push_back(&b);
    return TSU_EAGAIN;
  }
  TSU_LOG_WARN("ofi: fi_recv failed: %s", fi_text(static_cast<int>(rc)).c_str());
  unposted_.push_back(&b);
  return TSU_ERR_SYSTEM;
}

// Called with mu_ held, after fi_cq_read said FI_EAVAIL.
RmaContext* OfiTransport::handle_error_entry(tsu_status_t& rma_status) noexcept {
  fi_cq_err_entry err{};
  if (fi_cq_readerr(cq_, &err, 0) != 1) return nullptr;
  errors_.fetch_add(1, std::memory_order_relaxed);
  auto* c = static_cast<OpContext*>(err.op_context);
  if (!c) {
    TSU_LOG_WARN("ofi: completion error without context: %s", fi_text(err.err).c_str());
    return nullptr;
  }
  if (c->kind == OpContext::kRma) {
    // The target's NIC refused the access (a key or range it no longer
    // holds: the segment was freed) or the peer is gone.
    switch (err.err) {
      case FI_ENOSYS:
      case FI_EOPNOTSUPP: rma_status = TSU_ERR_UNSUPPORTED; break;  // OfiRma falls back
      case FI_EKEYREJECTED:
      case FI_EACCES:
      case FI_EINVAL: rma_status = TSU_ERR_BAD_SEGMENT; break;
      // Cancelled by the provider: its connection to the peer went away
      // (tcp;ofi_rxm cancels what it holds for a peer whose socket was
      // reset), or this endpoint is closing (nobody waits then).
      case FI_ECANCELED: rma_status = TSU_ERR_PEER_LOST; break;
      // A bulk receive shorter than the payload: its first bytes are in place.
      case FI_ETRUNC: rma_status = TSU_ERR_TRUNCATED; break;
      default: rma_status = status_of(-err.err); break;
    }
    TSU_LOG_DEBUG("ofi: RMA failed: %s", fi_text(err.err).c_str());
    return static_cast<RmaContext*>(c);
  }
  if (err.err == FI_ECANCELED) return nullptr;  // closing
  auto* b = static_cast<Buffer*>(c);
  if (b->kind == OpContext::kRecv) {
    // A receive that failed (truncated: a message larger than ours): drop it
    // and give the buffer back.
    dropped_.fetch_add(1, std::memory_order_relaxed);
    TSU_LOG_WARN("ofi: receive failed: %s (%zu bytes arrived; %zu more did not fit the "
                 "%zu-byte buffer)",
                 fi_text(err.err).c_str(), err.len, err.olen, buffer_size_);
    // Whose message it was, if its prefix arrived: the messages after it
    // cannot be delivered in order, so that peer is lost now (a message too
    // large for this buffer means the ranks disagree on TSU_OFI_MAX_MESSAGE).
    WirePrefix prefix;
    if (err.len >= sizeof prefix) {
      std::memcpy(&prefix, b->data, sizeof prefix);
      if (prefix.job_tag == job_tag_ && prefix.src_rank < size_ && prefix.reserved == 0)
        declare_lost(prefix.src_rank,
                     err.olen ? "its message did not fit this rank's receive buffer: is "
                                "TSU_OFI_MAX_MESSAGE the same on every rank?"
                              : "the provider delivered a message from it incomplete",
                     /*tell_it=*/true);
    }
    post_recv(*b);
    return nullptr;
  }
  TSU_LOG_WARN("ofi: send to rank %u failed: %s (%s)", b->dst, fi_text(err.err).c_str(),
               fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0));
  free_tx_.push_back(b);
  declare_lost(b->dst);
  return nullptr;
}

std::size_t OfiTransport::poll(const core::MessageHandlerTable& handlers) noexcept {
  fi_cq_msg_entry entries[kCqBatch];
  std::size_t work = 0;
  RmaContext* failed_rma = nullptr;
  tsu_status_t failed_status = TSU_OK;
  // The clock only where peers are watched or watches changed (what was
  // heard before a watch began does not count: silence is measured from the
  // watch's start).
  const bool watching =
      watched_now_.load(std::memory_order_relaxed) != 0 || watches_.changed();
  const uint64_t now = watching ? util::now_ns() : 0;
  // (keepalive() runs after the queue is read: a peer's message waiting in
  // it is heard before any silence is judged.)
  // Replies the handlers send while this poll dispatches are staged and
  // leave together at its end (bundled per peer when TSU_OFI_BUNDLE=1).
  // Native RMA aimed at this rank leaves no completion here (tcp;ofi_rxm
  // offers no FI_RMA_EVENT): the provider serves it inside fi_cq_read,
  // unseen, and an engine that sees no work sleeps between every two of
  // them, and every put or get pays a wake-up (docs/ofi.md, "Native RMA
  // served unseen").  The queue's descriptor is readable while the
  // provider has input to serve: readable before the reads and not after
  // counts as work.  (Both checks: a descriptor that stays readable proves
  // nothing, and must not keep the engine from sleeping.)  Only after a poll
  // that found nothing: a busy engine does not sleep anyway, and an issuer
  // streaming requests pays no system call per poll.
  const bool probe = rma_target_.load(std::memory_order_relaxed) && wait_fd_ >= 0 &&
                     !last_poll_worked_;
  const bool input_before = probe && descriptor_readable(wait_fd_);
  if (cfg_.bundle) batch_begin();
  for (;;) {
    std::vector<uint32_t> lost;
    ssize_t n = read_queue(entries, failed_rma, failed_status, lost);
    if (failed_rma) {
      failed_rma->done(failed_rma, failed_status);
      failed_rma = nullptr;
    }
    for (uint32_t r : lost)
      if (lost_fn_) lost_fn_(lost_ctx_, r);
    if (n == -FI_EAVAIL) {
      ++work;
      continue;
    }
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      auto* c = static_cast<OpContext*>(entries[i].op_context);
      if (!c) continue;
      ++work;
      complete(handlers, c, entries[i].len, watching, now);
    }
    if (n < kCqBatch) break;
  }
  if (cfg_.bundle) batch_end();
  if (watching) keepalive(util::now_ns());
  if (!gaps_.empty()) check_gaps();
  last_poll_worked_ = work != 0;
  if (input_before && work == 0 && !descriptor_readable(wait_fd_)) {
    ++work;
    served_unseen_.fetch_add(1, std::memory_order_relaxed);
  }
  return work;
}

ssize_t OfiTransport::read_queue(fi_cq_msg_entry* entries, RmaContext*& failed_rma,
                                 tsu_status_t& failed_status,
                                 std::vector<uint32_t>& lost) noexcept {
  ssize_t n;
  std::lock_guard lock(mu_);
  if (!retry_.empty()) post_list(retry_);
  if (!doubtful_.empty()) settle_doubtful();
  for (std::size_t k = unposted_.size(); k > 0; --k) {
    Buffer* u = unposted_.front();
    unposted_.erase(unposted_.begin());
    if (post_recv(*u) != TSU_OK) break;
  }
  n = fi_cq_read(cq_, entries, kCqBatch);
  if (n == -FI_EAVAIL) failed_rma = handle_error_entry(failed_status);
  lost.swap(newly_lost_);
  if (n != -FI_EAVAIL && n <= 0 && !faulted_.empty()) {
    failed_rma = faulted_.back().first;
    failed_status = faulted_.back().second;
    faulted_.pop_back();
    n = -FI_EAVAIL;  // look again
  }
  return n;
}

void OfiTransport::complete(const core::MessageHandlerTable& handlers, OpContext* c,
                            std::size_t len, bool watching, uint64_t now) noexcept {
  if (c->kind == OpContext::kRma) {
    auto* r = static_cast<RmaContext*>(c);
    // Written at the peer, read from it, or its atomic's value back.
    if (watching && r->peer < size_) heard_ns_[r->peer] = now;
    r->done(r, TSU_OK);
    return;
  }
  auto* b = static_cast<Buffer*>(c);
  if (b->kind == OpContext::kSend) {
    // A send the peer's side took: it is alive (a watched peer we only
    // stream to may not answer a ping that waits behind our data).
    if (watching) heard_ns_[b->dst] = now;
    std::lock_guard lock(mu_);
    free_tx_.push_back(b);
    return;
  }
  // A message: prefix, header, payload.  Anything malformed is dropped.
  if (len == sizeof(WirePrefix)) {
    receive_control(*b, now);
  } else {
    receive_messages(handlers, *b, len, now);
  }
}

void OfiTransport::receive_control(Buffer& b, uint64_t now) noexcept {
  // A keep-alive: consumed here, outside the pair's sequence.
  WirePrefix prefix;
  std::memcpy(&prefix, b.data, sizeof prefix);
  const uint32_t src = prefix.src_rank;
  const bool ok = prefix.job_tag == job_tag_ && src < size_ &&
                  (prefix.reserved == kPing || prefix.reserved == kPong ||
                   prefix.reserved == kLost);
  const bool notice = ok && prefix.reserved == kLost;
  if (ok && !notice) {
    heard_ns_[src] = now;
    // Everything it sent before this keep-alive has arrived (messages
    // keep their order): anything short of its count is missing.
    if (prefix.seq != 0 && prefix.seq - 1 != recv_seq_[src]) note_gap(src, prefix.seq - 1);
  }
  // A ping from a rank declared lost here is answered "lost": it may be
  // alive and waiting on us, and its provider may still acknowledge
  // its sends, which it takes as a sign of life (tcp;ofi_rxm's pings
  // have no completion, udp;ofi_rxd's do).
  const bool answer = ok && prefix.reserved == kPing;
  const uint32_t reply = lost_[src].load(std::memory_order_acquire) ? kLost : kPong;
  const fi_addr_t to = answer ? peer_address(src) : FI_ADDR_UNSPEC;  // outside mu_
  if (!ok) dropped_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (notice && !lost_[src].load(std::memory_order_acquire)) {
    lost_by_notice_.fetch_add(1, std::memory_order_relaxed);
    declare_lost(src, "it declared this rank lost: its provider lost or garbled a "
                      "message from this rank");
  }
  if (to != FI_ADDR_UNSPEC) send_control(src, to, reply);
  post_recv(b);
}

void OfiTransport::receive_messages(const core::MessageHandlerTable& handlers, Buffer& b,
                                    std::size_t len, uint64_t now) noexcept {
  // One message, or a bundle of them (bundle_sends): records back to
  // back, each starting at a multiple of 8, each checked on its own.
  // A malformed record drops it and the rest of the buffer.
  WirePrefix prefix;
  core::MessageHeader h;
  for (std::size_t at = 0; at < len;) {
    const std::size_t left = len - at;
    bool ok = left >= kPrefix;
    if (ok) {
      std::memcpy(&prefix, b.data + at, sizeof prefix);
      std::memcpy(&h, b.data + at + sizeof prefix, sizeof h);
      ok = prefix.job_tag == job_tag_ && prefix.src_rank < size_ && prefix.reserved == 0 &&
           kPrefix + std::size_t{h.payload_len} <= left;
    }
    if (!ok) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    heard_ns_[prefix.src_rank] = now;
    const std::size_t record = kPrefix + h.payload_len;
    deliver(handlers, prefix, b.data + at, record);
    at = record_start(at + record);
  }
  std::lock_guard lock(mu_);
  post_recv(b);
}

void OfiTransport::deliver(const core::MessageHandlerTable& handlers, const WirePrefix& prefix,
                           const std::byte* msg, std::size_t len) noexcept {
  const uint32_t src = prefix.src_rank;
  // Sequence numbers wrap; the distance says early (ahead) or duplicate.
  const uint32_t ahead = prefix.seq - recv_seq_[src];
  if (ahead != 0) {
    if (ahead > (1u << 31)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);  // already delivered
      return;
    }
    try {
      held_.emplace((uint64_t{src} << 32) | prefix.seq, std::vector<std::byte>(msg, msg + len));
      held_count_.fetch_add(1, std::memory_order_relaxed);
      note_gap(src, prefix.seq);
    } catch (...) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      TSU_LOG_ERROR("ofi: out of memory holding an early message from rank %u", src);
    }
    return;
  }
  for (;;) {
    core::MessageHeader h;
    std::memcpy(&h, msg + sizeof(WirePrefix), sizeof h);
    received_.fetch_add(1, std::memory_order_relaxed);
    ++recv_seq_[src];
    if (!handlers.dispatch(src, h, h.payload_len ? msg + kPrefix : nullptr))
      dropped_.fetch_add(1, std::memory_order_relaxed);
    if (held_.empty()) return;
    auto it = held_.find((uint64_t{src} << 32) | recv_seq_[src]);
    if (it == held_.end()) return;
    // Runs the held message in place, then drops it.
    std::vector<std::byte> next = std::move(it->second);
    held_.erase(it);
    held_tmp_.swap(next);
    msg = held_tmp_.data();
  }
}

bool OfiTransport::prepare_sleep() noexcept {
  // TSU_OFI_WAIT=none: busy polling.  Nothing could wake the engine but a
  // timeout, and a native put or get aimed at this rank moves only while the
  // queue is read (no completion shows it here).
  if (!cfg_.cq_wait) return false;
  std::lock_guard lock(mu_);
  // Test faults and refused operations to deliver, staged ones to post.
  if (!faulted_.empty() || !retry_.empty() || !staged_.empty()) return false;
  if (!doubtful_.empty() && doubtful_settleable()) return false;
  // Watches that started (their first timeout to arm) or ended.
  if (watches_.changed()) return false;
  if (wait_fd_ < 0) return true;        // polled every max_sleep_ns
  fid* fids[1] = {&cq_->fid};
  // FI_SUCCESS: nothing pending, the descriptor will signal new work.
  return fi_trywait(fabric_, fids, 1) == FI_SUCCESS;
}

}  // namespace tsu::transport::ofi
