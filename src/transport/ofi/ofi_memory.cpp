// OfiTransport's registered memory and the operations on it: segments
// registered for native RMA and NIC atomics, native writes and reads (staged
// in a batch), and NIC atomics (posted at once, after what was staged).
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cstring>

#include "core/log.hpp"
#include "transport/ofi/ofi_internal.hpp"
#include "transport/ofi/ofi_rma.hpp"
#include "transport/ofi/ofi_transport.hpp"
#include "util/clock.hpp"

namespace tsu::transport::ofi {

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
  if (cfg_.faulty(RmaFault::kInCompletion)) return fail_in_completion(ctx);
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
  const bool late = cfg_.faulty(RmaFault::kAtomicLate) && atomic_posted_;
  if (cfg_.faulty(RmaFault::kAtomicAtCall) || late) return TSU_ERR_UNSUPPORTED;
  if (cfg_.faulty(RmaFault::kAtomicInCompletion)) return fail_in_completion(ctx);
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

}  // namespace tsu::transport::ofi
