// The socket and its batching: one non-blocking UDP socket per rank.
// Outgoing datagrams are staged (pointer + length, the caller keeps the bytes
// alive until flush()) and sent with sendmmsg in batches; incoming ones are
// read with recvmmsg into caller-provided buffers.  The optional impairment
// stage (impair.hpp) sits between staging and the socket.
//
// Segmentation offload (UDP_SEGMENT, Linux >= 4.18): consecutive datagrams to
// one address, all of one length except a shorter last one, leave as one
// send of up to kMaxGsoSegments datagrams that the kernel splits again.  On
// the wire, and to the receiver, they are the same datagrams; the sending
// CPU walks the IP stack (routing, netfilter, the veth/device path) once per
// group instead of once per datagram, which is where its time went.
// Receive coalescing (UDP_GRO, Linux >= 5.0) is the other half: such a group
// stays one buffer up to the socket and one recvmmsg entry (RxBuf::segment
// tells where to cut it), instead of being split into skbs by the kernel
// and read one by one.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/udp/impair.hpp"

namespace tsu::transport::udp {

class UdpSocket {
 public:
  static constexpr std::size_t kBatch = 64;

  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Binds to ip:port (port 0: any) and sizes the kernel buffers.
  bool open(const std::string& ip, uint16_t port, std::size_t bufsize, std::string& error);
  // Whether sends may be grouped with UDP_SEGMENT (on by default; switched
  // off for good if the kernel refuses it).
  void set_segmentation(bool on) noexcept { gso_ = on; }
  // Asks for coalesced receives (UDP_GRO); false if the kernel refuses.
  // Then every receive buffer must hold kMaxGsoBytes.
  bool enable_coalescing() noexcept;
  bool coalescing() const noexcept { return gro_; }
  int fd() const noexcept { return fd_; }
  const sockaddr_in& local() const noexcept { return local_; }
  void set_impairment(std::unique_ptr<ImpairStage> stage) { impair_ = std::move(stage); }
  ImpairStage* impairment() const noexcept { return impair_.get(); }

  void stage(const std::byte* data, std::size_t len, const sockaddr_in& to) {
    staged_.push_back(Staged{data, len, to});
  }
  bool has_staged() const noexcept { return !staged_.empty(); }
  // Sends everything staged (and due impaired datagrams).  Datagrams the
  // kernel refuses (buffer full) are dropped and counted: the reliability
  // layer retransmits them.  Returns datagrams handed to the kernel.
  std::size_t flush(uint64_t now);

  struct RxBuf {
    std::byte* data;
    std::size_t cap;
    std::size_t len;    // out
    sockaddr_in from;   // out
    std::size_t segment;  // out: coalesced datagrams of this size (the last may be shorter); 0: one
  };
  // Receives up to bufs.size() datagrams; returns how many (0: none ready).
  std::size_t receive(RxBuf* bufs, std::size_t n);

  uint64_t next_impair_due(uint64_t now) const noexcept {
    return impair_ ? impair_->next_due(now) : UINT64_MAX;
  }

  // Most datagrams in one segmented send (the kernel's UDP_MAX_SEGMENTS is
  // at least 64) and most bytes (one IPv4 UDP datagram's payload).
  static constexpr std::size_t kMaxGsoSegments = 64;
  static constexpr std::size_t kMaxGsoBytes = 65507;

  uint64_t sent = 0, send_calls = 0, send_dropped = 0, received = 0, recv_calls = 0;
  uint64_t gso_sends = 0;  // segmented sends (of 2 or more datagrams)
  uint64_t bytes_sent = 0, bytes_received = 0;

 private:
  struct Staged {
    const std::byte* data;
    std::size_t len;
    sockaddr_in to;
  };
  std::size_t send_batch(const ImpairStage::Out* out, std::size_t n);
  // Datagrams from out[0] on (at most n) that can leave as one segmented send.
  std::size_t gso_group(const ImpairStage::Out* out, std::size_t n) const noexcept;

  int fd_ = -1;
  sockaddr_in local_{};
  std::vector<Staged> staged_;
  std::vector<ImpairStage::Out> out_;
  std::unique_ptr<ImpairStage> impair_;
  bool gso_ = true;
  bool gro_ = false;
  std::vector<iovec> tx_iov_;  // send_batch's scratch: one per datagram
};

}  // namespace tsu::transport::udp
