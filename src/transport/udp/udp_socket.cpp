#include "transport/udp/udp_socket.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tsu::transport::udp {

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool UdpSocket::open(const std::string& ip, uint16_t port, std::size_t bufsize,
                     std::string& error) {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error = std::string("udp socket: ") + std::strerror(errno);
    return false;
  }
  const int sz = static_cast<int>(std::min<std::size_t>(bufsize, 1u << 30));
  // FORCE variants pass rmem_max/wmem_max when privileged; else best effort.
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz) != 0)
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
  if (::setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz) != 0)
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    error = "udp: '" + ip + "' is not an IPv4 address";
    return false;
  }
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    error = "udp bind " + ip + ":" + std::to_string(port) + ": " + std::strerror(errno);
    return false;
  }
  socklen_t len = sizeof local_;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local_), &len);
  return true;
}

std::size_t UdpSocket::send_batch(const ImpairStage::Out* out, std::size_t n) {
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  std::size_t done = 0;
  while (done < n) {
    const std::size_t m = std::min(kBatch, n - done);
    for (std::size_t i = 0; i < m; ++i) {
      const auto& o = out[done + i];
      iov[i] = iovec{const_cast<std::byte*>(o.data), o.len};
      msgs[i] = mmsghdr{};
      msgs[i].msg_hdr.msg_name = const_cast<sockaddr_in*>(&o.to);
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    ++send_calls;
    const int r = ::sendmmsg(fd_, msgs, static_cast<unsigned>(m), MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      // Buffer full (EAGAIN/ENOBUFS), EPERM from a firewall, unreachable...:
      // drop this datagram; retransmission repairs it.
      ++send_dropped;
      ++done;
      continue;
    }
    for (int i = 0; i < r; ++i) bytes_sent += out[done + static_cast<std::size_t>(i)].len;
    sent += static_cast<uint64_t>(r);
    done += static_cast<std::size_t>(r);
  }
  return n;
}

std::size_t UdpSocket::flush(uint64_t now) {
  if (!impair_) {
    if (staged_.empty()) return 0;
    out_.clear();
    for (const auto& s : staged_) out_.push_back(ImpairStage::Out{s.data, s.len, s.to});
    staged_.clear();
    return send_batch(out_.data(), out_.size());
  }
  out_.clear();
  impair_->clear_sent();
  for (const auto& s : staged_) impair_->submit(s.data, s.len, s.to, now, out_);
  staged_.clear();
  impair_->release(now, out_);
  return out_.empty() ? 0 : send_batch(out_.data(), out_.size());
}

std::size_t UdpSocket::receive(RxBuf* bufs, std::size_t n) {
  n = std::min(n, kBatch);
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  for (std::size_t i = 0; i < n; ++i) {
    iov[i] = iovec{bufs[i].data, bufs[i].cap};
    msgs[i] = mmsghdr{};
    msgs[i].msg_hdr.msg_name = &bufs[i].from;
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  ++recv_calls;
  int r;
  do {
    r = ::recvmmsg(fd_, msgs, static_cast<unsigned>(n), MSG_DONTWAIT, nullptr);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return 0;
  for (int i = 0; i < r; ++i) {
    // MSG_TRUNC: longer than our buffer: report its real size so the parser
    // rejects it as truncated.
    bufs[i].len = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : msgs[i].msg_len;
    bytes_received += msgs[i].msg_len;
  }
  received += static_cast<uint64_t>(r);
  return static_cast<std::size_t>(r);
}

}  // namespace tsu::transport::udp
