#include "transport/udp/udp_socket.hpp"

#include <arpa/inet.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103  // linux/udp.h; older libc headers lack it
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

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

bool UdpSocket::enable_coalescing() noexcept {
  const int on = 1;
  gro_ = ::setsockopt(fd_, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
  return gro_;
}

std::size_t UdpSocket::gso_group(const ImpairStage::Out* out, std::size_t n) const noexcept {
  if (!gso_ || n < 2) return std::min<std::size_t>(n, 1);
  const std::size_t seg = out[0].len;
  std::size_t k = 1, bytes = seg;
  while (k < n && k < kMaxGsoSegments && out[k].len <= seg && bytes + out[k].len <= kMaxGsoBytes &&
         out[k].to.sin_addr.s_addr == out[0].to.sin_addr.s_addr &&
         out[k].to.sin_port == out[0].to.sin_port) {
    bytes += out[k].len;
    // Only the last segment may be shorter: the kernel cuts at every `seg` bytes.
    if (out[k++].len < seg) break;
  }
  return k;
}

std::size_t UdpSocket::send_batch(const ImpairStage::Out* out, std::size_t n) {
  mmsghdr msgs[kBatch];
  std::size_t group[kBatch];  // datagrams in each message
  alignas(cmsghdr) char ctrl[kBatch][CMSG_SPACE(sizeof(uint16_t))];
  if (tx_iov_.size() < n) tx_iov_.resize(n);
  std::size_t done = 0;
  while (done < n) {
    // Up to kBatch messages, each one datagram or a segmented group.
    std::size_t m = 0, at = done;
    while (m < kBatch && at < n) {
      const std::size_t k = gso_group(out + at, n - at);
      for (std::size_t i = 0; i < k; ++i)
        tx_iov_[at + i] = iovec{const_cast<std::byte*>(out[at + i].data), out[at + i].len};
      msgs[m] = mmsghdr{};
      msghdr& h = msgs[m].msg_hdr;
      h.msg_name = const_cast<sockaddr_in*>(&out[at].to);
      h.msg_namelen = sizeof(sockaddr_in);
      h.msg_iov = &tx_iov_[at];
      h.msg_iovlen = k;
      if (k > 1) {
        h.msg_control = ctrl[m];
        h.msg_controllen = sizeof ctrl[m];
        cmsghdr* c = CMSG_FIRSTHDR(&h);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        const auto seg = static_cast<uint16_t>(out[at].len);
        std::memcpy(CMSG_DATA(c), &seg, sizeof seg);
      }
      group[m++] = k;
      at += k;
    }
    ++send_calls;
    const int r = ::sendmmsg(fd_, msgs, static_cast<unsigned>(m), MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (group[0] > 1 && (errno == EINVAL || errno == EIO || errno == ENOPROTOOPT)) {
        gso_ = false;  // this kernel or route cannot segment: send one by one from now on
        continue;
      }
      // Buffer full (EAGAIN/ENOBUFS), EPERM from a firewall, unreachable...:
      // drop this message's datagrams; retransmission repairs them.
      send_dropped += group[0];
      done += group[0];
      continue;
    }
    for (int i = 0; i < r; ++i) {
      const std::size_t k = group[i];
      for (std::size_t j = 0; j < k; ++j) bytes_sent += out[done + j].len;
      gso_sends += k > 1;
      sent += k;
      done += k;
    }
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
  alignas(cmsghdr) char ctrl[kBatch][CMSG_SPACE(sizeof(int))];
  for (std::size_t i = 0; i < n; ++i) {
    iov[i] = iovec{bufs[i].data, bufs[i].cap};
    msgs[i] = mmsghdr{};
    msgs[i].msg_hdr.msg_name = &bufs[i].from;
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    if (gro_) {
      msgs[i].msg_hdr.msg_control = ctrl[i];
      msgs[i].msg_hdr.msg_controllen = sizeof ctrl[i];
    }
  }
  ++recv_calls;
  int r;
  do {
    r = ::recvmmsg(fd_, msgs, static_cast<unsigned>(n), MSG_DONTWAIT, nullptr);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return 0;
  for (int i = 0; i < r; ++i) {
    RxBuf& b = bufs[i];
    // MSG_TRUNC: longer than our buffer: report its real size so the parser
    // rejects it as truncated.
    b.len = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : msgs[i].msg_len;
    b.segment = 0;
    if (gro_) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
          int seg = 0;
          std::memcpy(&seg, CMSG_DATA(c), sizeof seg);
          if (seg > 0 && static_cast<std::size_t>(seg) < b.len) b.segment = static_cast<std::size_t>(seg);
        }
      }
    }
    bytes_received += msgs[i].msg_len;
    received += b.segment ? (b.len + b.segment - 1) / b.segment : 1;
  }
  return static_cast<std::size_t>(r);
}

}  // namespace tsu::transport::udp
