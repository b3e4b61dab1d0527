// Node peers: every rank's control block and main segment are mapped at init;
// other shared segments are mapped on first use; registered (non-shared) user
// memory is reached with Cross Memory Attach (process_vm_readv/writev).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/control_block.hpp"
#include "transport/transport.hpp"

namespace tsu::transport {

class ShmTransport final : public Transport {
 public:
  ShmTransport() = default;
  ~ShmTransport() override;

  const char* name() const noexcept override { return "shm"; }
  uint32_t capabilities() const noexcept override { return kCapMemoryAccess; }

  // Sizes the peer table for a job of `size` ranks (entries stay empty until
  // add_peer; only node peers get one).
  void init(uint32_t size);

  // Maps a node peer's control block and main segment.
  tsu_status_t add_peer(uint32_t rank, pid_t pid, int control_fd, std::string& error);

  bool reaches(uint32_t rank) const noexcept {
    return rank < peers_.size() && peers_[rank] != nullptr;
  }

  tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len, Access& out) noexcept override;

 private:
  struct Peer {
    pid_t pid = 0;
    const core::ControlBlock* cb = nullptr;
    std::atomic<std::byte*> bases[core::kMaxSegments] = {};
    std::size_t mapped_size[core::kMaxSegments] = {};  // guarded by map_mu
    std::mutex map_mu;  // first-use mapping of a segment
  };
  std::byte* map_segment(Peer& peer, uint32_t seg, const core::SegmentSlot& slot) noexcept;

  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace tsu::transport
