// Which node peers have died.  Over the network a peer is declared lost when
// it stays silent past a timeout; on one node the kernel knows: a pidfd
// (pidfd_open) of the peer's process becomes readable once the process has
// exited, and names that process, not whichever one later reuses its pid.
// Where pidfd_open is missing (kernels before 5.3) the check falls back to
// kill(pid, 0) == ESRCH, which sees the death only once the launcher has
// reaped the process and could be fooled by a reused pid.
//
// The check is one poll() over every live peer's pidfd, made by the shm
// transport's poller at most once per kIntervalNs: cheap enough to run
// whenever the engine is busy, so a waiting rank learns of a dead node peer
// within about that interval (docs/messaging.md, "A node peer dies").
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace tsu::transport::shm {

class PeerLiveness {
 public:
  static constexpr uint64_t kIntervalNs = 50'000'000;

  PeerLiveness() = default;
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;
  ~PeerLiveness();

  // At init (one thread, before the engine starts): watch node peer `rank`'s
  // process `pid` through `pidfd` (which this object now owns and closes),
  // or by kill(pid, 0) when pidfd is -1.
  void add(uint32_t rank, pid_t pid, int pidfd) noexcept;

  // Poller only.  Calls fn(rank) once for each watched peer whose process has
  // exited since the last check, and stops watching it.  Checks at most once
  // per kIntervalNs (now_ns: the caller's clock reading).  Returns how many
  // peers it found dead.
  template <typename Fn>
  std::size_t check(uint64_t now_ns, Fn&& fn) noexcept {
    if (fds_.empty() || now_ns - last_check_ns_ < kIntervalNs) return 0;
    last_check_ns_ = now_ns;
    collect_dead();
    for (uint32_t rank : dead_) fn(rank);
    return dead_.size();
  }

  bool empty() const noexcept { return fds_.empty(); }

 private:
  // Fills dead_ with the ranks whose processes exited and drops them from
  // the watched set.
  void collect_dead() noexcept;

  std::vector<pollfd> fds_;    // a pidfd per watched peer, or -1 (then kill(pid, 0))
  std::vector<uint32_t> ranks_;
  std::vector<pid_t> pids_;
  std::vector<uint32_t> dead_;  // the last check's finds (capacity kept)
  uint64_t last_check_ns_ = 0;
};

}  // namespace tsu::transport::shm
