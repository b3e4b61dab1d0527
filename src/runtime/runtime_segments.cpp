// Memory segments of the runtime: announcing, allocating, registering and
// freeing them, their memory keys, and where their atomics execute.
#include "runtime/runtime.hpp"

#include <algorithm>
#include <string>

#include "core/atomic_exec.hpp"
#include "core/log.hpp"
#include "transport/message_rma/message_rma.hpp"
#include "transport/network.hpp"
#include "transport/node.hpp"

namespace tsu::runtime {

using core::atomic_op_valid;
using core::kSegmentSharedNic;

tsu_status_t Runtime::announce_segment(tsu_seg_t seg, void* base, std::size_t size,
                                       bool user_memory, std::string& error,
                                       transport::AtomicSite site) noexcept {
  transport::NativeRma* native = net_parts_.rma;
  if (!native) return TSU_OK;  // nothing to register: no NIC reaches memory
  transport::MemoryRegion region;
  region.seg = seg;
  region.base = base;
  region.size = size;
  region.user_memory = user_memory;
  region.atomics = site;
  transport::MemoryKey key;
  const tsu_status_t st = native->register_memory(region, key, error);
  if (st != TSU_OK) {
    error = std::string(net_->name()) + ": registering segment " + std::to_string(seg) + ": " +
            error;
    return st;
  }
  if (key.len) {
    try {
      std::lock_guard lock(keys_mutex_);
      memory_keys_.emplace_back(seg, key);
    } catch (...) {
      native->deregister_memory(seg);
      error = "out of memory recording a segment's key";
      return TSU_ERR_NO_MEMORY;
    }
  }
  return TSU_OK;
}

bool Runtime::memory_key(tsu_seg_t seg, transport::MemoryKey& out) const noexcept {
  std::lock_guard lock(keys_mutex_);
  for (const auto& [s, key] : memory_keys_)
    if (s == seg) {
      out = key;
      return true;
    }
  return false;
}

bool Runtime::atomic_site(tsu_seg_t seg, transport::AtomicSite& out) const noexcept {
  std::byte* p = nullptr;
  uint32_t state = 0;
  if (segments_.translate(seg, 0, 0, p, &state) != TSU_OK) return false;
  out = state == kSegmentSharedNic ? transport::AtomicSite::kNic : transport::AtomicSite::kCpu;
  return true;
}

bool Runtime::atomics_on_nic(const tsu_gaddr_t& target) const noexcept {
  transport::MemoryAccess* t = mem_routes_[target.rank];
  transport::Access a;
  return t && t->resolve(target, 0, a) == TSU_OK && a.nic_atomics;
}

// The rule (docs/ofi.md): NIC atomics only where the network transport
// executes every (type, op) tsu_try_atomic offers, so a segment's site is
// fixed at its birth and never depends on which atomic a program uses.
std::string Runtime::nic_atomics_refusal() const {
  if (!net_)
    return "this job has no network transport (every rank is on this node; shared memory "
           "has no adapter to execute atomics)";
  if (!rma_)
    return std::string("TSU_NET=") + net_->name() + " has no RMA protocol of its own";
  static constexpr tsu_atype_t kTypes[] = {TSU_TYPE_INT32, TSU_TYPE_UINT32, TSU_TYPE_INT64,
                                           TSU_TYPE_UINT64, TSU_TYPE_DOUBLE};
  for (const tsu_atype_t type : kTypes)
    for (int o = TSU_AOP_LOAD; o <= TSU_AOP_XOR; ++o) {
      const auto op = static_cast<tsu_aop_t>(o);
      if (atomic_op_valid(op, type) && !(net_parts_.rma && net_parts_.rma->nic_atomics(type, op)))
        return std::string("TSU_NET=") + net_->name() + " cannot execute atomic op " +
               std::to_string(o) + " on type " + std::to_string(static_cast<int>(type)) +
               " in the network adapter" +
               (cfg_.net == "ofi" ? " (needs native RMA and a provider with FI_ATOMIC)" : "");
    }
  return {};
}

void Runtime::make_cpu_atomics(tsu_seg_t seg) noexcept { segments_.make_cpu_atomics(seg); }

tsu_status_t Runtime::allocate_segment(std::size_t size, tsu_seg_t& seg, void*& base,
                                       std::string& error, bool nic_atomics) noexcept {
  if (nic_atomics) {
    try {
      error = nic_atomics_refusal();
    } catch (...) {
      error = "out of memory";
      return TSU_ERR_NO_MEMORY;
    }
    if (!error.empty()) {
      error = "TSU_SEG_NIC_ATOMICS refused: " + error;
      return TSU_ERR_UNSUPPORTED;
    }
  }
  tsu_status_t st = segments_.allocate(size, seg, base, error, nic_atomics);
  if (st != TSU_OK) return st;
  st = announce_segment(seg, base, size, false, error,
                        nic_atomics ? transport::AtomicSite::kNic : transport::AtomicSite::kCpu);
  if (st != TSU_OK) {
    std::string ignored;
    segments_.free(seg, ignored);
  }
  return st;
}

tsu_status_t Runtime::register_segment(void* base, std::size_t size, tsu_seg_t& seg,
                                       std::string& error) noexcept {
  tsu_status_t st = segments_.register_memory(base, size, seg, error);
  if (st != TSU_OK) return st;
  st = announce_segment(seg, base, size, true, error);
  if (st != TSU_OK) {
    std::string ignored;
    segments_.free(seg, ignored);
  }
  return st;
}

tsu_status_t Runtime::free_segment(tsu_seg_t seg, std::string& error) noexcept {
  void* base = nullptr;
  std::size_t size = 0;
  transport::AtomicSite site = transport::AtomicSite::kCpu;
  const bool nic = atomic_site(seg, site) && site == transport::AtomicSite::kNic;
  if (net_parts_.rma && segments_.info(seg, base, size)) {
    // A NIC segment keeps its registration (closed with the transport) and
    // its memory (unmapped with the table): issuers cache its key, and an
    // access under a closed key tears tcp;ofi_rxm's connection down.  Its
    // key leaves the list, so no issuer learns it anew.
    if (!nic) net_parts_.rma->deregister_memory(seg);
    std::lock_guard lock(keys_mutex_);
    std::erase_if(memory_keys_, [seg](const auto& e) { return e.first == seg; });
  }
  return segments_.free(seg, error, nic);
}

}  // namespace tsu::runtime
