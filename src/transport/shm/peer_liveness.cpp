#include "transport/shm/peer_liveness.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace tsu::transport::shm {

PeerLiveness::~PeerLiveness() {
  for (const pollfd& p : fds_)
    if (p.fd >= 0) close(p.fd);
}

void PeerLiveness::add(uint32_t rank, pid_t pid, int fd) noexcept {
  try {
    fds_.push_back(pollfd{fd, POLLIN, 0});
    ranks_.push_back(rank);
    pids_.push_back(pid);
    dead_.reserve(fds_.size());
  } catch (...) {
    // Out of memory at init: this peer's death goes unnoticed, as before.
    if (fd >= 0) close(fd);
  }
}

void PeerLiveness::collect_dead() noexcept {
  dead_.clear();
  bool any_pidfd = false;
  for (pollfd& p : fds_) {
    p.revents = 0;
    any_pidfd |= p.fd >= 0;
  }
  // A negative fd is ignored by poll(): those peers are checked by kill.
  if (any_pidfd && ::poll(fds_.data(), fds_.size(), 0) < 0) return;  // EINTR: next time
  for (std::size_t i = 0; i < fds_.size();) {
    const bool gone = fds_[i].fd >= 0 ? (fds_[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0
                                      : (kill(pids_[i], 0) != 0 && errno == ESRCH);
    if (!gone) {
      ++i;
      continue;
    }
    dead_.push_back(ranks_[i]);  // capacity reserved in add()
    if (fds_[i].fd >= 0) close(fds_[i].fd);
    fds_[i] = fds_.back();
    ranks_[i] = ranks_.back();
    pids_[i] = pids_.back();
    fds_.pop_back();
    ranks_.pop_back();
    pids_.pop_back();
  }
}

}  // namespace tsu::transport::shm
