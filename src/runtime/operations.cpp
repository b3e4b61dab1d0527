// Executing RMA and atomics on memory this process can reach.  Called in the
// issuing thread (bypass) or by the executor; the target's segment table is
// consulted here, so a bad range fails where the request is applied.
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/atomic_exec.hpp"
#include "core/log.hpp"
#include "core/vector_request.hpp"
#include "runtime/runtime.hpp"

namespace tsu::runtime {

using core::atomic_execute;
using core::atomic_op_fetches;
using core::atomic_store_result;
using core::atomic_type_size;

using transport::Access;

namespace {

// process_vm_{read,write}v may transfer less than asked: loop until done.
tsu_status_t cross_memory(bool write, pid_t pid, std::byte* local, uint64_t remote,
                          std::size_t len) noexcept {
  while (len) {
    iovec l{local, len};
    iovec r{reinterpret_cast<void*>(remote), len};
    const ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                            : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // The process is gone: its rank is lost, whichever check notices first.
      if (errno == ESRCH) return TSU_ERR_PEER_LOST;
      TSU_LOG_WARN("process_vm_%sv(pid %d, %zu B) failed: %s", write ? "write" : "read",
                   static_cast<int>(pid), len, std::strerror(errno));
      return TSU_ERR_SYSTEM;
    }
    if (n == 0) return TSU_ERR_SYSTEM;
    local += n;
    remote += static_cast<uint64_t>(n);
    len -= static_cast<std::size_t>(n);
  }
  return TSU_OK;
}

tsu_status_t copy_between(const Access& dst, const Access& src, std::size_t len) noexcept {
  if (dst.kind == Access::kDirect && src.kind == Access::kDirect) {
    std::memmove(dst.ptr, src.ptr, len);
    return TSU_OK;
  }
  if (dst.kind == Access::kDirect) return cross_memory(false, src.pid, dst.ptr, src.remote_addr, len);
  if (src.kind == Access::kDirect) return cross_memory(true, dst.pid, src.ptr, dst.remote_addr, len);
  // Both sides are other processes' registered memory: bounce through a
  // per-thread buffer, a chunk at a time.
  constexpr std::size_t kChunk = 1u << 20;
  thread_local std::vector<std::byte> bounce;
  if (bounce.size() < kChunk) bounce.resize(kChunk);
  for (std::size_t done = 0; done < len;) {
    const std::size_t n = std::min(kChunk, len - done);
    tsu_status_t st = cross_memory(false, src.pid, bounce.data(), src.remote_addr + done, n);
    if (st == TSU_OK) st = cross_memory(true, dst.pid, bounce.data(), dst.remote_addr + done, n);
    if (st != TSU_OK) return st;
    done += n;
  }
  return TSU_OK;
}

}  // namespace

tsu_status_t Runtime::execute_copy(const tsu_gaddr_t& dst, const tsu_gaddr_t& src,
                                   std::size_t len) noexcept {
  // Both sides in main segments mapped here (the engine's common case, like
  // the bypass in write_direct/read_direct): no transport call.
  if (dst.seg == TSU_SEG_MAIN && src.seg == TSU_SEG_MAIN) [[likely]] {
    const DirectMain& d = direct_main_[dst.rank];
    const DirectMain& s = direct_main_[src.rank];
    std::byte* d_base = d.mapped();
    const std::byte* s_base = s.mapped();
    if (d_base && s_base) [[likely]] {
      if (dst.offset > d.size || len > d.size - dst.offset || src.offset > s.size ||
          len > s.size - src.offset)
        return TSU_ERR_OUT_OF_BOUNDS;
      std::memmove(d_base + dst.offset, s_base + src.offset, len);
      return TSU_OK;
    }
  }
  transport::MemoryAccess* td = mem_routes_[dst.rank];
  transport::MemoryAccess* ts = mem_routes_[src.rank];
  if (!td || !ts) return TSU_ERR_UNREACHABLE;
  Access a_dst, a_src;
  tsu_status_t st = td->resolve(dst, len, a_dst);
  if (st == TSU_OK) st = ts->resolve(src, len, a_src);
  if (st != TSU_OK) return st;
  if (len == 0) return TSU_OK;
  return copy_between(a_dst, a_src, len);
}

tsu_status_t Runtime::copy_access(const Access& dst, const Access& src,
                                  std::size_t len) noexcept {
  return len ? copy_between(dst, src, len) : TSU_OK;
}

tsu_status_t Runtime::execute_atomic(const tsu_gaddr_t& target, tsu_aop_t op, tsu_atype_t type,
                                     uint64_t operand, uint64_t compare, void* result,
                                     bool* nic_route) noexcept {
  transport::MemoryAccess* t = mem_routes_[target.rank];
  if (!t) return TSU_ERR_UNREACHABLE;
  const std::size_t width = atomic_type_size(type);
  Access a;
  // A main segment mapped here is a CPU segment (never NIC atomics, never
  // registered memory): resolved inline, like the bypass put/get.
  const DirectMain& m = direct_main_[target.rank];
  std::byte* base = m.mapped();
  if (target.seg == TSU_SEG_MAIN && base) [[likely]] {
    if (target.offset > m.size || width > m.size - target.offset) return TSU_ERR_OUT_OF_BOUNDS;
    a = Access{Access::kDirect, base + target.offset, 0, 0};
  } else if (const tsu_status_t st = t->resolve(target, width, a); st != TSU_OK) {
    return st;
  }
  // A NIC segment's words belong to the adapter (seed 002): never a CPU
  // atomic here, whoever asks.
  if (a.nic_atomics) {
    if (!nic_route) return TSU_ERR_UNSUPPORTED;
    *nic_route = true;
    return TSU_OK;
  }
  // Registered user memory: copies only, on every route (Access::copies_only).
  if (a.kind != Access::kDirect || a.copies_only) return TSU_ERR_UNSUPPORTED;
  if (reinterpret_cast<uintptr_t>(a.ptr) % width) return TSU_ERR_MISALIGNED;
  const uint64_t old = atomic_execute(a.ptr, op, type, operand, compare);
  if (result && atomic_op_fetches(op)) atomic_store_result(result, type, old);
  return TSU_OK;
}

tsu_status_t Runtime::resolve(const tsu_gaddr_t& addr, std::size_t len,
                              Access& out) const noexcept {
  transport::MemoryAccess* t = mem_routes_[addr.rank];
  if (!t) return TSU_ERR_UNREACHABLE;
  return t->resolve(addr, len, out);
}

tsu_status_t Runtime::read_memory(const tsu_gaddr_t& src, void* dst, std::size_t len) noexcept {
  Access a;
  const tsu_status_t st = resolve(src, len, a);
  if (st != TSU_OK || len == 0) return st;
  if (a.kind == Access::kDirect) {
    std::memmove(dst, a.ptr, len);  // may overlap when the rank is the caller
    return TSU_OK;
  }
  return cross_memory(false, a.pid, static_cast<std::byte*>(dst), a.remote_addr, len);
}

tsu_status_t Runtime::write_memory(const tsu_gaddr_t& dst, const void* src,
                                   std::size_t len) noexcept {
  Access a;
  const tsu_status_t st = resolve(dst, len, a);
  if (st != TSU_OK || len == 0) return st;
  if (a.kind == Access::kDirect) {
    std::memmove(a.ptr, src, len);  // may overlap when the rank is the caller
    return TSU_OK;
  }
  return cross_memory(true, a.pid, const_cast<std::byte*>(static_cast<const std::byte*>(src)),
                      a.remote_addr, len);
}

tsu_status_t Runtime::execute(const Command& cmd, uint32_t completion_id) noexcept {
  tsu_status_t st;
  // A side behind the network transport: its RMA protocol (transport/rma.hpp).
  const bool remote = cmd.kind == CommandKind::kCopy
                          ? !memory_route(cmd.dst.rank) || !memory_route(cmd.src.rank)
                          : !memory_route(cmd.dst.rank);
  if (remote) {
    // The protocol owns a vector request from here (it frees it when done).
    if (!rma_ && cmd.kind == CommandKind::kVector) delete vector_of(cmd);
    st = rma_ ? rma_->start(cmd, completion_id) : TSU_ERR_UNREACHABLE;
    if (st != kStarted && st != TSU_OK)
      TSU_LOG_DEBUG("remote request to rank %u failed: %s", cmd.dst.rank, tsu_strerror(st));
    return st;
  }
  if (cmd.kind == CommandKind::kCopy) {
    st = execute_copy(cmd.dst, cmd.src, cmd.len);
  } else if (cmd.kind == CommandKind::kVector) {
    st = execute_vector(vector_of(cmd)->view());
    delete vector_of(cmd);
  } else {
    bool nic = false;
    st = execute_atomic(cmd.dst, static_cast<tsu_aop_t>(cmd.aop),
                        static_cast<tsu_atype_t>(cmd.atype), cmd.operand, cmd.compare, cmd.result,
                        &nic);
    // A NIC segment of this rank or a node peer: the network transport's
    // protocol, like a remote rank's (needs a completion record).
    if (nic) {
      if (rma_ && completion_id != UINT32_MAX) return rma_->start(cmd, completion_id);
      st = TSU_ERR_UNSUPPORTED;
    }
  }
  if (st != TSU_OK) {
    TSU_LOG_DEBUG("request to rank %u segment %u offset %llu failed at the target: %s",
                  cmd.dst.rank, cmd.dst.seg, static_cast<unsigned long long>(cmd.dst.offset),
                  tsu_strerror(st));
  }
  return st;
}

}  // namespace tsu::runtime
