#include "transport/ofi/ofi_transport.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <poll.h>
#include <strings.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/log.hpp"
#include "transport/ofi/fabric_library.hpp"
#include "transport/ofi/ofi_rma.hpp"
#include "util/clock.hpp"

namespace tsu::transport::ofi {

namespace {
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
constexpr int kCqBatch = 32;

// libfabric's text for an error (the library is loaded before any call that
// can fail with one).
std::string fi_text(int rc) {
  std::string ignored;
  const FabricLibrary* lib = fabric_library(ignored);
  const int e = rc < 0 ? -rc : rc;
  return lib ? std::string(lib->strerror(e)) : "error " + std::to_string(e);
}

// An environment variable set, where it was unset, for the life of this
// object (an empty value sets nothing), and unset again after: providers
// read their settings with getenv when a domain or endpoint opens, and a
// value tsunagi chose should not reach endpoints other libraries open later.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (!value.empty() && !std::getenv(name)) set_ = setenv(name, value.c_str(), 0) == 0;
  }
  ~ScopedEnv() {
    if (set_) unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool set_ = false;
};

// A libfabric size setting from the environment, `fallback` where it is
// unset or not a number.
std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 0);
  return end != v && *end == '\0' ? static_cast<std::size_t>(n) : fallback;
}

// A libfabric boolean setting turned off (0, off, false, no).
bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && (!std::strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "false") ||
               !strcasecmp(v, "no"));
}

// A transport-level string copy libfabric frees with fi_freeinfo.
char* dup(const std::string& s) { return strdup(s.c_str()); }

// The shm provider's regions (/dev/shm/<endpoint name>) of this process's
// open endpoints.  The provider unlinks them when the endpoint closes and in
// its own SIGINT/SIGTERM handler; a process that ends by exit() without
// tsu_finalize (e.g. from the application's own SIGTERM handler, which
// replaces the provider's) would leave them behind, so exit unlinks them
// too.  (The mappings stay valid: only the names go.)
std::mutex g_shm_mu;
std::vector<std::string> g_shm_names;  // under g_shm_mu
void unlink_shm_names() {
  std::lock_guard lock(g_shm_mu);
  for (const std::string& n : g_shm_names) shm_unlink(n.c_str());
  g_shm_names.clear();
}
void remember_shm_name(const std::string& n) {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(unlink_shm_names); });
  std::lock_guard lock(g_shm_mu);
  g_shm_names.push_back(n);
}
void forget_shm_name(const std::string& n) {
  std::lock_guard lock(g_shm_mu);
  std::erase(g_shm_names, n);
}
}  // namespace

OfiTransport::OfiTransport(uint32_t rank, uint32_t size, uint32_t job_tag, const OfiConfig& cfg)
    : rank_(rank),
      size_(size),
      job_tag_(job_tag),
      cfg_(cfg),
      peers_(new std::atomic<fi_addr_t>[size]),
      send_seq_(size, 0),
      recv_seq_(size, 0),
      lost_(new std::atomic<bool>[size]),
      watches_(size),
      watch_slot_(size, kNotWatching),
      heard_ns_(size, 0),
      watch_since_ns_(size, 0),
      pinged_ns_(size, 0),
      backpressured_(size, 0),
      backpressured_ns_(size, 0) {
  watching_.reserve(size);  // the poller's push_back never allocates
  for (uint32_t r = 0; r < size; ++r) {
    lost_[r].store(false, std::memory_order_relaxed);
    peers_[r].store(FI_ADDR_UNSPEC, std::memory_order_relaxed);
  }
}

OfiTransport::~OfiTransport() {
  // Endpoint first (it holds the queue and address vector), the fabric last.
  if (ep_) fi_close(&ep_->fid);
  free_bulk_pending();
  if (!shm_name_.empty()) forget_shm_name(shm_name_);
  for (auto& [seg, mr] : regions_) fi_close(&mr->fid);
  if (mr_) fi_close(&mr_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) lib_->freeinfo(info_);
}

const char* OfiTransport::provider_name() const noexcept {
  return info_ && info_->fabric_attr && info_->fabric_attr->prov_name
             ? info_->fabric_attr->prov_name
             : "?";
}

// libfabric before 2.4: rxd's fi_send returns success and drops the message
// when the endpoint's transmit entries are used up (upstream a0e431f, "fix
// return of EAGAIN when not enough tx entries"), and its injects hold such
// entries until the peer acknowledges them, beyond anything this transport
// can count (an inject has no completion).  A stream of small replies then
// used them all and a later send vanished: the pair's sequence stopped at
// the gap and every request behind it hung.  Its FI_INJECT sends also lose
// their context (the completion names none, so the buffer never came
// back).  So there every message is a send with a completion, and what rxd
// holds is what TSU_OFI_TX_BUFFERS lets be in flight (clamped to its
// transmit size).
bool OfiTransport::messages_need_completions() const noexcept {
  const char* prov = provider_name();
  return std::strstr(prov, "ofi_rxd") != nullptr && lib_->version() < FI_VERSION(2, 4);
}

// The eager limit of tagged messages to other nodes (0: TSU_EAGER_MAX), and
// the eager limit rxm is asked for (rxm_eager_limit_request_) so that it
// sends such a message in one piece.
//
// tcp;ofi_rxm (libfabric 1.17) sends a message at once up to its eager
// limit: the larger of FI_OFI_RXM_BUFFER_SIZE (16 KiB: the bounce buffers it
// posts) and, over tcp with direct send and dynamic receive buffers (both on
// by default), FI_OFI_RXM_EAGER_LIMIT.  The latter costs no memory: such a
// message lands in the receive posted for it, or in a buffer rxm allocates
// when it is unexpected.  A larger message takes rxm's read rendezvous.  Both
// ends of a connection must have the same limit (rxm refuses the connection
// otherwise), so every rank derives it from the same settings.
std::size_t OfiTransport::rxm_eager_plan() {
  rxm_eager_limit_request_.clear();
  const bool is_auto = cfg_.eager_max == OfiConfig::kEagerAuto;
  if (cfg_.eager_max == 0) return 0;
  const char* prov = provider_name();
  if (!std::strstr(prov, "ofi_rxm"))
    return is_auto ? 0 : std::min(cfg_.eager_max, cfg_.max_message);
  const std::size_t want = std::min(is_auto ? kRxmTcpEagerAuto : cfg_.eager_max, cfg_.max_message);
  const std::size_t buffer = env_size("FI_OFI_RXM_BUFFER_SIZE", 16384);
  const bool limit_applies = std::strncmp(prov, "tcp;", 4) == 0 &&
                             !env_off("FI_OFI_RXM_ENABLE_DYN_RBUF") &&
                             !env_off("FI_OFI_RXM_ENABLE_DIRECT_SEND");
  std::size_t piece = buffer;
  if (limit_applies) {
    if (std::getenv("FI_OFI_RXM_EAGER_LIMIT")) {
      piece = std::max(piece, env_size("FI_OFI_RXM_EAGER_LIMIT", 0));
    } else {
      rxm_eager_limit_request_ = std::to_string(want + kPrefix);
      piece = std::max(piece, want + kPrefix);
    }
  }
  if (!is_auto) return want;
  return std::min(piece > kPrefix ? piece - kPrefix : 0, cfg_.max_message);
}

tsu_status_t OfiTransport::open(std::string& error) {
  lib_ = fabric_library(error);
  if (!lib_) return TSU_ERR_UNREACHABLE;
  fi_info* hints = lib_->allocinfo();
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
  // The entry of the pinned interface: tcp;ofi_rxm in libfabric 1.17 lists
  // every interface's domain (eth0 first) whatever the domain name hint says,
  // so the list is searched rather than its first entry taken.
  auto query = [&](uint64_t caps) {
    hints->caps = caps;
    fi_info* list = nullptr;
    const int r = lib_->getinfo(kApiVersion, nullptr, nullptr, 0, hints, &list);
    if (r != 0 || !list) return r != 0 ? r : -FI_ENODATA;
    fi_info* chosen = cfg_.iface.empty() ? list : nullptr;
    for (fi_info* i = list; i && !chosen; i = i->next)
      if (i->domain_attr && i->domain_attr->name && cfg_.iface == i->domain_attr->name) chosen = i;
    if (chosen) info_ = lib_->dupinfo(chosen);
    lib_->freeinfo(list);
    return info_ ? 0 : -FI_ENODATA;
  };
  // RMA (and atomics, for TSU_SEG_NIC_ATOMICS segments) where the provider
  // offers it; messages alone otherwise.
  // Each with FI_TAGGED first (bulk payloads, TSU_OFI_BULK), then without.
  int rc = -FI_ENODATA;
  const uint64_t tagged = cfg_.bulk ? FI_TAGGED : 0;
  for (const uint64_t caps : {uint64_t{FI_MSG | FI_RMA | FI_ATOMIC}, uint64_t{FI_MSG | FI_RMA},
                              uint64_t{FI_MSG}}) {
    if ((caps & FI_RMA) && !cfg_.native_rma) continue;
    if (tagged) rc = query(caps | tagged);
    if (!info_) rc = query(caps);
    if (info_) break;
  }
  lib_->freeinfo(hints);
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
  // Tagged messages to other nodes go eager up to what the provider sends in
  // one piece (a larger one takes rxm's own rendezvous: request, read, read
  // reply, done; a 16 KiB message ~2x slower than tsunagi's, docs/ofi.md).
  eager_max_ = rxm_eager_plan();
  inject_size_ = info_->tx_attr->inject_size;
  msg_inject_size_ = inject_size_;
  if (messages_need_completions()) {
    msg_inject_size_ = 0;
    if (info_->tx_attr->size && cfg_.tx_buffers > info_->tx_attr->size)
      cfg_.tx_buffers = static_cast<uint32_t>(info_->tx_attr->size);
    TSU_LOG_DEBUG("ofi: %s before libfabric 2.4: every message is a send with a completion, "
                  "at most %u in flight", provider_name(), cfg_.tx_buffers);
  }
  const uint64_t mr_mode = info_->domain_attr->mr_mode;
  // Native RMA needs no registration of the local side: a put's source may
  // be any memory of this process (FI_MR_LOCAL providers use messages).
  native_rma_ = cfg_.native_rma && (info_->caps & FI_RMA) && !(mr_mode & FI_MR_LOCAL);
  // Bulk payloads go from and to the user's buffers, registered nowhere.
  // Not where the provider drops sends beyond its transmit entries
  // (messages_need_completions): bulk sends are not counted against them.
  bulk_ = cfg_.bulk && (info_->caps & FI_TAGGED) && !(mr_mode & FI_MR_LOCAL) &&
          !messages_need_completions();
  virt_addr_ = mr_mode & FI_MR_VIRT_ADDR;
  prov_key_ = mr_mode & FI_MR_PROV_KEY;
  max_rma_ = max_msg;
  rma_flags_ = FI_COMPLETION | FI_DELIVERY_COMPLETE;

  auto step = [&](int r, const char* what) {
    if (r == 0) return true;
    error = std::string(what) + " (" + provider_name() + "): " + fi_text(r);
    return false;
  };
  // rxm reads FI_OFI_RXM_EAGER_LIMIT when the domain and endpoint open.
  const ScopedEnv rxm_eager("FI_OFI_RXM_EAGER_LIMIT", rxm_eager_limit_request_);
  if (!step(lib_->fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric") ||
      !step(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain"))
    return TSU_ERR_SYSTEM;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  cq_attr.size = cfg_.rx_buffers + cfg_.tx_buffers + 16;
  // A wait descriptor costs on every completion: tcp;ofi_rxm then opens its
  // tcp queue with one too, which the provider signals (a write to a socket
  // pair) for each completion and resets (a read) in its next progress call.
  // TSU_OFI_WAIT=none opens the queue without one and never sleeps: 8 B
  // put/get/fetch-add 1.2-1.3x faster (docs/benchmarks-ofi.md, "8-byte latency").
  cq_attr.wait_obj = cfg_.cq_wait ? FI_WAIT_FD : FI_WAIT_NONE;
  if (!cfg_.cq_wait || fi_cq_open(domain_, &cq_attr, &cq_, nullptr) != 0) {
    // No wait descriptor here: the engine polls while it "sleeps" (or, with
    // TSU_OFI_WAIT=none, does not sleep at all).
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
  // Which atomics the adapter executes (nic_atomics): asked once, here.
  if (native_rma_ && (info_->caps & FI_ATOMIC) && ep_->atomic) {
    for (int t = TSU_TYPE_INT32; t <= TSU_TYPE_DOUBLE; ++t)
      for (int o = TSU_AOP_LOAD; o <= TSU_AOP_XOR; ++o) {
        FiAtomic a;
        if (!fi_atomic_of(static_cast<tsu_aop_t>(o), static_cast<tsu_atype_t>(t), a)) continue;
        std::size_t count = 0;
        const int v = a.kind == FiAtomic::kPlain   ? fi_atomicvalid(ep_, a.datatype, a.op, &count)
                      : a.kind == FiAtomic::kFetch ? fi_fetch_atomicvalid(ep_, a.datatype, a.op,
                                                                          &count)
                                                   : fi_compare_atomicvalid(ep_, a.datatype,
                                                                            a.op, &count);
        nic_valid_[t][o] = v == 0 && count >= 1;
      }
  }
  std::size_t len = 0;
  fi_getname(&ep_->fid, nullptr, &len);
  name_.resize(len);
  if (!step(fi_getname(&ep_->fid, name_.data(), &len), "fi_getname")) return TSU_ERR_SYSTEM;
  name_.resize(len);
  if (std::string(provider_name()) == "shm") {
    // The name is the region's, "fi_shm://" aside (see remember_shm_name).
    std::string n(reinterpret_cast<const char*>(name_.data()),
                  std::find(name_.begin(), name_.end(), std::byte{0}) - name_.begin());
    if (n.rfind("fi_shm://", 0) == 0) n.erase(0, 9);
    if (!n.empty() && n.find('/') == std::string::npos) {
      shm_name_ = "/" + n;
      try {
        remember_shm_name(shm_name_);
      } catch (...) {
        shm_name_.clear();
      }
    }
  }

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
    buffers_[i].kind = i < cfg_.rx_buffers ? OpContext::kRecv : OpContext::kSend;
    if (buffers_[i].kind == OpContext::kSend) free_tx_.push_back(&buffers_[i]);
  }
  unposted_.reserve(cfg_.rx_buffers);
  for (uint32_t i = 0; i < cfg_.rx_buffers; ++i) {
    if (post_recv(buffers_[i]) == TSU_ERR_SYSTEM) {
      error = "fi_recv: cannot post the receive buffers";
      return TSU_ERR_SYSTEM;
    }
  }
  TSU_LOG_INFO("ofi: rank %u on provider %s, domain %s, max message %zu B, inject %zu B, "
               "eager tagged up to %zu B%s%s, %s, RMA %s",
               rank_, provider_name(), info_->domain_attr->name, cfg_.max_message, inject_size_,
               eager_max_, rxm_eager_limit_request_.empty() ? "" : " (FI_OFI_RXM_EAGER_LIMIT=",
               rxm_eager_limit_request_.empty() ? "" : (rxm_eager_limit_request_ + ")").c_str(),
               wait_fd_ >= 0 ? "wait fd" : cfg_.cq_wait ? "polled" : "busy polled (TSU_OFI_WAIT=none)",
               native_rma_ ? "native" : "over messages");
  return TSU_OK;
}

tsu_status_t OfiTransport::add_peer(uint32_t rank, const std::vector<std::byte>& name,
                                    std::string& error) {
  fi_addr_t addr = FI_ADDR_UNSPEC;
  std::lock_guard lock(mu_);
  if (peers_[rank].load(std::memory_order_relaxed) != FI_ADDR_UNSPEC) return TSU_OK;
  const int n = fi_av_insert(av_, name.data(), 1, &addr, 0, nullptr);
  if (n != 1) {
    error = "fi_av_insert of rank " + std::to_string(rank) + "'s address failed";
    return TSU_ERR_UNREACHABLE;
  }
  peers_[rank].store(addr, std::memory_order_release);
  av_inserts_.fetch_add(1, std::memory_order_relaxed);
  return TSU_OK;
}

fi_addr_t OfiTransport::peer_address(uint32_t rank) noexcept {
  const fi_addr_t a = peers_[rank].load(std::memory_order_acquire);
  if (a != FI_ADDR_UNSPEC || !resolve_) return a;
  // First contact: the peer's name from the bootstrap, outside the lock so
  // the engine keeps polling meanwhile.  Two threads may both look it up the
  // first time; add_peer inserts it once.
  try {
    std::vector<std::byte> name;
    std::string error;
    if (!resolve_(rank, name) || name.empty()) return FI_ADDR_UNSPEC;
    if (add_peer(rank, name, error) != TSU_OK) {
      TSU_LOG_ERROR("ofi: %s", error.c_str());
      return FI_ADDR_UNSPEC;
    }
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory looking up rank %u's address", rank);
    return FI_ADDR_UNSPEC;
  }
  return peers_[rank].load(std::memory_order_acquire);
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
  if (cfg_.fault == RmaFault::kMessageLost && ++fault_sends_ == 64) {
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

// Records in one buffer start at multiples of 8 (the header's alignment).
static constexpr std::size_t record_start(std::size_t at) noexcept { return (at + 7) & ~std::size_t{7}; }

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
      (cfg_.fault == RmaFault::kAtCall || (staged && cfg_.fault == RmaFault::kAtStagedCall)))
    return -FI_ENOSYS;
  if (s.kind == Staged::kTagRecv && s.rank == size_ - 1 &&
      cfg_.fault == RmaFault::kBulkRecvRefusedLast)
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

bool OfiTransport::hold_until_peer_known(RmaContext* ctx, uint32_t rank,
                                         tsu_status_t status) noexcept {
  if (!ctx || rank >= size_ || rank == rank_ || lost_[rank].load(std::memory_order_acquire))
    return false;
  try {
    doubtful_.push_back({ctx, rank, status, util::now_ns()});
  } catch (...) {
    return false;
  }
  doubtful_held_.fetch_add(1, std::memory_order_relaxed);
  watch_backpressured(rank);
  return true;
}

bool OfiTransport::doubtful_settleable() const noexcept {
  return std::any_of(doubtful_.begin(), doubtful_.end(), [this](const Doubtful& d) {
    return lost_[d.rank].load(std::memory_order_acquire) ||
           heard_ns_[d.rank] >= d.since_ns + cfg_.keepalive_ns;
  });
}

void OfiTransport::settle_doubtful() noexcept {
  for (std::size_t i = 0; i < doubtful_.size();) {
    const Doubtful d = doubtful_[i];
    const bool lost = lost_[d.rank].load(std::memory_order_acquire);
    // Heard a whole keep-alive interval after the refusal: not a message it
    // sent before dying and this rank read late.
    if (!lost && heard_ns_[d.rank] < d.since_ns + cfg_.keepalive_ns) {
      ++i;
      continue;
    }
    try {
      faulted_.emplace_back(d.ctx, lost ? TSU_ERR_PEER_LOST : d.status);
    } catch (...) {
      return;  // no memory: the next poll tries again
    }
    doubtful_[i] = doubtful_.back();
    doubtful_.pop_back();
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

void OfiTransport::declare_lost(uint32_t rank, const char* why, bool tell_it) noexcept {
  if (rank >= size_ || lost_[rank].exchange(true, std::memory_order_acq_rel)) return;
  TSU_LOG_WARN("ofi: rank %u is lost (%s)", rank, why);
  cancel_bulk(rank);
  try {
    newly_lost_.push_back(rank);
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory reporting rank %u lost", rank);
  }
  // Best effort, with an address already known (no bootstrap lookup under
  // mu_): should the notice not arrive, the rank's next ping gets one.
  if (const fi_addr_t to = peers_[rank].load(std::memory_order_acquire);
      tell_it && to != FI_ADDR_UNSPEC)
    send_control(rank, to, kLost);
}

void OfiTransport::watch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  watches_.watch(rank);
}

void OfiTransport::unwatch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  watches_.unwatch(rank);
}

// The provider refused an operation to `rank` for want of room.  A live peer
// drains it; a dead one never does: over tcp;ofi_rxm, sends and writes to a
// rank whose connection never came up return -FI_EAGAIN forever, and a
// staged operation stuck that way holds up every later one (retry_).  So the
// rank is watched until it has been heard from and nothing of it is stuck
// (release_backpressured): keep-alives, and TSU_ERR_PEER_LOST once it is
// silent past TSU_OFI_PEER_TIMEOUT (the udp route's retransmission timeout,
// in effect).  One watch per rank however often it refuses.  Called with mu_
// held, on any thread.
void OfiTransport::watch_backpressured(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_ || backpressured_[rank]) return;
  try {
    backpressured_list_.push_back(rank);
  } catch (const std::bad_alloc&) {
    return;  // not watched: the next refusal tries again
  }
  backpressured_[rank] = 1;
  backpressured_ns_[rank] = util::now_ns();
  watches_.watch(rank);
}

void OfiTransport::release_backpressured() noexcept {
  for (std::size_t i = 0; i < backpressured_list_.size();) {
    const uint32_t r = backpressured_list_[i];
    // Heard: a message, a pong or a send completion since the refusal (the
    // peer is alive and draining).  Stuck: an operation of it still waits
    // for room; its next refusal would watch it again at once.
    const bool lost = lost_[r].load(std::memory_order_acquire);
    const bool heard = heard_ns_[r] > backpressured_ns_[r];
    const bool stuck = std::any_of(retry_.begin(), retry_.end(),
                                   [r](const Staged& s) { return s.rank == r; }) ||
                       std::any_of(doubtful_.begin(), doubtful_.end(),
                                   [r](const Doubtful& d) { return d.rank == r; });
    if (!lost && (!heard || stuck)) {
      ++i;
      continue;
    }
    backpressured_[r] = 0;
    backpressured_list_[i] = backpressured_list_.back();
    backpressured_list_.pop_back();
    watches_.unwatch(r);
  }
}

bool OfiTransport::send_control(uint32_t dst, fi_addr_t to, uint32_t kind) noexcept {
  // The sequence field says how many messages this rank has handed the
  // provider for dst, plus one (0: no count, while some wait to be posted),
  // so that the receiver can tell one went missing (note_gap).
  const bool counted = staged_.empty() && retry_.empty();
  const WirePrefix prefix{rank_, job_tag_, counted ? send_seq_[dst] + 1 : 0, kind};
  ssize_t rc;
  if (sizeof prefix <= msg_inject_size_) {
    rc = fi_inject(ep_, &prefix, sizeof prefix, to);
  } else {
    if (free_tx_.empty()) return false;
    Buffer* b = free_tx_.back();
    std::memcpy(b->data, &prefix, sizeof prefix);
    b->dst = dst;
    rc = fi_send(ep_, b->data, sizeof prefix, desc_, to, &b->ctx);
    if (rc == 0) free_tx_.pop_back();  // a failure completes with an error: lost
  }
  if (rc == 0) {
    (kind == kPing ? pings_ : kind == kPong ? pongs_ : lost_notices_)
        .fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (rc == -FI_EAGAIN) {
    fi_cq_read(cq_, nullptr, 0);  // a progress nudge for manual providers
    return false;
  }
  errors_.fetch_add(1, std::memory_order_relaxed);
  TSU_LOG_DEBUG("ofi: keep-alive to rank %u failed: %s", dst,
                fi_text(static_cast<int>(rc)).c_str());
  if (status_of(rc) == TSU_ERR_PEER_LOST) declare_lost(dst, "a keep-alive to it failed");
  return false;
}

void OfiTransport::keepalive(uint64_t now) noexcept {
  // Time this rank did not poll (manual progress and a long computation, or
  // a progress thread that got no CPU) is not the peers' silence: what they
  // sent meanwhile waited unread in our queue.  Watches that were running
  // before such a pause count their silence without it.
  const uint64_t pause = last_keepalive_ns_ ? now - last_keepalive_ns_ : 0;
  last_keepalive_ns_ = now;
  if (pause > cfg_.keepalive_ns)
    for (uint32_t r : watching_)
      watch_since_ns_[r] = std::min(now, std::max(watch_since_ns_[r], heard_ns_[r]) + pause);
  if (watches_.changed()) {
    // Watches that started or ended since the last look.  A new one counts
    // silence from now: what was heard, or not, while nothing watched the
    // peer is stale (a peer idle for an hour is not lost the moment a wait
    // on it starts).
    watches_.drain([&](uint32_t r, bool watched) {
      const bool in = watch_slot_[r] != kNotWatching;
      if (watched && !in && !lost_[r].load(std::memory_order_acquire)) {
        watching_.push_back(r);  // reserved for every rank: no allocation
        watch_slot_[r] = static_cast<uint32_t>(watching_.size() - 1);
        watch_since_ns_[r] = now;
        pinged_ns_[r] = 0;
      } else if (!watched && in) {
        stop_watching(r);  // nothing waits on it any more: no more pings
        watch_ends_.fetch_add(1, std::memory_order_relaxed);
      }
    });
    // No tick forced: a new watch's first ping and timeout are an interval
    // away, and receives posted one after another start and end watches at
    // every message.
  }
  if (watching_.empty() || now < next_tick_ns_) {
    watched_now_.store(static_cast<uint32_t>(watching_.size()), std::memory_order_relaxed);
    return;
  }
  next_tick_ns_ = now + cfg_.keepalive_ns / 4;
  {
    std::lock_guard lock(mu_);
    if (!backpressured_list_.empty()) release_backpressured();
  }
  for (std::size_t i = 0; i < watching_.size();) {
    const uint32_t r = watching_[i];
    if (lost_[r].load(std::memory_order_acquire)) {
      stop_watching(r);  // lost: no more pings (watching_[i] is another rank now)
      continue;
    }
    ++i;
    const uint64_t silent = now - std::max(heard_ns_[r], watch_since_ns_[r]);
    if (silent >= cfg_.peer_timeout_ns) {
      silent_lost_.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(mu_);
      declare_lost(r, "silent past TSU_OFI_PEER_TIMEOUT");
      continue;
    }
    if (silent < cfg_.keepalive_ns || now - pinged_ns_[r] < cfg_.keepalive_ns) continue;
    const fi_addr_t to = peer_address(r);  // outside mu_: may ask the bootstrap
    if (to == FI_ADDR_UNSPEC) continue;    // no address yet: the timeout still runs
    std::lock_guard lock(mu_);
    if (send_control(r, to, kPing)) pinged_ns_[r] = now;
  }
  watched_now_.store(static_cast<uint32_t>(watching_.size()), std::memory_order_relaxed);
}

void OfiTransport::stop_watching(uint32_t rank) noexcept {
  const uint32_t slot = watch_slot_[rank];
  const uint32_t moved = watching_.back();
  watching_[slot] = moved;
  watch_slot_[moved] = slot;
  watching_.pop_back();
  watch_slot_[rank] = kNotWatching;
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

namespace {
bool descriptor_readable(int fd) noexcept {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}
}  // namespace

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
  // them (a wake-up per put: ~35 us instead of ~14 on a quiet 2-core VM,
  // docs/benchmarks-ofi.md).  The queue's descriptor is readable while the
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
    ssize_t n;
    std::vector<uint32_t> lost;
    {
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
    }
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
      if (c->kind == OpContext::kRma) {
        auto* r = static_cast<RmaContext*>(c);
        // Written at the peer, read from it, or its atomic's value back.
        if (watching && r->peer < size_) heard_ns_[r->peer] = now;
        r->done(r, TSU_OK);
        continue;
      }
      auto* b = static_cast<Buffer*>(c);
      if (b->kind == OpContext::kSend) {
        // A send the peer's side took: it is alive (a watched peer we only
        // stream to may not answer a ping that waits behind our data).
        if (watching) heard_ns_[b->dst] = now;
        std::lock_guard lock(mu_);
        free_tx_.push_back(b);
        continue;
      }
      // A message: prefix, header, payload.  Anything malformed is dropped.
      WirePrefix prefix;
      core::MessageHeader h;
      const std::size_t len = entries[i].len;
      if (len == sizeof prefix) {
        // A keep-alive: consumed here, outside the pair's sequence.
        std::memcpy(&prefix, b->data, sizeof prefix);
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
        post_recv(*b);
        continue;
      }
      // One message, or a bundle of them (bundle_sends): records back to
      // back, each starting at a multiple of 8, each checked on its own.
      // A malformed record drops it and the rest of the buffer.
      for (std::size_t at = 0; at < len;) {
        const std::size_t left = len - at;
        bool ok = left >= kPrefix;
        if (ok) {
          std::memcpy(&prefix, b->data + at, sizeof prefix);
          std::memcpy(&h, b->data + at + sizeof prefix, sizeof h);
          ok = prefix.job_tag == job_tag_ && prefix.src_rank < size_ && prefix.reserved == 0 &&
               kPrefix + std::size_t{h.payload_len} <= left;
        }
        if (!ok) {
          dropped_.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        heard_ns_[prefix.src_rank] = now;
        const std::size_t record = kPrefix + h.payload_len;
        deliver(handlers, prefix, b->data + at, record);
        at = record_start(at + record);
      }
      std::lock_guard lock(mu_);
      post_recv(*b);
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

void OfiTransport::note_gap(uint32_t src, uint32_t need_seq) noexcept {
  if (lost_[src].load(std::memory_order_relaxed)) return;
  try {
    auto [it, fresh] = gaps_.try_emplace(src, Gap{util::now_ns(), need_seq, recv_seq_[src]});
    // A later look may see more missing; the wait counts from the first.
    if (!fresh && static_cast<int32_t>(need_seq - it->second.need_seq) > 0)
      it->second.need_seq = need_seq;
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory noting a gap in rank %u's messages", src);
  }
}

void OfiTransport::check_gaps() noexcept {
  const uint64_t now = util::now_ns();
  // Time nobody polled does not count (manual progress, a long computation):
  // what was missing may be in the completion queue, unread.
  const uint64_t pause = last_gap_check_ns_ ? now - last_gap_check_ns_ : 0;
  last_gap_check_ns_ = now;
  const bool paused = pause > cfg_.peer_timeout_ns / 8;
  for (auto it = gaps_.begin(); it != gaps_.end();) {
    // (Only for gaps open before the pause began.)
    if (paused && it->second.since_ns <= now - pause) it->second.since_ns += pause;
    const uint32_t src = it->first;
    if (static_cast<int32_t>(recv_seq_[src] - it->second.need_seq) >= 0 ||
        lost_[src].load(std::memory_order_relaxed)) {
      it = gaps_.erase(it);  // closed: what was missing arrived (or the peer is gone)
      continue;
    }
    if (recv_seq_[src] != it->second.at_seq) {
      // Still short, but moving: a large message in flight (tcp;ofi_rxm
      // completes a rendezvous receive after later small ones) is slow, not
      // lost.  Loss is one message missing for the whole timeout.
      it->second.at_seq = recv_seq_[src];
      it->second.since_ns = now;
    }
    if (now <= it->second.since_ns || now - it->second.since_ns < cfg_.peer_timeout_ns) {
      ++it;
      continue;
    }
    TSU_LOG_ERROR("ofi: message %u from rank %u never arrived though the provider took it "
                  "(%u sent): the provider lost it",
                  recv_seq_[src], src, it->second.need_seq);
    it = gaps_.erase(it);
    // What is held behind the hole can never run in order.
    held_.erase(held_.lower_bound(uint64_t{src} << 32),
                held_.lower_bound(uint64_t{src + 1} << 32));
    std::lock_guard lock(mu_);
    declare_lost(src, "a message from it was lost by the provider", /*tell_it=*/true);
  }
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

std::unique_ptr<RmaProtocol> OfiTransport::make_rma(RmaHost& host) noexcept {
  if (!native_rma_) return nullptr;  // the message emulation
  try {
    return std::make_unique<OfiRma>(host, *this);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

tsu_status_t OfiTransport::register_memory(const MemoryRegion& region, MemoryKey& key,
                                           std::string& error) noexcept {
  // Native RMA reaches the main segment, which lives as long as the job,
  // and NIC atomics reach TSU_SEG_NIC_ATOMICS segments, whose registration
  // stays until the transport closes (Runtime::free_segment keeps it).
  // Other segments are reached by messages: the providers here
  // (tcp;ofi_rxm) treat an access under a key the target closed as a fatal
  // connection error, so a freed segment's stale id must be refused by the
  // target's CPU, as on every other route, never by its NIC.
  const bool nic = region.atomics == AtomicSite::kNic;
  if (!native_rma_ || (region.seg != TSU_SEG_MAIN && !nic)) return TSU_OK;  // no key
  std::lock_guard lock(mu_);
  fid_mr* mr = nullptr;
  // Without provider keys the key is the segment id, unique per generation:
  // a stale id's key names no region, so the target's NIC refuses it.
  const int rc = fi_mr_reg(domain_, region.base, region.size, FI_REMOTE_READ | FI_REMOTE_WRITE,
                           0, prov_key_ ? 0 : uint64_t{region.seg}, 0, &mr, nullptr);
  if (rc != 0) {
    error = std::string("fi_mr_reg (") + provider_name() + ", " + std::to_string(region.size) +
            " B): " + fi_text(rc);
    return rc == -FI_ENOMEM ? TSU_ERR_NO_MEMORY : TSU_ERR_SYSTEM;
  }
  try {
    regions_[region.seg] = mr;
  } catch (...) {
    fi_close(&mr->fid);
    error = "out of memory recording a memory region";
    return TSU_ERR_NO_MEMORY;
  }
  rma_target_.store(true, std::memory_order_relaxed);
  const WireKey wk{fi_mr_key(mr), virt_addr_ ? reinterpret_cast<uint64_t>(region.base) : 0,
                   region.size};
  static_assert(sizeof wk <= sizeof key.bytes);
  std::memcpy(key.bytes.data(), &wk, sizeof wk);
  key.len = sizeof wk;
  return TSU_OK;
}

void OfiTransport::deregister_memory(tsu_seg_t seg) noexcept {
  std::lock_guard lock(mu_);
  auto it = regions_.find(seg);
  if (it == regions_.end()) return;
  fi_close(&it->second->fid);
  regions_.erase(it);
}

tsu_status_t OfiTransport::rma_write(uint32_t rank, const void* buf, std::size_t len,
                                     uint64_t raddr, uint64_t key, RmaContext* ctx) noexcept {
  return rma(true, rank, const_cast<void*>(buf), len, raddr, key, ctx);
}

tsu_status_t OfiTransport::rma_read(uint32_t rank, void* buf, std::size_t len, uint64_t raddr,
                                    uint64_t key, RmaContext* ctx) noexcept {
  return rma(false, rank, buf, len, raddr, key, ctx);
}

tsu_status_t OfiTransport::rma(bool write, uint32_t rank, void* buf, std::size_t len,
                               uint64_t raddr, uint64_t key, RmaContext* ctx) noexcept {
  fi_addr_t to;
  if (const tsu_status_t st = rma_peer(rank, ctx, to); st != TSU_OK) return st;
  Staged s;
  s.kind = write ? Staged::kWrite : Staged::kRead;
  s.rank = rank;
  s.to = to;
  s.buf = buf;
  s.len = len;
  s.raddr = raddr;
  s.key = key;
  s.ctx = ctx;
  // A write completes once delivered at the target (the put's contract:
  // FI_DELIVERY_COMPLETE); small ones are copied by the provider at the call
  // (FI_INJECT, still with a completion).  A read completes once its data is
  // here.
  s.flags = write ? rma_flags_ | (len <= inject_size_ ? FI_INJECT : 0) : FI_COMPLETION;
  std::lock_guard lock(mu_);
  if (cfg_.fault == RmaFault::kInCompletion) return fail_in_completion(ctx);
  if (!retry_.empty()) return nudge_eagain();  // staged operations wait for room first
  if (batching_) {
    try {
      staged_.push_back(s);
    } catch (...) {
      return TSU_ERR_NO_MEMORY;
    }
    if (staged_.size() >= kMaxStaged) flush_staged();
    return TSU_OK;
  }
  const ssize_t rc = post(s, 0, false);
  if (rc == 0) {
    rma_ops_.fetch_add(1, std::memory_order_relaxed);
    if (s.flags & FI_INJECT) rma_injected_.fetch_add(1, std::memory_order_relaxed);
  }
  return post_status(rc, rank, write ? "fi_writemsg" : "fi_readmsg", ctx);
}

tsu_status_t OfiTransport::rma_peer(uint32_t rank, RmaContext* ctx, fi_addr_t& to) noexcept {
  if (rank >= size_) return TSU_ERR_UNREACHABLE;
  if (lost_[rank].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
  to = peer_address(rank);
  if (to == FI_ADDR_UNSPEC) return TSU_ERR_UNREACHABLE;
  ctx->kind = OpContext::kRma;
  ctx->peer = rank;
  return TSU_OK;
}

tsu_status_t OfiTransport::fail_in_completion(RmaContext* ctx) noexcept {
  try {
    faulted_.emplace_back(ctx, TSU_ERR_UNSUPPORTED);
    return TSU_OK;  // fails with ENOSYS in the next poll
  } catch (...) {
    return TSU_ERR_NO_MEMORY;
  }
}

tsu_status_t OfiTransport::nudge_eagain() noexcept {
  fi_cq_read(cq_, nullptr, 0);  // a progress nudge for manual providers
  return TSU_EAGAIN;
}

tsu_status_t OfiTransport::post_status(ssize_t rc, uint32_t rank, const char* what,
                                       RmaContext* ctx) noexcept {
  if (rc == 0) return TSU_OK;
  // A provider that listed FI_RMA or FI_ATOMIC and cannot do it: the caller
  // falls back (OfiRma) or reports TSU_ERR_UNSUPPORTED (NIC atomics).
  if (rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP) return TSU_ERR_UNSUPPORTED;
  if (rc == -FI_EAGAIN) {
    if (rank != rank_) watch_backpressured(rank);  // never watch ourselves
    return nudge_eagain();
  }
  TSU_LOG_WARN("ofi: %s with rank %u failed: %s", what, rank,
               fi_text(static_cast<int>(rc)).c_str());
  const tsu_status_t st = status_of(rc);
  // Perhaps the peer died: its callback says so once that is known.
  if ((st == TSU_ERR_SYSTEM || st == TSU_ERR_PEER_LOST) && hold_until_peer_known(ctx, rank, st))
    return TSU_OK;
  return st;
}

bool OfiTransport::nic_atomics(tsu_atype_t type, tsu_aop_t op) const noexcept {
  if (static_cast<unsigned>(type) > TSU_TYPE_DOUBLE || static_cast<unsigned>(op) > TSU_AOP_XOR)
    return false;
  return nic_valid_[type][op];
}

tsu_status_t OfiTransport::atomic(uint32_t rank, const FiAtomic& a, const void* operand,
                                  const void* compare, void* result, uint64_t raddr,
                                  uint64_t key, RmaContext* ctx) noexcept {
  fi_addr_t to;  // this rank's own too: the owner goes through it
  if (const tsu_status_t st = rma_peer(rank, ctx, to); st != TSU_OK) return st;
  std::lock_guard lock(mu_);
  // TSU_OFI_TEST_FAULT: a provider that lists FI_ATOMIC and refuses it.
  const bool late = cfg_.fault == RmaFault::kAtomicLate && atomic_posted_;
  if (cfg_.fault == RmaFault::kAtomicAtCall || late) return TSU_ERR_UNSUPPORTED;
  if (cfg_.fault == RmaFault::kAtomicInCompletion) return fail_in_completion(ctx);
  if (!retry_.empty()) return nudge_eagain();  // staged operations wait for room first
  // Not staged: what the batch staged so far leaves first, then this.
  if (!staged_.empty()) {
    flush_staged();
    if (!retry_.empty()) return TSU_EAGAIN;
  }
  fi_ioc src{const_cast<void*>(operand), 1};
  fi_rma_ioc dst{raddr, 1, key};
  fi_msg_atomic m{};
  m.msg_iov = &src;
  m.iov_count = 1;
  m.addr = to;
  m.rma_iov = &dst;
  m.rma_iov_count = 1;
  m.datatype = a.datatype;
  m.op = a.op;
  m.context = &ctx->ctx;
  // Delivery complete, like a put: the callback promises the word changed.
  const uint64_t flags = FI_COMPLETION | FI_DELIVERY_COMPLETE;
  fi_ioc res{result, 1};
  fi_ioc cmp{const_cast<void*>(compare), 1};
  ssize_t rc;
  switch (a.kind) {
    case FiAtomic::kPlain: rc = fi_atomicmsg(ep_, &m, flags); break;
    case FiAtomic::kFetch: rc = fi_fetch_atomicmsg(ep_, &m, &res, nullptr, 1, flags); break;
    default: rc = fi_compare_atomicmsg(ep_, &m, &cmp, nullptr, 1, &res, nullptr, 1, flags); break;
  }
  if (rc == 0) {
    atomic_posted_ = true;
    atomics_.fetch_add(1, std::memory_order_relaxed);
  }
  return post_status(rc, rank, "NIC atomic", ctx);
}

void OfiTransport::print_stats(std::FILE* f) const noexcept {
  std::fprintf(f,
               "tsunagi[%u] ofi stats: provider=%s sent=%llu injected=%llu received=%llu "
               "dropped=%llu eagain=%llu errors=%llu held_early=%llu rma_ops=%llu "
               "rma_fallbacks=%llu rma_injected=%llu posted_with_more=%llu batch_flushes=%llu "
               "av_inserts=%llu staged_rma_refused=%llu pings=%llu pongs=%llu silent_lost=%llu "
               "watched=%u watch_ends=%llu bundled=%llu nic_atomics=%llu nic_atomics_refused=%llu "
               "served_unseen=%llu lost_notices=%llu lost_by_notice=%llu bulk_sends=%llu "
               "bulk_recvs=%llu bulk_cancels=%llu held_refusals=%llu\n",
               rank_, provider_name(), static_cast<unsigned long long>(sent_.load()),
               static_cast<unsigned long long>(injected_.load()),
               static_cast<unsigned long long>(received_.load()),
               static_cast<unsigned long long>(dropped_.load()),
               static_cast<unsigned long long>(eagain_.load()),
               static_cast<unsigned long long>(errors_.load()),
               static_cast<unsigned long long>(held_count_.load()),
               static_cast<unsigned long long>(rma_ops_.load()),
               static_cast<unsigned long long>(rma_fallbacks_.load()),
               static_cast<unsigned long long>(rma_injected_.load()),
               static_cast<unsigned long long>(posted_more_.load()),
               static_cast<unsigned long long>(flushes_.load()),
               static_cast<unsigned long long>(av_inserts_.load()),
               static_cast<unsigned long long>(staged_refused_.load()),
               static_cast<unsigned long long>(pings_.load()),
               static_cast<unsigned long long>(pongs_.load()),
               static_cast<unsigned long long>(silent_lost_.load()),
               watched_now_.load(), static_cast<unsigned long long>(watch_ends_.load()),
               static_cast<unsigned long long>(bundled_.load()),
               static_cast<unsigned long long>(atomics_.load()),
               static_cast<unsigned long long>(atomic_refused_.load()),
               static_cast<unsigned long long>(served_unseen_.load()),
               static_cast<unsigned long long>(lost_notices_.load()),
               static_cast<unsigned long long>(lost_by_notice_.load()),
               static_cast<unsigned long long>(bulk_sends_.load()),
               static_cast<unsigned long long>(bulk_recvs_.load()),
               static_cast<unsigned long long>(bulk_cancels_.load()),
               static_cast<unsigned long long>(doubtful_held_.load()));
}

}  // namespace tsu::transport::ofi
