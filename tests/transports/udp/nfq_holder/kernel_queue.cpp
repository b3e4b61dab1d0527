#include "kernel_queue.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

namespace tsu::nfq {

namespace {
// Large enough that a burst of queued packets does not overflow the socket.
constexpr unsigned kSocketBufferBytes = 8u << 20;
}  // namespace

KernelQueue::KernelQueue(std::uint16_t number, std::uint32_t kernel_backlog, PacketHandler on_packet)
    : on_packet_(std::move(on_packet)) {
  handle_ = nfq_open();
  if (!handle_) {
    error_ = std::string("nfq_open: ") + std::strerror(errno);
    return;
  }
  queue_ = nfq_create_queue(handle_, number, &KernelQueue::on_message, this);
  if (!queue_) {
    error_ = "cannot bind NFQUEUE " + std::to_string(number) + ": " + std::strerror(errno) +
             " (is nfnetlink_queue available, and the queue unused?)";
    return;
  }
  const bool configured = nfq_set_mode(queue_, NFQNL_COPY_META, 0) == 0 &&
                          nfq_set_queue_maxlen(queue_, kernel_backlog) == 0 &&
                          nfq_set_queue_flags(queue_, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN) == 0;
  if (!configured) {
    error_ = std::string("cannot configure NFQUEUE: ") + std::strerror(errno);
    nfq_destroy_queue(queue_);
    queue_ = nullptr;
    return;
  }
  nfnl_rcvbufsiz(nfq_nfnlh(handle_), kSocketBufferBytes);
  // Overflow is reported by the kernel accepting packets (fail open), not as
  // an error that would stop the holder.
  int on = 1;
  setsockopt(fd(), SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);
  fcntl(fd(), F_SETFL, fcntl(fd(), F_GETFL) | O_NONBLOCK);
}

KernelQueue::~KernelQueue() {
  if (queue_) nfq_destroy_queue(queue_);
  if (handle_) nfq_close(handle_);
}

int KernelQueue::fd() const { return nfq_fd(handle_); }

int KernelQueue::on_message(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* self) {
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header) static_cast<KernelQueue*>(self)->on_packet_(ntohl(header->packet_id));
  return 0;
}

bool KernelQueue::read_pending() {
  // Metadata-only messages are small; this holds a whole batch.
  static thread_local std::vector<char> buffer(1 << 16);
  for (;;) {
    const ssize_t n = recv(fd(), buffer.data(), buffer.size(), 0);
    if (n >= 0) {
      nfq_handle_packet(handle_, buffer.data(), static_cast<int>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (errno == ENOBUFS) {
      ++socket_overflows_;
      continue;
    }
    error_ = std::string("recv: ") + std::strerror(errno);
    return false;
  }
}

bool KernelQueue::accept(std::uint32_t packet_id) {
  if (nfq_set_verdict(queue_, packet_id, NF_ACCEPT, 0, nullptr) >= 0) return true;
  ++verdict_errors_;
  return false;
}

}  // namespace tsu::nfq
