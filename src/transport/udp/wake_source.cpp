#include "transport/udp/wake_source.hpp"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tsu::transport::udp {

WakeSource::~WakeSource() {
  if (timer_fd_ >= 0) close(timer_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool WakeSource::open(int socket_fd, std::string& error) {
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (timer_fd_ < 0 || epoll_fd_ < 0) {
    error = std::string("udp: timerfd/epoll: ") + std::strerror(errno);
    return false;
  }
  for (int fd : {socket_fd, timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      error = std::string("udp: epoll_ctl: ") + std::strerror(errno);
      return false;
    }
  }
  return true;
}

void WakeSource::arm(uint64_t deadline_ns) noexcept {
  itimerspec its{};
  // 0 would disarm: a deadline already due fires after 1 ns.
  const uint64_t t = deadline_ns ? deadline_ns : 1;
  its.it_value.tv_sec = static_cast<time_t>(t / 1'000'000'000);
  its.it_value.tv_nsec = static_cast<long>(t % 1'000'000'000);
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr) == 0) armed_ns_ = deadline_ns;
}

void WakeSource::disarm_now() noexcept {
  itimerspec its{};  // zero: disarmed (and an expiry not yet read is cleared)
  if (timerfd_settime(timer_fd_, 0, &its, nullptr) == 0) armed_ns_ = UINT64_MAX;
}

void WakeSource::consume() noexcept {
  // The timer fires up to the thread's timer slack after its deadline: until
  // it has, it stays armed (clearing it now would leave the descriptor
  // readable for good once it fires, and the engine would never sleep).
  uint64_t expirations;
  if (read(timer_fd_, &expirations, sizeof expirations) == static_cast<ssize_t>(sizeof expirations))
    armed_ns_ = UINT64_MAX;
}

}  // namespace tsu::transport::udp
