// The reference network transport: read this folder to write a new one.
//
// Ranks on other nodes over TCP.  Each rank sends on one stream per peer that
// it opens itself (lazily, on its first message to the peer or when it starts
// waiting on the peer; the first message waits for the connection) and receives on the streams peers opened to it, so
// each direction of a pair is one stream: TCP gives the seam's "exactly
// once, in order per (sender, receiver)" for free.  A message is framed as
// its 40-byte MessageHeader followed by header.payload_len bytes.
//
// It offers the seam's Messaging and PeerLoss parts (transport/messaging.hpp,
// transport/peer_loss.hpp) and nothing else: RMA and atomics ride the message
// emulation (transport/message_rma/), tagged rendezvous moves data in
// messages.  A peer is lost when its stream ends or fails before this rank
// finalizes (a process that exits closes its sockets), or, while this rank
// waits on it (watch_peer), when it answers no ping for TSU_TCP_PEER_TIMEOUT
// (a frozen process or node: its kernel may still acknowledge the bytes).
// Pings and pongs are the transport's own frames, handler 0 (kHandlerNone),
// which no layer sends.
//
// Trust: a stream's first bytes are a hello with the sender's rank and a
// token derived from the job secret; the acceptor drops streams without it.
// The token travels in clear and messages are not authenticated: on a
// network where others can listen, use udp (TSU_UDP_AUTH=1) instead.
#pragma once

#include <netinet/in.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/ipv4_address.hpp"
#include "transport/messaging.hpp"
#include "transport/peer_loss.hpp"
#include "transport/transport.hpp"

namespace tsu::transport::tcp {

struct TcpConfig {
  std::string bind_ip;  // address to listen on and advertise
  bool bind_ip_given = false;
  std::size_t max_message = 256u << 10;    // largest payload of one message
  std::size_t send_queue = 8u << 20;       // bytes queued per peer before TSU_EAGAIN
  uint64_t keepalive_ns = 500'000'000;        // ping a watched peer silent this long
  uint64_t peer_timeout_ns = 10'000'000'000;  // lost when silent this long (and TCP's timers)
};

using Token = std::array<uint8_t, 32>;

class TcpTransport final : public Transport, public Messaging, public PeerLoss {
 public:
  using AddressResolver = Ipv4Resolver;  // transport/ipv4_address.hpp

  TcpTransport(uint32_t rank, uint32_t size, const TcpConfig& cfg, const Token& token);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // Listens on cfg.bind_ip (any port); then local_address() is what peers
  // connect to.
  tsu_status_t open(std::string& error);
  sockaddr_in local_address() const noexcept { return local_; }
  void set_address_resolver(AddressResolver resolve) { resolve_ = std::move(resolve); }

  // ---- Transport core ----------------------------------------------------------
  const char* name() const noexcept override { return "tcp"; }
  Parts parts() noexcept override {
    Parts p;
    p.messages = this;
    p.peer_loss = this;
    return p;
  }
  // Accepts streams, reads and delivers whole messages, writes what queued,
  // opens the streams waits asked for, reports lost peers.
  std::size_t poll(const core::MessageHandlerTable& handlers) noexcept override;
  // Sleeps only with nothing left to write (readable streams wake wait_fd).
  bool prepare_sleep() noexcept override;
  int wait_fd() const noexcept override { return epoll_fd_; }
  // While peers are watched: wake to ping them and to time them out.
  uint64_t max_sleep_ns() const noexcept override {
    return watched_now_.load(std::memory_order_relaxed) ? cfg_.keepalive_ns / 4 + 1 : UINT64_MAX;
  }
  void finalizing() noexcept override { finalizing_.store(true, std::memory_order_relaxed); }
  void print_stats(std::FILE* f) const noexcept override;

  // ---- Messaging -----------------------------------------------------------------
  std::size_t max_message_payload() const noexcept override { return cfg_.max_message; }
  // Writes the frame now when the stream is idle, else queues it (TSU_EAGAIN
  // past TSU_TCP_SEND_QUEUE bytes).  Opens the stream on first use.
  tsu_status_t send_message(uint32_t dst, const core::MessageHeader& header,
                            const void* payload) noexcept override;

  // ---- PeerLoss ------------------------------------------------------------------
  void set_peer_lost_handler(LostFn fn, void* ctx) noexcept override {
    lost_fn_ = fn;
    lost_ctx_ = ctx;
  }
  bool is_peer_lost(uint32_t rank) const noexcept override {
    return rank < size_ && lost_[rank].load(std::memory_order_acquire);
  }
  // Counted.  A watched peer gets a stream in the next poll if it has none
  // (a dead rank refuses it), pings when silent, and is lost when silent
  // past the peer timeout.  Unwatched peers cost nothing.
  void watch_peer(uint32_t rank) noexcept override;
  void unwatch_peer(uint32_t rank) noexcept override;

 private:
  // This rank's stream to a peer (under mu_).
  struct Outgoing {
    int fd = -1;                   // connected (start_connect waits for it)
    std::vector<std::byte> queue;  // frames not yet written, from `written`
    std::size_t written = 0;
  };
  // A peer's stream to this rank (the poller's alone).
  struct Incoming {
    int fd = -1;
    uint32_t rank = UINT32_MAX;  // known once its hello checked out
    std::vector<std::byte> buf;  // bytes read, not yet delivered
  };

  // Opens the stream to `dst` and sends the hello (under mu_; `addr`
  // resolved outside it).  Waits for the connection: one round trip, once
  // per peer, up to the peer timeout for a node that does not answer.
  tsu_status_t start_connect(uint32_t dst, const sockaddr_in& addr) noexcept;
  // Writes what `o` has queued; false when the stream failed.
  bool flush(Outgoing& o) noexcept;
  void accept_streams() noexcept;
  // Reads `in` and delivers its whole messages; false when it ended.
  bool read_stream(Incoming& in, const core::MessageHandlerTable& handlers,
                   std::size_t& work) noexcept;
  // Closes the stream to `rank` and records the loss (reported from poll).
  void lose(uint32_t rank, const char* why) noexcept;
  void report_losses() noexcept;
  // Pings watched peers gone silent, loses those silent past the timeout.
  std::size_t check_watched() noexcept;
  void send_control(uint32_t dst, uint16_t kind) noexcept;

  const uint32_t rank_;
  const uint32_t size_;
  const TcpConfig cfg_;
  const Token token_;
  AddressResolver resolve_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  sockaddr_in local_{};

  mutable std::mutex mu_;
  std::vector<Outgoing> out_;        // by rank (under mu_)
  std::vector<uint32_t> to_flush_;   // ranks with queued bytes (under mu_)
  std::vector<uint32_t> lost_now_;   // lost, not yet reported (under mu_)
  std::vector<std::unique_ptr<Incoming>> in_;  // the poller's, by descriptor
  std::vector<int> in_of_rank_;                // the poller's: rank -> descriptor (-1)
  std::unique_ptr<std::atomic<bool>[]> lost_;
  std::unique_ptr<std::atomic<bool>[]> want_stream_;  // watch_peer's requests
  std::atomic<bool> any_wanted_{false};
  std::unique_ptr<std::atomic<uint32_t>[]> watches_;  // open watch_peer calls
  std::unique_ptr<std::atomic<uint64_t>[]> heard_ns_;  // last frame, or the watch's start
  std::vector<uint64_t> pinged_ns_;                     // the poller's
  std::atomic<uint32_t> watched_now_{0};                // ranks with watches
  uint64_t next_check_ns_ = 0;                          // the poller's
  std::atomic<bool> finalizing_{false};
  LostFn lost_fn_ = nullptr;
  void* lost_ctx_ = nullptr;
  std::atomic<uint64_t> sent_{0}, received_{0}, queued_{0}, pings_{0};
};

}  // namespace tsu::transport::tcp
