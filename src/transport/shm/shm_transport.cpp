#include "transport/shm/shm_transport.hpp"

#include "core/log.hpp"
#include "core/shared_memory.hpp"

namespace tsu::transport {

using core::SegmentSlot;

ShmTransport::~ShmTransport() {
  for (auto& peer : peers_) {
    if (!peer) continue;
    for (uint32_t s = 0; s < core::kMaxSegments; ++s)
      core::shared_region_unmap(peer->bases[s].load(std::memory_order_relaxed),
                                peer->mapped_size[s]);
    core::shared_region_unmap(const_cast<core::ControlBlock*>(peer->cb),
                              sizeof(core::ControlBlock));
  }
}

void ShmTransport::init(uint32_t size) { peers_.resize(size); }

tsu_status_t ShmTransport::add_peer(uint32_t rank, pid_t pid, int control_fd, std::string& error) {
  auto peer = std::make_unique<Peer>();
  peer->pid = pid;
  void* cb = nullptr;
  tsu_status_t st =
      core::shared_region_map_peer(pid, control_fd, sizeof(core::ControlBlock), cb, error);
  if (st != TSU_OK) return st;
  peer->cb = static_cast<const core::ControlBlock*>(cb);
  if (peer->cb->magic != core::kControlBlockMagic || peer->cb->rank != rank) {
    core::shared_region_unmap(cb, sizeof(core::ControlBlock));
    error = "control block of rank " + std::to_string(rank) + " is not valid";
    return TSU_ERR_SYSTEM;
  }
  const SegmentSlot& main = peer->cb->slots[TSU_SEG_MAIN];
  if (main.state.load(std::memory_order_acquire) != core::kSegmentShared ||
      !map_segment(*peer, TSU_SEG_MAIN, main)) {
    core::shared_region_unmap(cb, sizeof(core::ControlBlock));
    error = "cannot map the main segment of rank " + std::to_string(rank);
    return TSU_ERR_SYSTEM;
  }
  peers_[rank] = std::move(peer);
  return TSU_OK;
}

std::byte* ShmTransport::map_segment(Peer& peer, uint32_t seg, const SegmentSlot& slot) noexcept {
  std::lock_guard lock(peer.map_mu);
  if (std::byte* b = peer.bases[seg].load(std::memory_order_acquire)) return b;
  void* base = nullptr;
  std::string error;
  if (core::shared_region_map_peer(peer.pid, slot.fd, slot.size, base, error) != TSU_OK) {
    TSU_LOG_WARN("mapping segment %u of pid %d failed: %s", seg, static_cast<int>(peer.pid),
                 error.c_str());
    return nullptr;
  }
  peer.mapped_size[seg] = slot.size;
  peer.bases[seg].store(static_cast<std::byte*>(base), std::memory_order_release);
  return static_cast<std::byte*>(base);
}

tsu_status_t ShmTransport::resolve(const tsu_gaddr_t& addr, std::size_t len,
                                   Access& out) noexcept {
  if (!reaches(addr.rank)) return TSU_ERR_UNREACHABLE;
  Peer& peer = *peers_[addr.rank];
  if (addr.seg >= core::kMaxSegments) return TSU_ERR_BAD_SEGMENT;
  // The target's own slot is the authority: freed segments fail here.
  const SegmentSlot& slot = peer.cb->slots[addr.seg];
  const uint32_t state = slot.state.load(std::memory_order_acquire);
  if (state != core::kSegmentShared && state != core::kSegmentRegistered)
    return TSU_ERR_BAD_SEGMENT;
  if (addr.offset > slot.size || len > slot.size - addr.offset) return TSU_ERR_OUT_OF_BOUNDS;
  if (state == core::kSegmentRegistered) {
    out = Access{Access::kCrossMemory, nullptr, peer.pid, slot.owner_addr + addr.offset};
    return TSU_OK;
  }
  std::byte* base = peer.bases[addr.seg].load(std::memory_order_acquire);
  if (!base && !(base = map_segment(peer, addr.seg, slot))) return TSU_ERR_SYSTEM;
  out = Access{Access::kDirect, base + addr.offset, 0, 0};
  return TSU_OK;
}

}  // namespace tsu::transport
