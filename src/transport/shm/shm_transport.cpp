#include "transport/shm/shm_transport.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.hpp"

namespace tsu::transport {

using core::SegmentSlot;

namespace {
constexpr std::size_t kPollBatch = 32;

// A duplicate of descriptor `fd` of process `pid`, or -1 (then the peer is
// woken through its futex only, which is all it needs unless it sleeps in epoll).
int duplicate_peer_fd(pid_t pid, int fd) noexcept {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  if (fd < 0) return -1;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return -1;
  const int dup = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  const int saved = errno;
  close(pidfd);
  if (dup < 0)
    TSU_LOG_DEBUG("pidfd_getfd(pid %d, fd %d): %s", static_cast<int>(pid), fd,
                  std::strerror(saved));
  return dup;
#else
  (void)pid, (void)fd;
  return -1;
#endif
}
}  // namespace

ShmTransport::~ShmTransport() {
  for (auto& peer : peers_) {
    if (!peer) continue;
    for (uint32_t s = 0; s < core::kMaxSegments; ++s)
      core::shared_region_unmap(peer->bases[s].load(std::memory_order_relaxed),
                                peer->mapped_size[s]);
    core::shared_region_unmap(peer->ring_mem, peer->ring_size);
    core::shared_region_unmap(peer->area, peer->area_size);
    if (peer->eventfd >= 0) close(peer->eventfd);
    core::shared_region_unmap(peer->cb, sizeof(core::ControlBlock));
  }
  core::shared_region_destroy(ring_region_);
  core::shared_region_destroy(area_region_);
}

tsu_status_t ShmTransport::init(uint32_t size, uint32_t my_rank, core::ControlBlock* cb,
                                uint32_t ring_slots, uint32_t slot_size,
                                std::size_t layer_area_bytes, std::string& error) {
  peers_.resize(size);
  my_rank_ = my_rank;
  tsu_status_t st = core::shared_region_create(
      "tsu-msg-ring", MsgRing::bytes_for(ring_slots, slot_size), ring_region_, error);
  if (st != TSU_OK) return st;
  my_ring_ = MsgRing::format(ring_region_.base, ring_slots, slot_size);
  max_payload_ = my_ring_.max_payload();
  st = core::shared_region_create("tsu-layer-area", layer_area_bytes, area_region_, error);
  if (st != TSU_OK) return st;
  cb->msg_ring_fd = ring_region_.fd;
  cb->msg_ring_size = ring_region_.size;
  cb->layer_area_fd = area_region_.fd;
  cb->layer_area_size = area_region_.size;
  return TSU_OK;
}

tsu_status_t ShmTransport::add_peer(uint32_t rank, pid_t pid, int control_fd, std::string& error) {
  auto peer = std::make_unique<Peer>();
  peer->pid = pid;
  void* cb = nullptr;
  tsu_status_t st =
      core::shared_region_map_peer(pid, control_fd, sizeof(core::ControlBlock), cb, error);
  if (st != TSU_OK) return st;
  peer->cb = static_cast<core::ControlBlock*>(cb);
  auto fail = [&](const std::string& why) {
    core::shared_region_unmap(peer->ring_mem, peer->ring_size);
    core::shared_region_unmap(peer->area, peer->area_size);
    core::shared_region_unmap(cb, sizeof(core::ControlBlock));
    error = why + " of rank " + std::to_string(rank);
    return TSU_ERR_SYSTEM;
  };
  if (peer->cb->magic != core::kControlBlockMagic || peer->cb->rank != rank)
    return fail("invalid control block");
  const SegmentSlot& main = peer->cb->slots[TSU_SEG_MAIN];
  if (main.state.load(std::memory_order_acquire) != core::kSegmentShared ||
      !map_segment(*peer, TSU_SEG_MAIN, main))
    return fail("cannot map the main segment");
  std::string why;
  if (core::shared_region_map_peer(pid, peer->cb->msg_ring_fd, peer->cb->msg_ring_size,
                                   peer->ring_mem, why) != TSU_OK)
    return fail("cannot map the message ring (" + why + ")");
  peer->ring_size = peer->cb->msg_ring_size;
  if (!MsgRing::attach(peer->ring_mem, peer->ring_size, peer->ring))
    return fail("invalid message ring");
  if (peer->ring.max_payload() < max_payload_) return fail("smaller message ring slots");
  void* area = nullptr;
  if (core::shared_region_map_peer(pid, peer->cb->layer_area_fd, peer->cb->layer_area_size, area,
                                   why) != TSU_OK)
    return fail("cannot map the layer area (" + why + ")");
  peer->area = static_cast<std::byte*>(area);
  peer->area_size = peer->cb->layer_area_size;
  peer->eventfd = duplicate_peer_fd(pid, peer->cb->wake_eventfd);
  peer->doorbell = core::Doorbell(&peer->cb->doorbell, peer->eventfd);
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
    out = Access{Access::kCrossMemory, nullptr, peer.pid, slot.owner_addr + addr.offset, true};
    return TSU_OK;
  }
  std::byte* base = peer.bases[addr.seg].load(std::memory_order_acquire);
  if (!base && !(base = map_segment(peer, addr.seg, slot))) return TSU_ERR_SYSTEM;
  out = Access{Access::kDirect, base + addr.offset, 0, 0};
  return TSU_OK;
}

tsu_status_t ShmTransport::resolve_process_memory(uint32_t rank, uint64_t addr, std::size_t len,
                                                  Access& out) noexcept {
  (void)len;
  if (!reaches(rank)) return TSU_ERR_UNREACHABLE;
  out = Access{Access::kCrossMemory, nullptr, peers_[rank]->pid, addr};
  return TSU_OK;
}

std::byte* ShmTransport::peer_layer_area(uint32_t rank, std::size_t& size) noexcept {
  if (!reaches(rank)) return nullptr;
  size = peers_[rank]->area_size;
  return peers_[rank]->area;
}

bool ShmTransport::notify_peer(uint32_t rank) noexcept {
  if (!reaches(rank) || !peers_[rank]->ring.valid()) return false;
  Peer& peer = *peers_[rank];
  if (peer.ring.take_asleep()) peer.doorbell.ring();
  return true;
}

tsu_status_t ShmTransport::send_message(uint32_t dst, const core::MessageHeader& header,
                                        const void* payload) noexcept {
  if (!reaches(dst)) return TSU_ERR_UNREACHABLE;
  if (header.payload_len > max_payload_) return TSU_ERR_INVALID_ARG;
  Peer& peer = *peers_[dst];
  switch (peer.ring.try_push(my_rank_, header, payload)) {
    case MsgRing::Push::kFull:
      return TSU_EAGAIN;
    case MsgRing::Push::kPushedAsleep:
      peer.doorbell.ring();
      return TSU_OK;
    case MsgRing::Push::kPushed:
      break;
  }
  return TSU_OK;
}

std::size_t ShmTransport::poll(const core::MessageHandlerTable& handlers) noexcept {
  if (!my_ring_.valid()) return 0;
  return my_ring_.drain(kPollBatch, [&](uint32_t src, const core::MessageHeader& h,
                                        const std::byte* payload) {
    if (!handlers.dispatch(src, h, payload)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      TSU_LOG_WARN("message with handler %u from rank %u dropped: no handler registered",
                   h.handler, src);
    }
  });
}

}  // namespace tsu::transport
