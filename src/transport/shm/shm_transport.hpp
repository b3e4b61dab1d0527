// Node peers: every rank's control block and main segment are mapped at init;
// other shared segments are mapped on first use; registered (non-shared) user
// memory is reached with Cross Memory Attach (process_vm_readv/writev).
//
// Messages (Messaging): each rank creates ONE receive ring in shared memory
// (per receiver, not per pair: docs/messaging.md says why) and publishes it in
// its control block; node peers map it at connect time and push into it
// (msg_ring.hpp).  A sender that finds the receiver asleep rings the
// receiver's doorbell, built from the receiver's control block and a duplicate
// of its wake eventfd (pidfd_open + pidfd_getfd).
//
// Peer loss: a node peer whose process exits is declared lost like a silent
// peer over the network (PeerLiveness; the PeerLoss part's contract):
// its messages and memory then fail with TSU_ERR_PEER_LOST.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/control_block.hpp"
#include "core/doorbell.hpp"
#include "core/shared_memory.hpp"
#include "transport/memory_access.hpp"
#include "transport/messaging.hpp"
#include "transport/msg_ring.hpp"
#include "transport/node.hpp"
#include "transport/peer_loss.hpp"
#include "transport/shm/peer_liveness.hpp"

namespace tsu::transport::shm {

class ShmTransport final : public NodeTransport,
                           public MemoryAccess,
                           public Messaging,
                           public PeerLoss {
 public:
  static constexpr const char* kSummary =
      "ranks of the same node: shared segments (memfd) mapped by every node peer;\n"
      "registered memory through Cross Memory Attach; message rings for AM and\n"
      "tagged messages";
  ShmTransport() = default;
  ~ShmTransport() override;

  const char* name() const noexcept override { return "shm"; }
  Parts parts() noexcept override {
    Parts p;
    p.memory = this;
    p.messages = this;
    p.peer_loss = this;
    return p;
  }

  // Sizes the peer table for a job of `size` ranks (entries stay empty until
  // add_peer; only node peers get one), creates this rank's receive ring and
  // publishes it in `cb`.  Before the bootstrap record is put.
  tsu_status_t init(uint32_t size, uint32_t my_rank, core::ControlBlock* cb, uint32_t ring_slots,
                    uint32_t slot_size, std::string& error);

  // Maps a node peer's control block, main segment, receive ring and layer
  // area, and duplicates its wake eventfd.
  tsu_status_t add_peer(uint32_t rank, pid_t pid, int control_fd, std::string& error);
  // Node peers only: this rank itself is refused (TSU_ERR_UNSUPPORTED).
  tsu_status_t add_peer(const NodePeer& peer, std::string& error) noexcept override;

  bool reaches(uint32_t rank) const noexcept {
    return rank < peers_.size() && peers_[rank] != nullptr;
  }

  // ---- MemoryAccess ------------------------------------------------------------
  tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len, Access& out) noexcept override;
  bool direct_main(uint32_t rank, std::byte*& base, uint64_t& size) noexcept override {
    if (!reaches(rank) || !peers_[rank]->main_base) return false;
    base = peers_[rank]->main_base;  // mapped in add_peer, unmapped at destruction
    size = peers_[rank]->main_size;
    return true;
  }
  tsu_status_t resolve_process_memory(uint32_t rank, uint64_t addr, std::size_t len,
                                      Access& out) noexcept override;
  std::byte* peer_layer_area(uint32_t rank, std::size_t& size) noexcept override;
  bool notify_peer(uint32_t rank) noexcept override;

  // ---- Messaging ---------------------------------------------------------------
  std::size_t max_message_payload() const noexcept override { return max_payload_; }
  tsu_status_t send_message(uint32_t dst, const core::MessageHeader& header,
                            const void* payload) noexcept override;

  // ---- Progress ------------------------------------------------------------------
  std::size_t poll(const core::MessageHandlerTable& handlers) noexcept override;
  bool prepare_sleep() noexcept override { return my_ring_.prepare_sleep(); }
  void end_sleep() noexcept override {
    my_ring_.end_sleep();
    // A wait on a node peer may have slept through its death.  (end_sleep
    // runs after the engine gave up the consumer role: another thread may
    // be in poll.)
    check_liveness_.store(true, std::memory_order_relaxed);
  }
  // Sleep no longer than the liveness check's interval while there are node
  // peers: a wait on one that died ends within it (watch_peer is free).
  uint64_t max_sleep_ns() const noexcept override {
    return node_peers_.load(std::memory_order_relaxed) ? PeerLiveness::kIntervalNs : UINT64_MAX;
  }

  void finalizing() noexcept override { finalizing_.store(true, std::memory_order_relaxed); }

  // ---- PeerLoss ------------------------------------------------------------------
  void set_peer_lost_handler(LostFn fn, void* ctx) noexcept override {
    lost_fn_ = fn;
    lost_ctx_ = ctx;
  }
  bool is_peer_lost(uint32_t rank) const noexcept override {
    return reaches(rank) && peers_[rank]->lost.load(std::memory_order_acquire);
  }
  void watch_peer(uint32_t rank) noexcept override;
  void unwatch_peer(uint32_t rank) noexcept override;

  // Messages dropped because no handler was registered (should stay 0).
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Mappings of one peer's shared segments, by index, in chunks allocated on
  // first use (most peers touch few indices).  An entry is one word: the
  // generation it maps and the page number of the mapping (map_word), so a
  // lookup sees both at once; an entry of an older generation is replaced
  // (and unmapped) under map_mu when the index's new segment is first used.
  static constexpr uint32_t kMapChunkEntries = 256;
  static constexpr uint32_t kMapChunks = core::kMaxSegments / kMapChunkEntries;
  struct MapChunk {
    std::atomic<uint64_t> word[kMapChunkEntries] = {};  // 0: nothing mapped
    std::size_t mapped_size[kMapChunkEntries] = {};     // guarded by map_mu
  };
  struct Peer {
    Peer() = default;
    ~Peer();
    pid_t pid = 0;
    core::ControlBlock* cb = nullptr;
    // The main segment (id 0) is never freed or reused before finalize: its
    // mapping and size, fixed at add_peer, answer the most common requests
    // without reading the slot.
    std::byte* main_base = nullptr;
    uint64_t main_size = 0;
    std::atomic<MapChunk*> chunks[kMapChunks] = {};  // published with release
    std::mutex map_mu;  // mapping and remapping of segments
    void* ring_mem = nullptr;
    std::size_t ring_size = 0;
    MsgRing ring;       // the peer's receive ring (we are one of its producers)
    std::byte* area = nullptr;
    std::size_t area_size = 0;
    int eventfd = -1;   // duplicate of the peer's wake eventfd (or -1)
    core::Doorbell doorbell;
    std::atomic<bool> lost{false};        // set once, by the poller (PeerLiveness)
  };
  // The mapping of shared segment `seg`, whose slot read `word` with fd/size:
  // cached, or mapped now.  TSU_ERR_BAD_SEGMENT when the segment was freed
  // meanwhile.
  tsu_status_t map_segment(Peer& peer, tsu_seg_t seg, uint64_t word, int fd, uint64_t size,
                           std::byte*& out) noexcept;

  std::vector<std::unique_ptr<Peer>> peers_;
  uint32_t my_rank_ = 0;
  static constexpr uint32_t kPopulatedPeerRings = 15;  // add_peer
  uint32_t populated_peer_rings_ = 0;
  std::size_t max_payload_ = 0;
  core::SharedRegion ring_region_;
  MsgRing my_ring_;
  std::atomic<uint64_t> dropped_{0};

  // Peer loss.  liveness_ and polls_ belong to the poller (the engine's
  // consumer role); check_liveness_ is raised after any sleep.
  PeerLiveness liveness_;
  std::atomic<bool> check_liveness_{false};
  std::atomic<uint32_t> node_peers_{0};  // peers added (add_peer)
  uint32_t polls_ = 0;
  std::atomic<bool> finalizing_{false};  // no more liveness checks (finalizing())
  LostFn lost_fn_ = nullptr;
  void* lost_ctx_ = nullptr;
};

}  // namespace tsu::transport::shm
