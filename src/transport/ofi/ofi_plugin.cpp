#include "transport/ofi/ofi_plugin.hpp"

#include <arpa/inet.h>
#include <rdma/fabric.h>
#include <strings.h>

#include <cstring>
#include <set>

#include "core/log.hpp"
#include "transport/ofi/fabric_library.hpp"
#include "transport/ofi/ofi_transport.hpp"
#include "transport/network_interface.hpp"

namespace tsu::transport::ofi {

namespace {

using core::Setting;
using O = OfiConfig;

const char* const kSummary =
    "ranks on other nodes through libfabric: reliable datagram endpoints (FI_EP_RDM)\n"
    "of TSU_OFI_PROVIDER (tcp;ofi_rxm by default); messages with inject for small\n"
    "ones; put/get by fi_write/fi_read on registered segments where the provider\n"
    "offers RMA; atomics over messages, executed by the target's CPU";

// Providers whose domain is a network interface: pinned so that nothing binds
// an interface the job did not choose.
bool interface_domain(const std::string& provider) {
  // (sockets and net list one domain per interface too, eth0 first.)
  return provider.rfind("tcp", 0) == 0 || provider.rfind("udp", 0) == 0 ||
         provider.rfind("verbs", 0) == 0 || provider.rfind("sockets", 0) == 0 ||
         provider.rfind("net", 0) == 0;
}

#if TSU_FAULT_INJECTION
// Test-only (builds with TSU_FAULT_INJECTION, docs/ofi.md "Fault injection"):
// TSU_OFI_TEST_FAULT, read at connect and never listed by tsu-info.
const core::Setting<OfiConfig>& ofi_fault_setting() {
  static const core::Setting<OfiConfig> setting{"TSU_OFI_TEST_FAULT", "none",
                 "ofi, testing: make native RMA fail with ENOSYS as a provider that claims "
                 "FI_RMA and cannot do it would (rma_enosys: at the call; rma_enosys_staged: "
                 "at the call, only for writes and reads posted at the end of an engine "
                 "batch; rma_cq_enosys: in the completion); the transport falls back to "
                 "messages.  atomic_enosys / atomic_cq_enosys: NIC atomics fail so, at the "
                 "call / in the completion (a new TSU_SEG_NIC_ATOMICS segment gets CPU "
                 "atomics); atomic_enosys_late: every NIC atomic after this rank's first "
                 "fails at the call (the caller gets TSU_ERR_UNSUPPORTED).  message_lost: this "
                 "rank's 64th message is acknowledged and never sent, as a provider that "
                 "loses one would (the receiver declares it lost).  bulk_recv_refused_last: every "
                 "receive of a bulk transfer from the last rank is refused at the post "
                 "(FI_EOTHER), as tcp;ofi_rxm refuses one matching a dead sender's rendezvous",
                 "none, rma_enosys, rma_enosys_staged, rma_cq_enosys, atomic_enosys, "
                 "atomic_cq_enosys, atomic_enosys_late, message_lost or "
                 "bulk_recv_refused_last",
                 [](const char* v, OfiConfig& c) {
                   const std::string s(v);
                   if (s == "none") c.fault = RmaFault::kNone;
                   else if (s == "rma_enosys") c.fault = RmaFault::kAtCall;
                   else if (s == "rma_cq_enosys") c.fault = RmaFault::kInCompletion;
                   else if (s == "rma_enosys_staged") c.fault = RmaFault::kAtStagedCall;
                   else if (s == "atomic_enosys") c.fault = RmaFault::kAtomicAtCall;
                   else if (s == "atomic_cq_enosys") c.fault = RmaFault::kAtomicInCompletion;
                   else if (s == "atomic_enosys_late") c.fault = RmaFault::kAtomicLate;
                   else if (s == "message_lost") c.fault = RmaFault::kMessageLost;
                   else if (s == "bulk_recv_refused_last")
                     c.fault = RmaFault::kBulkRecvRefusedLast;
                   else return false;
                   return true;
                 },
                 [](const OfiConfig& c) {
                   return std::string(c.fault == RmaFault::kAtCall         ? "rma_enosys"
                                      : c.fault == RmaFault::kInCompletion ? "rma_cq_enosys"
                                      : c.fault == RmaFault::kAtStagedCall ? "rma_enosys_staged"
                                      : c.fault == RmaFault::kAtomicAtCall ? "atomic_enosys"
                                      : c.fault == RmaFault::kAtomicInCompletion
                                          ? "atomic_cq_enosys"
                                      : c.fault == RmaFault::kAtomicLate ? "atomic_enosys_late"
                                      : c.fault == RmaFault::kMessageLost ? "message_lost"
                                      : c.fault == RmaFault::kBulkRecvRefusedLast
                                          ? "bulk_recv_refused_last"
                                          : "none");
                 }};
  return setting;
}
#endif

tsu_status_t settings(const core::GetEnv& getenv, std::vector<core::SettingView>& out,
                      std::string& error) {
  OfiConfig cfg;
  const tsu_status_t st = ofi_settings().apply(cfg, getenv, error);
  out = ofi_settings().describe(cfg);
  return st;
}

tsu_status_t connect(const NetworkSetup& setup, std::unique_ptr<Transport>& out,
                     std::string& error) {
  OfiConfig oc;
  tsu_status_t st = ofi_settings().apply(oc, setup.getenv, error);
  if (st != TSU_OK) return st;
#if TSU_FAULT_INJECTION
  if (const char* v = setup.getenv(ofi_fault_setting().env);
      v && !ofi_fault_setting().parse(v, oc)) {
    error = std::string(ofi_fault_setting().env) + "='" + v +
            "' is invalid: expected " + ofi_fault_setting().expected;
    return TSU_ERR_CONFIG;
  }
#endif
  if (!oc.iface_given && interface_domain(oc.provider)) {
    // The interface that reaches the bootstrap service across hosts; for a
    // job on one host (tsurun's Unix socket), loopback.
    oc.iface = interface_of(setup.boot->reachable_address());
    if (oc.iface.empty()) oc.iface = "lo";
  }
  uint32_t job_tag = 0;
  if (setup.derive_key) {
    const auto k = setup.derive_key("tsu-ofi-job-tag");
    std::memcpy(&job_tag, k.data(), sizeof job_tag);
  }
  auto t = std::make_unique<OfiTransport>(setup.rank, setup.size, job_tag, oc);
  st = t->open(error);
  if (st != TSU_OK) return st;
  const std::string key_prefix = "tsu.ofi.";
  if (setup.boot->put(key_prefix + std::to_string(setup.rank), std::span(t->local_name())) !=
      TSU_OK) {
    error = "bootstrap put of the ofi endpoint name failed";
    return TSU_ERR_BOOTSTRAP;
  }
  // No address exchange at init: a peer's name is fetched from the
  // bootstrap and inserted into the address vector on first contact (the
  // first send or RMA to it), so a rank's start-up costs one put whatever
  // the job size (docs/scaling.md).  Ranks that only send to this one need
  // no entry here: the provider accepts them (messages carry their rank).
  t->set_name_resolver([boot = setup.boot, reach = setup.reach, key_prefix](
                           uint32_t r, std::vector<std::byte>& name) {
    // Node peers and this rank too: NIC atomics reach them through the
    // adapter (every rank of a job with several nodes has an endpoint).
    if (r >= reach.size()) return false;
    if (boot->get(key_prefix + std::to_string(r), name) != TSU_OK || name.empty()) {
      TSU_LOG_ERROR("ofi: bootstrap lookup of rank %u's endpoint name failed", r);
      return false;
    }
    return true;
  });
  out = std::move(t);
  return TSU_OK;
}

// tsu-info: every provider offering reliable datagrams here, with what it
// offers (the capabilities tsunagi looks at).
void report(std::FILE* f) {
  std::string error;
  const FabricLibrary* lib = fabric_library(error);
  if (!lib) {
    std::fprintf(f, "         (not available: %s)\n", error.c_str());
    return;
  }
  fi_info* hints = lib->allocinfo();
  if (!hints) return;
  hints->ep_attr->type = FI_EP_RDM;
  fi_info* list = nullptr;
  const int rc = lib->getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list);
  lib->freeinfo(hints);
  const uint32_t v = lib->version();
  std::fprintf(f, "         libfabric %u.%u providers with reliable datagrams here:\n",
               FI_MAJOR(v), FI_MINOR(v));
  if (rc != 0 || !list) {
    std::fprintf(f, "           (none: %s)\n", lib->strerror(-rc));
    return;
  }
  std::set<std::string> seen;
  for (fi_info* i = list; i; i = i->next) {
    std::string line = std::string(i->fabric_attr->prov_name) + " on " + i->domain_attr->name;
    if (!seen.insert(line).second) continue;
    std::string caps;
    if (i->caps & FI_MSG) caps += " msg";
    if (i->caps & FI_TAGGED) caps += " tagged";
    if (i->caps & FI_RMA) caps += " rma";
    if (i->caps & FI_ATOMIC) caps += " atomic";
    if (i->tx_attr->msg_order & FI_ORDER_SAS) caps += " ordered";
    std::fprintf(f, "           %-22s%s, inject %zu B, max message %zu B\n", line.c_str(),
                 caps.c_str(), i->tx_attr->inject_size, i->ep_attr->max_msg_size);
  }
  lib->freeinfo(list);
}

}  // namespace

const NetworkPlugin kOfiPlugin = {"ofi", kSummary, settings, connect, report};

const core::SettingsTable<OfiConfig>& ofi_settings() {
  static const core::SettingsTable<OfiConfig> table = [] {
    core::SettingsTable<OfiConfig> t{"ofi", {}};
    auto& r = t.rows;
    r.push_back(core::text_setting<O>("TSU_OFI_PROVIDER", "tcp;ofi_rxm",
                                      "ofi: libfabric provider (fi_info -l; e.g. tcp;ofi_rxm, "
                                      "udp;ofi_rxd, sockets, shm, verbs;ofi_rxm)",
                                      &O::provider, 128, "a provider name"));
    r.push_back({"TSU_OFI_IFACE", "(derived)",
                 "ofi: network interface the provider binds (default: the one reaching the "
                 "bootstrap service, else lo)",
                 "an interface name",
                 [](const char* v, O& c) {
                   if (!*v || std::strlen(v) >= IF_NAMESIZE) return false;
                   c.iface = v;
                   c.iface_given = true;
                   return true;
                 },
                 [](const O& c) { return c.iface_given ? c.iface : std::string("(derived)"); }});
    r.push_back(core::size_setting<O>("TSU_OFI_MAX_MESSAGE", "64K",
                                      "ofi: largest message; RMA is split into pieces this big",
                                      &O::max_message, 1024, 16u << 20,
                                      "a size between 1K and 16M"));
    r.push_back(core::u32_setting<O>("TSU_OFI_RX_BUFFERS", "64",
                                     "ofi: receive buffers kept posted", &O::rx_buffers, 4, 65536,
                                     false, "4..65536"));
    r.push_back(core::u32_setting<O>("TSU_OFI_TX_BUFFERS", "64",
                                     "ofi: sends in flight (beyond them TSU_EAGAIN)",
                                     &O::tx_buffers, 4, 65536, false, "4..65536"));
    r.push_back(core::bool_setting<O>("TSU_OFI_RMA", "1",
                                      "ofi: 1: put and get by the provider's RMA (fi_write, "
                                      "fi_read) where it offers it; 0: over messages",
                                      &O::native_rma));
    r.push_back(core::bool_setting<O>("TSU_OFI_BULK", "1",
                                      "ofi: 1: a large tagged message's payload moves by the "
                                      "provider's tagged send and receive (fi_tsend, fi_trecv) "
                                      "where it offers them; 0: by messages",
                                      &O::bulk));
    r.push_back({"TSU_OFI_EAGER_MAX", "auto",
                 "ofi: tagged messages to ranks on other nodes up to this size go eager (one "
                 "provider send, copied at the receiver) instead of by rendezvous, and "
                 "tcp;ofi_rxm's eager limit (FI_OFI_RXM_EAGER_LIMIT, unless set) is raised to "
                 "send them in one piece; auto: 32K on tcp;ofi_rxm (what rxm sends in one piece "
                 "where FI_OFI_RXM_EAGER_LIMIT is set or cannot apply), TSU_EAGER_MAX for other "
                 "providers; 0: TSU_EAGER_MAX; the same on every rank",
                 "auto or a size up to TSU_OFI_MAX_MESSAGE",
                 [](const char* v, O& c) {
                   if (!strcasecmp(v, "auto")) {
                     c.eager_max = OfiConfig::kEagerAuto;
                     return true;
                   }
                   std::size_t n = 0;
                   if (!core::parse_size(v, n) || n > (16u << 20)) return false;
                   c.eager_max = n;
                   return true;
                 },
                 [](const O& c) {
                   return c.eager_max == OfiConfig::kEagerAuto ? std::string("auto")
                                                              : std::to_string(c.eager_max);
                 }});
    r.push_back({"TSU_OFI_WAIT", "fd",
                 "ofi: fd: the completion queue has a wait descriptor, and an idle progress "
                 "engine sleeps on it; none: no wait object and the engine never sleeps "
                 "(busy polling: lower latency, a core per progress thread or waiting caller "
                 "busy even when idle)",
                 "fd or none",
                 [](const char* v, O& c) {
                   if (!strcasecmp(v, "fd")) c.cq_wait = true;
                   else if (!strcasecmp(v, "none")) c.cq_wait = false;
                   else return false;
                   return true;
                 },
                 [](const O& c) { return std::string(c.cq_wait ? "fd" : "none"); }});
    r.push_back(core::bool_setting<O>("TSU_OFI_BUNDLE", "1",
                                      "ofi: 1: messages staged for one peer (an engine batch, "
                                      "the replies of one poll) leave packed in one provider "
                                      "send; 0: one send each",
                                      &O::bundle));
    r.push_back(core::size_setting<O>("TSU_OFI_RMA_MESSAGE_MAX", "256",
                                      "ofi: puts and gets up to this size go over messages "
                                      "(bundled, many per provider send) instead of one "
                                      "fi_write / fi_read each; 0: native RMA at every size",
                                      &O::rma_message_max, 0, 64u << 10,
                                      "a size between 0 and 64K"));
    r.push_back(core::size_setting<O>("TSU_OFI_RMA_PIECE", "4M",
                                      "ofi: a native put or get leaves in pieces of at most "
                                      "this, one after the other; each piece's completion "
                                      "shows the peer alive (a keep-alive waits behind the "
                                      "data in the provider's stream)",
                                      &O::rma_piece, 64u << 10, SIZE_MAX,
                                      "a size of at least 64K"));
    r.push_back(core::duration_setting<O>("TSU_OFI_KEEPALIVE", "500ms",
                                          "ofi: ping a watched peer (one this rank waits on) "
                                          "silent for this long",
                                          &O::keepalive_ns, 1'000'000));
    r.push_back(core::duration_setting<O>("TSU_OFI_PEER_TIMEOUT", "10s",
                                          "ofi: a watched peer silent this long is lost "
                                          "(TSU_ERR_PEER_LOST)",
                                          &O::peer_timeout_ns, 10'000'000));
    t.finish = [](O& c) -> std::string {
      if (c.keepalive_ns >= c.peer_timeout_ns)
        return "TSU_OFI_KEEPALIVE must be shorter than TSU_OFI_PEER_TIMEOUT";
      return std::string();
    };
    return t;
  }();
  return table;
}

}  // namespace tsu::transport::ofi
