// OfiTransport's send path: a message sent at once (inject or send) or
// staged in an executor batch, and the staged operations posted in order
// (bundled per peer, FI_MORE on all but the last, retried after -FI_EAGAIN).
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <cstring>

#include "core/log.hpp"
#include "transport/ofi/ofi_internal.hpp"
#include "transport/ofi/ofi_transport.hpp"

namespace tsu::transport::ofi {

tsu_status_t OfiTransport::status_of(ssize_t rc) const noexcept {
  switch (-rc) {
    case FI_EAGAIN: return TSU_EAGAIN;
    case FI_ENOMEM: return TSU_ERR_NO_MEMORY;
    case FI_EINVAL: return TSU_ERR_INVALID_ARG;
    // The connection to the peer is gone (connection-based providers such
    // as tcp;ofi_rxm say so in these words).
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ETIMEDOUT:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case EPIPE:
    case FI_ENOTCONN: return TSU_ERR_PEER_LOST;
    default: return TSU_ERR_SYSTEM;
  }
}

tsu_status_t OfiTransport::send_message(uint32_t dst, const core::MessageHeader& header,
                                        const void* payload) noexcept {
  if (dst >= size_) return TSU_ERR_UNREACHABLE;
  if (header.payload_len > cfg_.max_message) return TSU_ERR_INVALID_ARG;
  const fi_addr_t to = peer_address(dst);
  if (to == FI_ADDR_UNSPEC) return TSU_ERR_UNREACHABLE;
  if (lost_[dst].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
  const std::size_t total = kPrefix + header.payload_len;
  std::lock_guard lock(mu_);
  if (!retry_.empty()) {
    // Operations staged earlier wait for room: nothing overtakes them.
    eagain_.fetch_add(1, std::memory_order_relaxed);
    fi_cq_read(cq_, nullptr, 0);  // a progress nudge for manual providers
    return TSU_EAGAIN;
  }
  const WirePrefix prefix{rank_, job_tag_, send_seq_[dst], 0};
  if (cfg_.faulty(RmaFault::kMessageLost) && ++fault_sends_ == 64) {
    ++send_seq_[dst];  // "sent": the sequence moves on, nothing leaves
    TSU_LOG_DEBUG("ofi: test fault: message %u to rank %u lost", prefix.seq, dst);
    return TSU_OK;
  }
  if (!batching_ && total <= msg_inject_size_) {
    // Small: the provider copies it at once; no completion, no buffer held.
    alignas(8) std::byte small[512];
    if (total <= sizeof small) {
      std::memcpy(small, &prefix, sizeof prefix);
      std::memcpy(small + sizeof prefix, &header, sizeof header);
      if (header.payload_len) std::memcpy(small + kPrefix, payload, header.payload_len);
      const ssize_t rc = fi_inject(ep_, small, total, to);
      if (rc == 0) {
        ++send_seq_[dst];
        injected_.fetch_add(1, std::memory_order_relaxed);
        return TSU_OK;
      }
      if (rc == -FI_EAGAIN) {
        eagain_.fetch_add(1, std::memory_order_relaxed);
        watch_backpressured(dst);
        fi_cq_read(cq_, nullptr, 0);  // a progress nudge for manual providers
        return TSU_EAGAIN;
      }
      errors_.fetch_add(1, std::memory_order_relaxed);
      TSU_LOG_WARN("ofi: fi_inject to rank %u failed: %s", dst,
                   fi_text(static_cast<int>(rc)).c_str());
      return status_of(rc);
    }
  }
  if (free_tx_.empty()) {
    eagain_.fetch_add(1, std::memory_order_relaxed);
    return TSU_EAGAIN;  // every send buffer is in flight: poll() frees them
  }
  Buffer* b = free_tx_.back();
  std::memcpy(b->data, &prefix, sizeof prefix);
  std::memcpy(b->data + sizeof prefix, &header, sizeof header);
  if (header.payload_len) std::memcpy(b->data + kPrefix, payload, header.payload_len);
  b->dst = dst;
  if (batching_) {
    // Staged: leaves at batch_end with the batch's other operations (FI_MORE
    // but the last).  Small ones as FI_INJECT (the buffer is still held
    // until the completion, which returns it).
    Staged st;
    st.kind = Staged::kSend;
    st.rank = dst;
    st.to = to;
    st.buf = b->data;
    st.len = total;
    st.flags = FI_COMPLETION | (total <= msg_inject_size_ ? FI_INJECT : 0);
    st.ctx = b;
    try {
      staged_.push_back(st);
    } catch (...) {
      return TSU_ERR_NO_MEMORY;
    }
    free_tx_.pop_back();
    ++send_seq_[dst];
    if (staged_.size() >= kMaxStaged) flush_staged();
    return TSU_OK;
  }
  const ssize_t rc = fi_send(ep_, b->data, total, desc_, to, &b->ctx);
  if (rc == 0) {
    ++send_seq_[dst];
    free_tx_.pop_back();
    sent_.fetch_add(1, std::memory_order_relaxed);
    return TSU_OK;
  }
  if (rc == -FI_EAGAIN) {
    eagain_.fetch_add(1, std::memory_order_relaxed);
    watch_backpressured(dst);
    fi_cq_read(cq_, nullptr, 0);
    return TSU_EAGAIN;
  }
  errors_.fetch_add(1, std::memory_order_relaxed);
  TSU_LOG_WARN("ofi: fi_send to rank %u failed: %s", dst, fi_text(static_cast<int>(rc)).c_str());
  return status_of(rc);
}

void OfiTransport::batch_begin() noexcept {
  std::lock_guard lock(mu_);
  ++batching_;
}

void OfiTransport::batch_end() noexcept {
  std::lock_guard lock(mu_);
  if (batching_ > 0 && --batching_ > 0) return;
  flush_staged();
}

void OfiTransport::bundle_sends(std::deque<Staged>& list) noexcept {
  Staged& head = list.front();
  auto* b = static_cast<Buffer*>(head.ctx);
  std::size_t used = head.len;
  std::size_t merged = 0;
  while (merged + 1 < list.size()) {
    const Staged& next = list[merged + 1];
    if (next.kind != Staged::kSend || next.rank != head.rank) break;
    const std::size_t at = record_start(used);
    if (at + next.len > buffer_size_) break;
    std::memcpy(b->data + at, next.buf, next.len);
    used = at + next.len;
    free_tx_.push_back(static_cast<Buffer*>(next.ctx));
    ++merged;
  }
  if (merged == 0) return;
  head.len = used;
  head.flags = FI_COMPLETION | (used <= msg_inject_size_ ? FI_INJECT : 0);
  bundled_.fetch_add(merged, std::memory_order_relaxed);
  // Erasing inside a deque invalidates every reference into it (`head`
  // included): the caller takes list.front() again.
  list.erase(list.begin() + 1, list.begin() + 1 + static_cast<std::ptrdiff_t>(merged));
}

ssize_t OfiTransport::post(const Staged& s, uint64_t more, bool staged) noexcept {
  // TSU_OFI_TEST_FAULT: the provider refuses RMA at the call, as one that
  // lists FI_RMA and cannot do it would: rma_enosys every call (outside a
  // batch rma() returns it), rma_enosys_staged only those posted at
  // batch_end (the staged write or read fails to its callback).
  if ((s.kind == Staged::kWrite || s.kind == Staged::kRead) &&
      (cfg_.faulty(RmaFault::kAtCall) || (staged && cfg_.faulty(RmaFault::kAtStagedCall))))
    return -FI_ENOSYS;
  if (s.kind == Staged::kTagRecv && s.rank == size_ - 1 &&
      cfg_.faulty(RmaFault::kBulkRecvRefusedLast))
    return -FI_EOTHER;
  iovec iov{s.buf, s.len};
  switch (s.kind) {
    case Staged::kSend: {
      void* desc = desc_;
      fi_msg m{};
      m.msg_iov = &iov;
      m.desc = &desc;
      m.iov_count = 1;
      m.addr = s.to;
      m.context = &s.ctx->ctx;
      return fi_sendmsg(ep_, &m, s.flags | more);
    }
    case Staged::kWrite:
    case Staged::kRead: {
      fi_rma_iov riov{s.raddr, s.len, s.key};
      fi_msg_rma m{};
      m.msg_iov = &iov;
      m.iov_count = 1;
      m.addr = s.to;
      m.rma_iov = &riov;
      m.rma_iov_count = 1;
      m.context = &s.ctx->ctx;
      return s.kind == Staged::kWrite ? fi_writemsg(ep_, &m, s.flags | more)
                                      : fi_readmsg(ep_, &m, s.flags | more);
    }
    case Staged::kTagSend:
    case Staged::kTagRecv: {
      fi_msg_tagged m{};
      m.msg_iov = &iov;
      m.iov_count = 1;
      m.addr = s.to;
      m.tag = s.raddr;
      m.context = &s.ctx->ctx;
      return s.kind == Staged::kTagSend ? fi_tsendmsg(ep_, &m, s.flags | more)
                                        : fi_trecvmsg(ep_, &m, s.flags);
    }
  }
  return -FI_EINVAL;
}

void OfiTransport::fail_staged(const Staged& s, ssize_t rc) noexcept {
  errors_.fetch_add(1, std::memory_order_relaxed);
  if (s.kind == Staged::kSend) {
    // The caller was told TSU_OK: the message is lost, and with it the
    // pair's order, so the peer is.
    TSU_LOG_WARN("ofi: staged send to rank %u failed: %s", s.rank,
                 fi_text(static_cast<int>(rc)).c_str());
    free_tx_.push_back(static_cast<Buffer*>(s.ctx));
    declare_lost(s.rank);
    return;
  }
  const tsu_status_t st = rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP ? TSU_ERR_UNSUPPORTED
                                                                   : status_of(rc);
  static constexpr const char* kCall[] = {"sendmsg", "writemsg", "readmsg", "tsendmsg",
                                          "trecvmsg"};
  if (st != TSU_ERR_UNSUPPORTED)
    TSU_LOG_WARN("ofi: staged fi_%s with rank %u failed: %s", kCall[s.kind], s.rank,
                 fi_text(static_cast<int>(rc)).c_str());
  staged_refused_.fetch_add(1, std::memory_order_relaxed);
  if ((st == TSU_ERR_SYSTEM || st == TSU_ERR_PEER_LOST) &&
      hold_until_peer_known(static_cast<RmaContext*>(s.ctx), s.rank, st))
    return;
  try {
    faulted_.emplace_back(static_cast<RmaContext*>(s.ctx), st);  // its callback in the next poll
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory failing an RMA to rank %u", s.rank);
  }
}

void OfiTransport::post_list(std::deque<Staged>& list) noexcept {
  if (list.empty()) return;
  flushes_.fetch_add(1, std::memory_order_relaxed);
  while (!list.empty()) {
    if (lost_[list.front().rank].load(std::memory_order_acquire)) {
      fail_staged(list.front(), -FI_ENOTCONN);
      list.pop_front();
      continue;
    }
    if (list.front().kind == Staged::kSend && cfg_.bundle) bundle_sends(list);
    const Staged& s = list.front();
    const uint64_t more = list.size() > 1 ? FI_MORE : 0;
    const ssize_t rc = post(s, more, true);
    if (rc == -FI_EAGAIN) {
      // No room: this one and those behind it wait for the next poll, in
      // order (nothing new is accepted before them).
      eagain_.fetch_add(1, std::memory_order_relaxed);
      watch_backpressured(s.rank);
      if (&list != &retry_) {
        try {
          retry_.insert(retry_.end(), list.begin(), list.end());
        } catch (...) {
          for (const Staged& x : list) fail_staged(x, -FI_ENOMEM);
        }
        list.clear();
      }
      fi_cq_read(cq_, nullptr, 0);
      return;
    }
    if (rc != 0) {
      fail_staged(s, rc);
    } else {
      if (more) posted_more_.fetch_add(1, std::memory_order_relaxed);
      if (s.kind == Staged::kSend) {
        sent_.fetch_add(1, std::memory_order_relaxed);
      } else if (s.kind == Staged::kWrite || s.kind == Staged::kRead) {
        rma_ops_.fetch_add(1, std::memory_order_relaxed);
        if (s.flags & FI_INJECT) rma_injected_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    list.pop_front();
  }
}

void OfiTransport::flush_staged() noexcept {
  post_list(retry_);
  if (retry_.empty()) {
    post_list(staged_);
    return;
  }
  try {
    retry_.insert(retry_.end(), staged_.begin(), staged_.end());
  } catch (...) {
    for (const Staged& x : staged_) fail_staged(x, -FI_ENOMEM);
  }
  staged_.clear();
}

}  // namespace tsu::transport::ofi
