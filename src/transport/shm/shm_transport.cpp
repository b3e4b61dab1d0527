#include "transport/shm/shm_transport.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "core/log.hpp"
#include "util/clock.hpp"

namespace tsu::transport::shm {

using core::SegmentSlot;

namespace {
constexpr std::size_t kPollBatch = 32;
// A busy poller reads the clock for the liveness check once per this many
// polls (a clock read per poll would tax every message).
constexpr uint32_t kPollsPerLivenessLook = 64;

// A mapping cache entry: the page number of the mapping above the generation
// it maps.  Mappings are page aligned (4 KiB at least) and user addresses
// below 2^58, so both fit one word; 0 is "nothing mapped".
constexpr unsigned kMapPageShift = 12;
inline bool map_word_fits(const void* base) noexcept {
  return (reinterpret_cast<uintptr_t>(base) & ((uintptr_t{1} << kMapPageShift) - 1)) == 0 &&
         (reinterpret_cast<uintptr_t>(base) >> kMapPageShift >> (64 - core::kSegGenerationBits)) == 0;
}
uint64_t map_word(uint32_t generation, const void* base) noexcept {
  return (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(base) >> kMapPageShift)
          << core::kSegGenerationBits) |
         generation;
}
uint32_t map_word_generation(uint64_t w) noexcept {
  return static_cast<uint32_t>(w) & core::kSegGenerationMask;
}
std::byte* map_word_base(uint64_t w) noexcept {
  return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(w >> core::kSegGenerationBits)
                                      << kMapPageShift);
}

// A consistent read of the slot of segment `seg` (the seqlock reader of
// control_block.hpp).  False when `seg` is not live (stale, freed, never
// allocated, or changed while we read).
struct SlotView {
  uint64_t word;
  uint32_t state;
  int32_t fd;
  uint64_t size;
  uint64_t owner_addr;
};
bool read_slot(const SegmentSlot& slot, tsu_seg_t seg, SlotView& v) noexcept {
  v.word = slot.word.load(std::memory_order_acquire);
  v.state = core::slot_word_state(v.word);
  if (core::slot_word_id(v.word) != seg || !core::slot_state_live(v.state)) return false;
  v.fd = slot.fd.load(std::memory_order_acquire);
  v.size = slot.size.load(std::memory_order_acquire);
  v.owner_addr = slot.owner_addr.load(std::memory_order_acquire);
  return slot.word.load(std::memory_order_relaxed) == v.word;
}

// A pidfd of process `pid`, or -1 where the kernel has none (before 5.3).
int open_pidfd(pid_t pid) noexcept {
#if defined(SYS_pidfd_open)
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// A duplicate of descriptor `fd` of the process behind `pidfd`, or -1 (then
// the peer is woken through its futex only, which is all it needs unless it
// sleeps in epoll).
int duplicate_peer_fd(int pidfd, int fd) noexcept {
#if defined(SYS_pidfd_getfd)
  if (pidfd < 0 || fd < 0) return -1;
  const int dup = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (dup < 0) TSU_LOG_DEBUG("pidfd_getfd(fd %d): %s", fd, std::strerror(errno));
  return dup;
#else
  (void)pidfd, (void)fd;
  return -1;
#endif
}
}  // namespace

ShmTransport::Peer::~Peer() {
  for (auto& c : chunks) {
    MapChunk* chunk = c.load(std::memory_order_relaxed);
    if (!chunk) continue;
    for (uint32_t e = 0; e < kMapChunkEntries; ++e)
      if (const uint64_t w = chunk->word[e].load(std::memory_order_relaxed))
        core::shared_region_unmap(map_word_base(w), chunk->mapped_size[e]);
    delete chunk;
  }
}

ShmTransport::~ShmTransport() {
  for (auto& peer : peers_) {
    if (!peer) continue;
    core::shared_region_unmap(peer->ring_mem, peer->ring_size);
    core::shared_region_unmap(peer->area, peer->area_size);
    if (peer->eventfd >= 0) close(peer->eventfd);
    core::shared_region_unmap(peer->cb, sizeof(core::ControlBlock));
  }
  core::shared_region_destroy(ring_region_);
}

tsu_status_t ShmTransport::init(uint32_t size, uint32_t my_rank, core::ControlBlock* cb,
                                uint32_t ring_slots, uint32_t slot_size, std::string& error) {
  peers_.resize(size);
  my_rank_ = my_rank;
  // Every message to this rank passes through the ring: its pages are
  // faulted in here (and in each sender's mapping, add_peer), not by the
  // first messages that reach them (a fault each, inside a message's time).
  const tsu_status_t st =
      core::shared_region_create("tsu-msg-ring", MsgRing::bytes_for(ring_slots, slot_size),
                                 ring_region_, error, core::Populate::kNow);
  if (st != TSU_OK) return st;
  my_ring_ = MsgRing::format(ring_region_.base, ring_slots, slot_size);
  max_payload_ = my_ring_.max_payload();
  cb->msg_ring_fd = ring_region_.fd;
  cb->msg_ring_size = ring_region_.size;
  return TSU_OK;
}

tsu_status_t ShmTransport::add_peer(const NodePeer& peer, std::string& error) noexcept {
  if (peer.rank == my_rank_) {
    error = "shm reaches node peers, not the rank itself";
    return TSU_ERR_UNSUPPORTED;
  }
  try {
    return add_peer(peer.rank, static_cast<pid_t>(peer.pid), peer.control_fd, error);
  } catch (const std::bad_alloc&) {
    error = "out of memory connecting rank " + std::to_string(peer.rank);
    return TSU_ERR_NO_MEMORY;
  }
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
  SlotView main;
  std::byte* main_base = nullptr;
  if (!read_slot(peer->cb->slots[TSU_SEG_MAIN], TSU_SEG_MAIN, main) ||
      main.state != core::kSegmentShared ||
      map_segment(*peer, TSU_SEG_MAIN, main.word, main.fd, main.size, main_base) != TSU_OK)
    return fail("cannot map the main segment");
  peer->main_base = main_base;
  peer->main_size = main.size;
  std::string why;
  // The first kPopulatedPeerRings peers' rings are faulted in here as our
  // own is (init): every rank doing so for every node peer would cost n^2
  // page-table entries at start (docs/design-decisions.md), so on bigger
  // nodes the rest fill as messages reach them.
  const bool populate = populated_peer_rings_ < kPopulatedPeerRings;
  if (core::shared_region_map_peer(pid, peer->cb->msg_ring_fd, peer->cb->msg_ring_size,
                                   peer->ring_mem, why,
                                   populate ? core::Populate::kNow : core::Populate::kOnTouch) !=
      TSU_OK)
    return fail("cannot map the message ring (" + why + ")");
  populated_peer_rings_ += populate;
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
  // One pidfd serves both: the duplicate of the peer's wake eventfd, and
  // the liveness watch, which keeps it.
  const int pidfd = open_pidfd(pid);
  peer->eventfd = duplicate_peer_fd(pidfd, peer->cb->wake_eventfd);
  peer->doorbell = core::Doorbell(&peer->cb->doorbell, peer->eventfd);
  liveness_.add(rank, pid, pidfd);
  peers_[rank] = std::move(peer);
  node_peers_.fetch_add(1, std::memory_order_relaxed);
  return TSU_OK;
}

tsu_status_t ShmTransport::map_segment(Peer& peer, tsu_seg_t seg, uint64_t word, int fd,
                                       uint64_t size, std::byte*& out) noexcept {
  const uint32_t index = core::seg_index(seg);
  const uint32_t generation = core::seg_generation(seg);
  const SegmentSlot& slot = peer.cb->slots[index];
  std::lock_guard lock(peer.map_mu);
  MapChunk* chunk = peer.chunks[index / kMapChunkEntries].load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new (std::nothrow) MapChunk;
    if (!chunk) return TSU_ERR_NO_MEMORY;
    peer.chunks[index / kMapChunkEntries].store(chunk, std::memory_order_release);
  }
  const uint32_t e = index % kMapChunkEntries;
  const uint64_t old = chunk->word[e].load(std::memory_order_relaxed);
  if (old && map_word_generation(old) == generation) {  // another thread mapped it
    out = map_word_base(old);
    return TSU_OK;
  }
  void* base = nullptr;
  std::string error;
  const tsu_status_t st = core::shared_region_map_peer(peer.pid, fd, size, base, error);
  // The owner retires the slot before it closes the descriptor, and the
  // descriptor number may then be reused by another segment: only if the slot
  // still names `seg` after we opened the descriptor did we open this
  // segment's memfd.  The fence orders the open (the kernel's reads of the
  // owner's descriptor table) before the check; it pairs with no C++ atomic,
  // so ThreadSanitizer (which rejects fences) gets a seq_cst load instead.
#if defined(__SANITIZE_THREAD__)
  const uint64_t now = slot.word.load(std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint64_t now = slot.word.load(std::memory_order_acquire);
#endif
  if (now != word) {
    if (st == TSU_OK) core::shared_region_unmap(base, size);
    return TSU_ERR_BAD_SEGMENT;
  }
  if (st != TSU_OK) {
    TSU_LOG_WARN("mapping segment %u of pid %d failed: %s", seg, static_cast<int>(peer.pid),
                 error.c_str());
    return st == TSU_ERR_LIMIT ? st : TSU_ERR_SYSTEM;
  }
  if (!map_word_fits(base)) {
    core::shared_region_unmap(base, size);
    TSU_LOG_WARN("mapping segment %u of pid %d: address %p out of range", seg,
                 static_cast<int>(peer.pid), base);
    return TSU_ERR_SYSTEM;
  }
  // The index's previous segment (freed by its owner) is unmapped only after
  // the new one is mapped, so the new mapping never takes its addresses.
  if (old) core::shared_region_unmap(map_word_base(old), chunk->mapped_size[e]);
  chunk->mapped_size[e] = size;
  chunk->word[e].store(map_word(generation, base), std::memory_order_release);
  out = static_cast<std::byte*>(base);
  return TSU_OK;
}

tsu_status_t ShmTransport::resolve(const tsu_gaddr_t& addr, std::size_t len,
                                   Access& out) noexcept {
  if (!reaches(addr.rank)) return TSU_ERR_UNREACHABLE;
  Peer& peer = *peers_[addr.rank];
  if (peer.lost.load(std::memory_order_relaxed)) [[unlikely]]
    return TSU_ERR_PEER_LOST;
  // The target's own slot is the authority: freed segments and stale ids
  // (an older generation of the index) fail here.
  if (addr.seg == TSU_SEG_MAIN) [[likely]] {
    if (addr.offset > peer.main_size || len > peer.main_size - addr.offset)
      return TSU_ERR_OUT_OF_BOUNDS;
    out = Access{Access::kDirect, peer.main_base + addr.offset, 0, 0};
    return TSU_OK;
  }
  const uint32_t index = core::seg_index(addr.seg);
  const SegmentSlot& slot = peer.cb->slots[index];
  // Seqlock read (control_block.hpp): the word, the fields this request
  // needs, the word again.
  const uint64_t word = slot.word.load(std::memory_order_acquire);
  const uint32_t state = core::slot_word_state(word);
  if (core::slot_word_id(word) != addr.seg || !core::slot_state_live(state))
    return TSU_ERR_BAD_SEGMENT;
  const uint64_t size = slot.size.load(std::memory_order_acquire);
  if (state == core::kSegmentRegistered) {
    const uint64_t owner_addr = slot.owner_addr.load(std::memory_order_acquire);
    if (slot.word.load(std::memory_order_relaxed) != word) return TSU_ERR_BAD_SEGMENT;
    if (addr.offset > size || len > size - addr.offset) return TSU_ERR_OUT_OF_BOUNDS;
    out = Access{Access::kCrossMemory, nullptr, peer.pid, owner_addr + addr.offset, true};
    return TSU_OK;
  }
  std::byte* base = nullptr;
  if (MapChunk* chunk = peer.chunks[index / kMapChunkEntries].load(std::memory_order_acquire)) {
    const uint64_t w = chunk->word[index % kMapChunkEntries].load(std::memory_order_acquire);
    if (w && map_word_generation(w) == core::seg_generation(addr.seg)) base = map_word_base(w);
  }
  if (slot.word.load(std::memory_order_relaxed) != word) return TSU_ERR_BAD_SEGMENT;
  if (addr.offset > size || len > size - addr.offset) return TSU_ERR_OUT_OF_BOUNDS;
  if (!base) {
    // Not mapped yet (or an older generation is): read the whole slot.
    SlotView v;
    if (!read_slot(slot, addr.seg, v)) return TSU_ERR_BAD_SEGMENT;
    const tsu_status_t st = map_segment(peer, addr.seg, v.word, v.fd, v.size, base);
    if (st != TSU_OK) return st;
  }
  out = Access{Access::kDirect, base + addr.offset, 0, 0, false,
               state == core::kSegmentSharedNic};
  return TSU_OK;
}

tsu_status_t ShmTransport::resolve_process_memory(uint32_t rank, uint64_t addr, std::size_t len,
                                                  Access& out) noexcept {
  (void)len;
  if (!reaches(rank)) return TSU_ERR_UNREACHABLE;
  if (peers_[rank]->lost.load(std::memory_order_relaxed)) return TSU_ERR_PEER_LOST;
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
  if (peer.lost.load(std::memory_order_relaxed)) [[unlikely]]
    return TSU_ERR_PEER_LOST;
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
  std::size_t done = my_ring_.drain(kPollBatch, [&](uint32_t src, const core::MessageHeader& h,
                                                   const std::byte* payload) {
    if (!handlers.dispatch(src, h, payload)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      TSU_LOG_WARN("message with handler %u from rank %u dropped: no handler registered",
                   h.handler, src);
    }
  });
  if ((++polls_ % kPollsPerLivenessLook == 0 || check_liveness_.load(std::memory_order_relaxed)) &&
      !liveness_.empty() && !finalizing_.load(std::memory_order_relaxed)) {
    check_liveness_.store(false, std::memory_order_relaxed);
    done += liveness_.check(util::now_ns(), [&](uint32_t rank) {
      TSU_LOG_WARN("node peer rank %u (pid %d) has exited; rank %u is lost", rank,
                   static_cast<int>(peers_[rank]->pid), rank);
      peers_[rank]->lost.store(true, std::memory_order_release);
      if (lost_fn_) lost_fn_(lost_ctx_, rank);
    });
  }
  return done;
}

// Watches cost nothing here: the engine's sleep is always bounded by the
// liveness check's interval while the rank has node peers (max_sleep_ns),
// so a wait on a node peer that dies ends within it.  (Counting them put
// five atomic operations on every receive's path: docs/messaging.md, "A
// node peer dies".)
void ShmTransport::watch_peer(uint32_t) noexcept {}

void ShmTransport::unwatch_peer(uint32_t) noexcept {}

}  // namespace tsu::transport::shm
