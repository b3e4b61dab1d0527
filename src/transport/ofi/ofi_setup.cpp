// OfiTransport's life and addresses: the provider chosen and the endpoint
// opened (open, in named steps), the objects closed, and peers' addresses
// inserted on first contact.  The other members live beside it by
// responsibility (ofi_send.cpp, ofi_completions.cpp, ofi_liveness.cpp,
// ofi_memory.cpp, ofi_stats.cpp).
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <strings.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/log.hpp"
#include "transport/ofi/fabric_library.hpp"
#include "transport/ofi/ofi_internal.hpp"
#include "transport/ofi/ofi_transport.hpp"

namespace tsu::transport::ofi {

std::string fi_text(int rc) {
  std::string ignored;
  const FabricLibrary* lib = fabric_library(ignored);
  const int e = rc < 0 ? -rc : rc;
  return lib ? std::string(lib->strerror(e)) : "error " + std::to_string(e);
}

namespace {
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

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
  if (const tsu_status_t st = find_provider(error); st != TSU_OK) return st;
  if (const tsu_status_t st = adopt_provider_limits(error); st != TSU_OK) return st;
  // rxm reads FI_OFI_RXM_EAGER_LIMIT when the domain and endpoint open.
  const ScopedEnv rxm_eager("FI_OFI_RXM_EAGER_LIMIT", rxm_eager_limit_request_);
  if (!open_endpoint(error)) return TSU_ERR_SYSTEM;
  find_nic_atomics();
  if (!read_local_name(error)) return TSU_ERR_SYSTEM;
  if (const tsu_status_t st = make_buffers(error); st != TSU_OK) return st;
  TSU_LOG_INFO("ofi: rank %u on provider %s, domain %s, max message %zu B, inject %zu B, "
               "eager tagged up to %zu B%s%s, %s, RMA %s",
               rank_, provider_name(), info_->domain_attr->name, cfg_.max_message, inject_size_,
               eager_max_, rxm_eager_limit_request_.empty() ? "" : " (FI_OFI_RXM_EAGER_LIMIT=",
               rxm_eager_limit_request_.empty() ? "" : (rxm_eager_limit_request_ + ")").c_str(),
               wait_fd_ >= 0 ? "wait fd" : cfg_.cq_wait ? "polled" : "busy polled (TSU_OFI_WAIT=none)",
               native_rma_ ? "native" : "over messages");
  return TSU_OK;
}

bool OfiTransport::step_ok(int rc, const char* what, std::string& error) const {
  if (rc == 0) return true;
  error = std::string(what) + " (" + provider_name() + "): " + fi_text(rc);
  return false;
}

tsu_status_t OfiTransport::find_provider(std::string& error) {
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
  return TSU_OK;
}

tsu_status_t OfiTransport::adopt_provider_limits(std::string& error) {
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
  // reply, done, slower than tsunagi's; docs/ofi.md, "Tagged messages eager").
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
  return TSU_OK;
}

bool OfiTransport::open_endpoint(std::string& error) {
  if (!step_ok(lib_->fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric", error) ||
      !step_ok(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain", error))
    return false;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  cq_attr.size = cfg_.rx_buffers + cfg_.tx_buffers + 16;
  // A wait descriptor costs on every completion: tcp;ofi_rxm then opens its
  // tcp queue with one too, which the provider signals (a write to a socket
  // pair) for each completion and resets (a read) in its next progress call.
  // TSU_OFI_WAIT=none opens the queue without one and never sleeps: faster
  // small operations for a core kept busy (docs/ofi.md, "Busy polling").
  cq_attr.wait_obj = cfg_.cq_wait ? FI_WAIT_FD : FI_WAIT_NONE;
  if (!cfg_.cq_wait || fi_cq_open(domain_, &cq_attr, &cq_, nullptr) != 0) {
    // No wait descriptor here: the engine polls while it "sleeps" (or, with
    // TSU_OFI_WAIT=none, does not sleep at all).
    cq_attr.wait_obj = FI_WAIT_NONE;
    if (!step_ok(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open", error)) return false;
  } else if (fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) {
    wait_fd_ = -1;
  }
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_UNSPEC;
  av_attr.count = size_;
  return step_ok(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open", error) &&
         step_ok(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint", error) &&
         step_ok(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)", error) &&
         step_ok(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)", error) &&
         step_ok(fi_enable(ep_), "fi_enable", error);
}

void OfiTransport::find_nic_atomics() {
  // Which atomics the adapter executes (nic_atomics): asked once, here.
  if (!native_rma_ || !(info_->caps & FI_ATOMIC) || !ep_->atomic) return;
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

bool OfiTransport::read_local_name(std::string& error) {
  std::size_t len = 0;
  fi_getname(&ep_->fid, nullptr, &len);
  name_.resize(len);
  if (!step_ok(fi_getname(&ep_->fid, name_.data(), &len), "fi_getname", error)) return false;
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
  return true;
}

tsu_status_t OfiTransport::make_buffers(std::string& error) {
  // Buffers: one slab, registered once where the provider needs local keys.
  const std::size_t count = std::size_t{cfg_.rx_buffers} + cfg_.tx_buffers;
  slab_.reset(new (std::nothrow) std::byte[count * buffer_size_]);
  if (!slab_) {
    error = "cannot allocate " + std::to_string(count * buffer_size_) + " B of ofi buffers";
    return TSU_ERR_NO_MEMORY;
  }
  if (info_->domain_attr->mr_mode & FI_MR_LOCAL) {
    if (!step_ok(fi_mr_reg(domain_, slab_.get(), count * buffer_size_, FI_SEND | FI_RECV, 0, 0,
                           0, &mr_, nullptr),
                 "fi_mr_reg", error))
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

}  // namespace tsu::transport::ofi
