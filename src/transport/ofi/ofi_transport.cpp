#include "transport/ofi/ofi_transport.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <cstring>

#include "core/log.hpp"

namespace tsu::transport::ofi {

namespace {
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
constexpr int kCqBatch = 32;

std::string fi_text(int rc) { return std::string(fi_strerror(rc < 0 ? -rc : rc)); }

// A transport-level string copy libfabric frees with fi_freeinfo.
char* dup(const std::string& s) { return strdup(s.c_str()); }
}  // namespace

OfiTransport::OfiTransport(uint32_t rank, uint32_t size, uint32_t job_tag, const OfiConfig& cfg)
    : rank_(rank),
      size_(size),
      job_tag_(job_tag),
      cfg_(cfg),
      peers_(size, FI_ADDR_UNSPEC),
      send_seq_(size, 0),
      recv_seq_(size, 0),
      lost_(new std::atomic<bool>[size]) {
  for (uint32_t r = 0; r < size; ++r) lost_[r].store(false, std::memory_order_relaxed);
}

OfiTransport::~OfiTransport() {
  // Endpoint first (it holds the queue and address vector), the fabric last.
  if (ep_) fi_close(&ep_->fid);
  if (mr_) fi_close(&mr_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
}

const char* OfiTransport::provider_name() const noexcept {
  return info_ && info_->fabric_attr && info_->fabric_attr->prov_name
             ? info_->fabric_attr->prov_name
             : "?";
}

tsu_status_t OfiTransport::open(std::string& error) {
  fi_info* hints = fi_allocinfo();
  if (!hints) {
    error = "fi_allocinfo failed";
    return TSU_ERR_NO_MEMORY;
  }
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT;
  // Our buffers are registered when the provider asks (FI_MR_LOCAL); the
  // other modes concern RMA keys, which the message emulation needs none of.
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;  // calls are serialised by mu_
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->fabric_attr->prov_name = dup(cfg_.provider);
  if (!cfg_.iface.empty()) hints->domain_attr->name = dup(cfg_.iface);
  int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &info_);
  fi_freeinfo(hints);
  if (rc != 0 || !info_) {
    error = "no libfabric provider '" + cfg_.provider + "'" +
            (cfg_.iface.empty() ? std::string() : " on interface " + cfg_.iface) +
            " offers reliable datagrams with ordered messages (fi_getinfo: " + fi_text(rc) +
            "); tsu-info lists the providers here";
    info_ = nullptr;
    return TSU_ERR_UNREACHABLE;
  }
  if (!(info_->tx_attr->msg_order & FI_ORDER_SAS)) {
    error = std::string("provider ") + provider_name() + " does not keep messages in order";
    return TSU_ERR_UNSUPPORTED;
  }
  const std::size_t max_msg = info_->ep_attr->max_msg_size;
  if (max_msg < kPrefix + 1024) {
    error = "provider's largest message (" + std::to_string(max_msg) + " B) is too small";
    return TSU_ERR_UNSUPPORTED;
  }
  if (cfg_.max_message + kPrefix > max_msg) cfg_.max_message = max_msg - kPrefix;
  buffer_size_ = (kPrefix + cfg_.max_message + 63) & ~std::size_t{63};
  inject_size_ = info_->tx_attr->inject_size;

  auto step = [&](int r, const char* what) {
    if (r == 0) return true;
    error = std::string(what) + " (" + provider_name() + "): " + fi_text(r);
    return false;
  };
  if (!step(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric") ||
      !step(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain"))
    return TSU_ERR_SYSTEM;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  cq_attr.size = cfg_.rx_buffers + cfg_.tx_buffers + 16;
  cq_attr.wait_obj = FI_WAIT_FD;
  if (fi_cq_open(domain_, &cq_attr, &cq_, nullptr) != 0) {
    // No wait descriptor here: the engine polls while it "sleeps".
    cq_attr.wait_obj = FI_WAIT_NONE;
    if (!step(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open")) return TSU_ERR_SYSTEM;
  } else if (fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) {
    wait_fd_ = -1;
  }
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_UNSPEC;
  av_attr.count = size_;
  if (!step(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open") ||
      !step(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint") ||
      !step(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)") ||
      !step(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)") ||
      !step(fi_enable(ep_), "fi_enable"))
    return TSU_ERR_SYSTEM;
  std::size_t len = 0;
  fi_getname(&ep_->fid, nullptr, &len);
  name_.resize(len);
  if (!step(fi_getname(&ep_->fid, name_.data(), &len), "fi_getname")) return TSU_ERR_SYSTEM;
  name_.resize(len);

  // Buffers: one slab, registered once where the provider needs local keys.
  const std::size_t count = std::size_t{cfg_.rx_buffers} + cfg_.tx_buffers;
  slab_.reset(new (std::nothrow) std::byte[count * buffer_size_]);
  if (!slab_) {
    error = "cannot allocate " + std::to_string(count * buffer_size_) + " B of ofi buffers";
    return TSU_ERR_NO_MEMORY;
  }
  if (info_->domain_attr->mr_mode & FI_MR_LOCAL) {
    if (!step(fi_mr_reg(domain_, slab_.get(), count * buffer_size_, FI_SEND | FI_RECV, 0, 0, 0,
                        &mr_, nullptr),
              "fi_mr_reg"))
      return TSU_ERR_SYSTEM;
    desc_ = fi_mr_desc(mr_);
  }
  buffers_.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    buffers_[i].data = slab_.get() + i * buffer_size_;
    buffers_[i].is_recv = i < cfg_.rx_buffers;
    if (!buffers_[i].is_recv) free_tx_.push_back(&buffers_[i]);
  }
  unposted_.reserve(cfg_.rx_buffers);
  for (uint32_t i = 0; i < cfg_.rx_buffers; ++i) {
    if (post_recv(buffers_[i]) == TSU_ERR_SYSTEM) {
      error = "fi_recv: cannot post the receive buffers";
      return TSU_ERR_SYSTEM;
    }
  }
  TSU_LOG_INFO("ofi: rank %u on provider %s, domain %s, max message %zu B, inject %zu B, %s",
               rank_, provider_name(), info_->domain_attr->name, cfg_.max_message, inject_size_,
               wait_fd_ >= 0 ? "wait fd" : "polled");
  return TSU_OK;
}

tsu_status_t OfiTransport::add_peer(uint32_t rank, const std::vector<std::byte>& name,
                                    std::string& error) {
  fi_addr_t addr = FI_ADDR_UNSPEC;
  std::lock_guard lock(mu_);
  const int n = fi_av_insert(av_, name.data(), 1, &addr, 0, nullptr);
  if (n != 1) {
    error = "fi_av_insert of rank " + std::to_string(rank) + "'s address failed";
    return TSU_ERR_UNREACHABLE;
  }
  peers_[rank] = addr;
  return TSU_OK;
}

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

tsu_status_t OfiTransport::status_of(ssize_t rc) const noexcept {
  switch (-rc) {
    case FI_EAGAIN: return TSU_EAGAIN;
    case FI_ENOMEM: return TSU_ERR_NO_MEMORY;
    case FI_EINVAL: return TSU_ERR_INVALID_ARG;
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_EHOSTUNREACH:
    case FI_ENOTCONN: return TSU_ERR_PEER_LOST;
    default: return TSU_ERR_SYSTEM;
  }
}

tsu_status_t OfiTransport::send_message(uint32_t dst, const core::MessageHeader& header,
                                        const void* payload) noexcept {
  if (dst >= size_ || peers_[dst] == FI_ADDR_UNSPEC) return TSU_ERR_UNREACHABLE;
  if (header.payload_len > cfg_.max_message) return TSU_ERR_INVALID_ARG;
  if (lost_[dst].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
  const std::size_t total = kPrefix + header.payload_len;
  std::lock_guard lock(mu_);
  const WirePrefix prefix{rank_, job_tag_, send_seq_[dst], 0};
  if (total <= inject_size_) {
    // Small: the provider copies it at once; no completion, no buffer held.
    alignas(8) std::byte small[512];
    if (total <= sizeof small) {
      std::memcpy(small, &prefix, sizeof prefix);
      std::memcpy(small + sizeof prefix, &header, sizeof header);
      if (header.payload_len) std::memcpy(small + kPrefix, payload, header.payload_len);
      const ssize_t rc = fi_inject(ep_, small, total, peers_[dst]);
      if (rc == 0) {
        ++send_seq_[dst];
        injected_.fetch_add(1, std::memory_order_relaxed);
        return TSU_OK;
      }
      if (rc == -FI_EAGAIN) {
        eagain_.fetch_add(1, std::memory_order_relaxed);
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
  const ssize_t rc = fi_send(ep_, b->data, total, desc_, peers_[dst], &b->ctx);
  if (rc == 0) {
    ++send_seq_[dst];
    free_tx_.pop_back();
    sent_.fetch_add(1, std::memory_order_relaxed);
    return TSU_OK;
  }
  if (rc == -FI_EAGAIN) {
    eagain_.fetch_add(1, std::memory_order_relaxed);
    fi_cq_read(cq_, nullptr, 0);
    return TSU_EAGAIN;
  }
  errors_.fetch_add(1, std::memory_order_relaxed);
  TSU_LOG_WARN("ofi: fi_send to rank %u failed: %s", dst, fi_text(static_cast<int>(rc)).c_str());
  return status_of(rc);
}

void OfiTransport::declare_lost(uint32_t rank) noexcept {
  if (rank >= size_ || lost_[rank].exchange(true, std::memory_order_acq_rel)) return;
  TSU_LOG_WARN("ofi: rank %u is lost (a send to it failed)", rank);
  newly_lost_.push_back(rank);
}

// Called with mu_ held, after fi_cq_read said FI_EAVAIL.
void OfiTransport::handle_error_entry() noexcept {
  fi_cq_err_entry err{};
  if (fi_cq_readerr(cq_, &err, 0) != 1) return;
  errors_.fetch_add(1, std::memory_order_relaxed);
  auto* b = static_cast<Buffer*>(err.op_context);
  if (err.err == FI_ECANCELED) return;  // closing
  if (!b) {
    TSU_LOG_WARN("ofi: completion error without context: %s", fi_text(err.err).c_str());
    return;
  }
  if (b->is_recv) {
    // A receive that failed (truncated: a message larger than ours): drop it
    // and give the buffer back.
    dropped_.fetch_add(1, std::memory_order_relaxed);
    TSU_LOG_WARN("ofi: receive failed: %s", fi_text(err.err).c_str());
    post_recv(*b);
    return;
  }
  TSU_LOG_WARN("ofi: send to rank %u failed: %s (%s)", b->dst, fi_text(err.err).c_str(),
               fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0));
  free_tx_.push_back(b);
  declare_lost(b->dst);
}

std::size_t OfiTransport::poll(const core::MessageHandlerTable& handlers) noexcept {
  fi_cq_msg_entry entries[kCqBatch];
  std::size_t work = 0;
  for (;;) {
    ssize_t n;
    std::vector<uint32_t> lost;
    {
      std::lock_guard lock(mu_);
      for (std::size_t k = unposted_.size(); k > 0; --k) {
        Buffer* u = unposted_.front();
        unposted_.erase(unposted_.begin());
        if (post_recv(*u) != TSU_OK) break;
      }
      n = fi_cq_read(cq_, entries, kCqBatch);
      if (n == -FI_EAVAIL) handle_error_entry();
      lost.swap(newly_lost_);
    }
    for (uint32_t r : lost)
      if (lost_fn_) lost_fn_(lost_ctx_, r);
    if (n == -FI_EAVAIL) {
      ++work;
      continue;
    }
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      auto* b = static_cast<Buffer*>(entries[i].op_context);
      if (!b) continue;
      ++work;
      if (!b->is_recv) {
        std::lock_guard lock(mu_);
        free_tx_.push_back(b);
        continue;
      }
      // A message: prefix, header, payload.  Anything malformed is dropped.
      WirePrefix prefix;
      core::MessageHeader h;
      const std::size_t len = entries[i].len;
      bool ok = len >= kPrefix;
      if (ok) {
        std::memcpy(&prefix, b->data, sizeof prefix);
        std::memcpy(&h, b->data + sizeof prefix, sizeof h);
        ok = prefix.job_tag == job_tag_ && prefix.src_rank < size_ &&
             kPrefix + std::size_t{h.payload_len} == len;
      }
      if (ok)
        deliver(handlers, prefix, b->data, len);
      else
        dropped_.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(mu_);
      post_recv(*b);
    }
    if (n < kCqBatch) break;
  }
  return work;
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
  if (wait_fd_ < 0) return true;  // polled every max_sleep_ns
  std::lock_guard lock(mu_);
  fid* fids[1] = {&cq_->fid};
  // FI_SUCCESS: nothing pending, the descriptor will signal new work.
  return fi_trywait(fabric_, fids, 1) == FI_SUCCESS;
}

void OfiTransport::print_stats(std::FILE* f) const noexcept {
  std::fprintf(f,
               "tsunagi[%u] ofi stats: provider=%s sent=%llu injected=%llu received=%llu "
               "dropped=%llu eagain=%llu errors=%llu held_early=%llu\n",
               rank_, provider_name(), static_cast<unsigned long long>(sent_.load()),
               static_cast<unsigned long long>(injected_.load()),
               static_cast<unsigned long long>(received_.load()),
               static_cast<unsigned long long>(dropped_.load()),
               static_cast<unsigned long long>(eagain_.load()),
               static_cast<unsigned long long>(errors_.load()),
               static_cast<unsigned long long>(held_count_.load()));
}

}  // namespace tsu::transport::ofi
