// What wakes a sleeping progress thread for the udp transport: the socket
// (datagrams arrived) or a timerfd armed to the earliest protocol deadline
// (retransmission, tail-loss probe, keep-alive, delayed ack), joined in one
// epoll set whose descriptor the engine sleeps on.
//
// Why a timerfd and not only the engine's sleep timeout: user threads send on
// this transport while the progress thread sleeps (messages from the layers
// above, and RMA commands executed inline by their issuer), and those sends
// start timers the sleeper did not know when it chose its timeout.  Arming
// is a syscall, so it happens only while an engine sleeps and only when a
// deadline is earlier than the armed one; a timer that fires early is
// harmless (poll finds nothing due).
#pragma once

#include <cstdint>
#include <string>

namespace tsu::transport::udp {

class WakeSource {
 public:
  WakeSource() = default;
  ~WakeSource();
  WakeSource(const WakeSource&) = delete;
  WakeSource& operator=(const WakeSource&) = delete;

  // Creates the timerfd and the epoll set holding it and `socket_fd`.
  bool open(int socket_fd, std::string& error);
  int fd() const noexcept { return epoll_fd_; }

  // Makes the timer fire no later than `deadline_ns` (CLOCK_MONOTONIC).
  void arm_by(uint64_t deadline_ns) noexcept {
    if (deadline_ns < armed_ns_) arm(deadline_ns);
  }
  // From poll: once the armed time has passed, consume the expiration so the
  // descriptor stops being readable.
  void consume_if_fired(uint64_t now_ns) noexcept {
    if (now_ns >= armed_ns_) consume();
  }
  // Stops a pending expiry (no syscall when none is pending).
  void disarm() noexcept {
    if (armed_ns_ != UINT64_MAX) disarm_now();
  }

 private:
  void arm(uint64_t deadline_ns) noexcept;
  void consume() noexcept;
  void disarm_now() noexcept;

  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  uint64_t armed_ns_ = UINT64_MAX;  // UINT64_MAX: disarmed
};

}  // namespace tsu::transport::udp
