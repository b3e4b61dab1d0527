// The udp transport (seed 001's protocol, done properly): reliable, ordered,
// exactly-once messages between ranks over one UDP socket per rank.
//
//   datagram.*     wire format, MAC/CRC, the pure parser (fuzzed)
//   udp_socket.*   socket, sendmmsg/recvmmsg batching, impairment hook
//   impair.*       seeded impairment stage (test facility, off by default)
//   reliability.*  per-peer windows: seq/ack/sack, retransmission, ordering
//   congestion.hpp RTT estimation, RTO back-off, AIMD congestion window
//   fragment.hpp   fragmentation and reassembly
//   liveness.cpp   timers: retransmission timeouts, keep-alives, peer loss
//   wake_source.*  socket + timerfd in one epoll set: what wakes a sleeper
//                  engine (timers of sends made outside progress context)
//
// Threading: every entry point takes one (recursive) lock.  poll() does the
// protocol work under it but dispatches the messages that became complete
// only after releasing it: the layers above take their own locks in handlers
// and also call send_message while holding them (collectives, tagged
// messages), so dispatching under the transport lock would be a lock-order
// inversion (deadlock).  Sends made between batch_begin() and batch_end() by
// the engine's executor, and replies sent from handlers during poll's
// dispatch, are staged and leave in one sendmmsg per flush.
#pragma once

#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/messaging.hpp"
#include "transport/peer_loss.hpp"
#include "transport/peer_watch.hpp"
#include "transport/transport.hpp"
#include "transport/udp/buffer_pool.hpp"
#include "transport/udp/datagram.hpp"
#include "transport/udp/reliability.hpp"
#include "transport/udp/udp_socket.hpp"
#include "transport/udp/wake_source.hpp"

namespace tsu::transport::udp {

struct UdpConfig {
  std::string bind_ip = "127.0.0.1";
  bool bind_ip_given = false;   // TSU_UDP_ADDR set (else derived from the bootstrap)
  uint16_t port = 0;
  uint32_t mtu = 1472;          // bytes of one datagram (UDP payload)
  bool mtu_given = false;       // TSU_UDP_MTU set (else from the interface: interface_mtu.hpp)
  uint32_t window = 1024;       // datagrams in flight per peer (power of two)
  uint32_t queue = 4096;        // datagrams queued per peer (power of two, >= window)
  std::size_t max_message = 256u << 10;  // largest message payload
  // Tagged messages to ranks on other nodes up to this size go eager
  // (TSU_UDP_EAGER_MAX; 0: TSU_EAGER_MAX): one message of a few datagrams
  // instead of RTS, CTS, DATA and FIN.
  std::size_t eager_max = 32u << 10;
  uint64_t initial_rto_ns = 20'000'000;
  uint64_t min_rto_ns = 10'000'000;
  uint64_t max_rto_ns = 1'000'000'000;
  uint64_t keepalive_ns = 500'000'000;
  uint64_t peer_timeout_ns = 10'000'000'000;
  double cwnd_initial = 32, cwnd_min = 4;
  std::size_t sockbuf = 4u << 20;
  bool gso = true;  // segmented sends (udp_socket.hpp)
  bool gro = true;  // coalesced receives (udp_socket.hpp)
  std::string impair;      // impairment spec (impair.hpp); empty: off
  std::string trace_file;  // cwnd/RTT/retransmission trace; empty: off
  bool auth = false;       // payload authentication: a tag on every datagram (datagram.hpp)
  PayloadKey auth_key;     // its key (derived from the job secret)
};

struct UdpStats {
  uint64_t msgs_sent = 0, msgs_delivered = 0, data_sent = 0, data_received = 0;
  uint64_t msgs_packed = 0;  // messages that joined another's datagram
  uint64_t acks_sent = 0, acks_received = 0, pings_sent = 0;
  uint64_t retransmits = 0, fast_retransmits = 0, timeouts = 0, tail_probes = 0;
  uint64_t duplicates = 0, out_of_window = 0, reordered = 0;
  uint64_t spurious_retransmits = 0;  // peers' kDupSeen reports
  uint64_t spurious_timeouts = 0;     // timeouts undone (Eifel)
  uint64_t drops[static_cast<int>(ParseStatus::kCount)] = {};
  uint64_t unknown_handler = 0, reassembly_errors = 0, from_lost_peer = 0;
  uint64_t eagain = 0, peers = 0, peers_lost = 0;
  uint64_t addr_lookups = 0;  // peer addresses fetched from the bootstrap (first contact)
};

// Looks up a peer's address on first contact (the bootstrap's key-value
// store); false if the rank has none.  May block; called without the lock.
using AddressResolver = std::function<bool(uint32_t rank, sockaddr_in& out)>;

class UdpTransport final : public Transport, public Messaging, public PeerLoss {
 public:
  // Fewer data datagrams than this from a peer in one poll: their pure ack
  // waits until the handlers ran, so a reply they send carries it instead.
  static constexpr uint32_t kAckEvery = 2;
  // ...and fewer than this when each was a whole message (request/reply
  // traffic: a reply, or the caller's next request, follows; a pure ack
  // sent first would put a send syscall in the round trip's path).
  static constexpr uint32_t kAckEveryWhole = 4;
  // Whether a pure ack owed to p may wait for data to ride on.  Never for
  // as many datagrams as the peer's smallest congestion window (the same
  // TSU_UDP_CWND_MIN on every rank): it could send no more until the ack.
  bool may_hold_ack(const Peer& p) const noexcept {
    return !p.ack_now && p.rx_message &&
           (p.rx_unacked < kAckEvery ||
            (p.rx_unacked == p.rx_whole && p.rx_unacked < kAckEveryWhole &&
             p.rx_unacked < cfg_.cwnd_min));
  }
  // Tail-loss probes before the retransmission timeout, and the shortest
  // wait for the first (scheduling delays on a busy host exceed the RTT).
  static constexpr uint8_t kMaxProbes = 3;
  static constexpr uint64_t kMinProbeNs = 250'000;
  // Longest a pure ack for a lone unanswered datagram waits for data to ride
  // on (below kMinProbeNs, so the peer does not probe for it).
  static constexpr uint64_t kAckDelayNs = 200'000;
  // RACK reordering window: at most srtt (kMaxReoMult quarters); one quarter
  // is given back after kReoDecayEpochs loss recoveries without a duplicate.
  static constexpr uint32_t kMaxReoMult = 4;
  static constexpr uint32_t kReoDecayEpochs = 16;
  UdpTransport(uint32_t rank, uint32_t size, const Secret& secret, const UdpConfig& cfg);
  ~UdpTransport() override;

  // Binds the socket; then local_address() is what peers send to.
  tsu_status_t open(std::string& error);
  sockaddr_in local_address() const { return sock_.local(); }
  void set_peer_address(uint32_t rank, const sockaddr_in& addr);
  // Start-up that scales: no address is fetched at init.  A send to a rank
  // whose address is unknown asks `resolve` once; a datagram from a rank
  // teaches its address without asking (reliability.cpp).
  void set_address_resolver(AddressResolver resolve) { resolve_ = std::move(resolve); }

  const char* name() const noexcept override { return "udp"; }
  Parts parts() noexcept override {
    Parts p;
    p.messages = this;
    p.peer_loss = this;
    return p;
  }

  // ---- Messaging (RMA: the message emulation) --------------------------------
  std::size_t max_message_payload() const noexcept override { return cfg_.max_message; }
  std::size_t eager_max(uint32_t peer) const noexcept override {
    return peer < size_ && peer != rank_ ? std::min(cfg_.eager_max, cfg_.max_message) : 0;
  }
  tsu_status_t send_message(uint32_t dst, const core::MessageHeader& header,
                            const void* payload) noexcept override;
  void batch_begin() noexcept override;
  void batch_end() noexcept override;

  // ---- Progress ------------------------------------------------------------------
  std::size_t poll(const core::MessageHandlerTable& handlers) noexcept override;
  bool prepare_sleep() noexcept override;
  void end_sleep() noexcept override;
  int wait_fd() const noexcept override { return wake_.fd(); }
  uint64_t max_sleep_ns() const noexcept override;

  // ---- PeerLoss ------------------------------------------------------------------
  void set_peer_lost_handler(LostFn fn, void* ctx) noexcept override {
    lost_fn_ = fn;
    lost_ctx_ = ctx;
  }
  bool is_peer_lost(uint32_t rank) const noexcept override;
  // Counted (PeerWatches); poll applies the changes.  A watched peer is
  // pinged while silent and lost past the timeout, as is one with data in
  // flight; no other (docs/udp.md, "Keep-alive / peer loss").
  void watch_peer(uint32_t rank) noexcept override;
  void unwatch_peer(uint32_t rank) noexcept override { watches_.unwatch(rank); }

  void print_stats(std::FILE* f) const noexcept override;
  UdpStats stats() const;
  const UdpConfig& config() const noexcept { return cfg_; }

 private:
  Peer& peer(uint32_t rank);  // creates lazily
  // Whether dst's address is known, asking the resolver (outside the lock)
  // the first time.  Caller does not hold mu_.
  bool address_known(uint32_t dst);
  std::size_t poll_protocol() noexcept;  // poll's work under the lock
  std::size_t max_fragment() const noexcept { return cfg_.mtu - kHeaderSize - trailer(); }
  // Bytes after the payload: the tag, with payload authentication.
  std::size_t trailer() const noexcept { return cfg_.auth ? kTagSize : 0; }
  const PayloadKey* tag_key() const noexcept { return cfg_.auth ? &cfg_.auth_key : nullptr; }

  // reliability.cpp
  void handle_datagram(UdpSocket::RxBuf& rb, uint64_t now);
  // A coalesced receive buffer: each datagram in it is copied into rx_one_
  // (a pool buffer, which the out-of-order ring may keep) and handled.
  void handle_coalesced(const UdpSocket::RxBuf& rb, uint64_t now);
  void on_ack_fields(Peer& p, const ParsedDatagram& d, uint64_t now);
  void widen_reordering_window(Peer& p);
  void on_data(Peer& p, const ParsedDatagram& d, std::byte*& buf, uint64_t now);
  void deliver(Peer& p, std::span<const std::byte> frag, uint8_t flags);
  void keep_for_dispatch(Peer& p, const core::MessageHeader& hdr, const std::byte* payload);
  void keep_reassembled(Peer& p);  // the message p.reasm holds, without a copy
  void transmit(Peer& p, uint64_t now);
  void stage_data(Peer& p, uint32_t seq, uint64_t now);
  void stage_ack(Peer& p, uint64_t now);
  // Header of an ack or ping to p: addressing, acknowledgement fields, times.
  WireHeader control_header(const Peer& p, uint8_t type, uint64_t now) const;
  void schedule_tx(Peer& p);
  void schedule_ack(Peer& p);
  // A protocol deadline at `t`: poll must run by then.  While an engine
  // sleeps on wait_fd (between prepare_sleep and end_sleep) the timerfd is
  // armed to it at once: sends from user threads (inline RMA, messages)
  // start timers the sleeper did not know when it chose its timeout.  While
  // nobody sleeps, the deadline is only noted: the pollers run the timers,
  // and a timerfd armed during traffic fired every probe interval, each
  // expiry stalling this VM's polling ranks for tens of microseconds (udp
  // 8 B get: mean 27 us, p99 91 us, against 17.5 and 25 without;
  // docs/design-decisions.md, "udp").
  void timer_by(uint64_t t) noexcept;
  // Data, then pure acks owed; with `defer_lone_acks`, acks for a lone
  // datagram stay queued for send_acks() after dispatch.
  void send_pending(uint64_t now, bool defer_lone_acks);
  void transmit_scheduled(uint64_t now);  // peers with queued data (tx_list_)
  // Appends a small message to the newest unsent datagram to `p` (kPacked).
  bool try_pack(Peer& p, const core::MessageHeader& header, const void* payload, std::size_t total);
  void send_acks(uint64_t now);
  void flush(uint64_t now);
  // liveness.cpp
  void run_timers(uint64_t now);
  uint64_t peer_deadline(const Peer& p) const noexcept;  // earliest timer of p
  void check_retransmit(Peer& p, uint64_t now);
  void send_ping(Peer& p, uint64_t now);
  void declare_lost(Peer& p, const char* why);
  void trace(const Peer& p, uint64_t now, char event);

  const uint32_t rank_, size_;
  const Secret secret_;
  std::atomic<uint64_t> tag_counter_{0};  // nonces of payload tags: never repeats in this process
  const UdpConfig cfg_;
  mutable std::recursive_mutex mu_;
  UdpSocket sock_;
  WakeSource wake_;
  BufferPool pool_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null until first contact
  std::vector<Peer*> active_;                 // peers with state
  std::vector<sockaddr_in> addrs_;            // by rank (family 0: unknown)
  AddressResolver resolve_;                   // set before the first send
  std::vector<Peer*> tx_list_, ack_list_;
  std::vector<UdpSocket::RxBuf> rxbufs_;
  // With coalesced receives: rxbufs_ point into this (kCoalescedBatch
  // buffers of UdpSocket::kMaxGsoBytes), and rx_one_ is the pool buffer the
  // current datagram is handled in.
  static constexpr std::size_t kCoalescedBatch = 16;
  std::vector<std::byte> rx_storage_;
  UdpSocket::RxBuf rx_one_{};
  // Messages completed in this poll, dispatched after the lock is released.
  // Single-datagram ones are copied into ready_: header + payload, back to
  // back, each at an 8-byte aligned offset; reassembled ones keep their
  // reassembly buffer (ready_owned_), which is not copied again.
  struct ReadyAt {
    std::size_t offset;  // in ready_, or the index in ready_owned_
    uint32_t src;
    bool owned;
  };
  std::vector<std::byte> ready_;
  std::vector<ReadyAt> ready_at_;
  std::vector<std::vector<std::byte>> ready_owned_;
  std::vector<std::byte> dispatching_;  // poll's copy of ready_ (consumer only)
  std::vector<ReadyAt> dispatching_at_;
  std::vector<std::vector<std::byte>> dispatching_owned_;
  // Dispatched reassembly buffers, emptied, for the next reassembly (their
  // capacity is the point: no allocation per message).
  static constexpr std::size_t kMaxSpareBuffers = 8;
  std::vector<std::vector<std::byte>> spare_buffers_;
  LostFn lost_fn_ = nullptr;
  void* lost_ctx_ = nullptr;
  std::vector<uint32_t> newly_lost_;
  // Ranks to watch that had no state yet (watch_peer); poll() resolves their
  // addresses (which may ask the bootstrap) outside the lock and creates the
  // state, whose keep-alives then detect a dead peer.
  std::vector<uint32_t> to_watch_;
  std::atomic<bool> watch_pending_{false};  // to_watch_ is not empty (poll's cheap check)
  std::unique_ptr<std::atomic<bool>[]> watch_asked_;  // by rank: watch_peer was called
  void start_watching() noexcept;
  PeerWatches watches_;          // waits per rank (watch_peer / unwatch_peer)
  uint32_t watched_now_ = 0;     // peers with state that are watched (under mu_)
  void apply_watches(uint64_t now);  // under mu_: watches_' changes onto the peers
  // Earliest protocol deadline, or earlier (deadlines that went away, e.g.
  // everything acknowledged, leave it stale until refresh_next_timer or
  // run_timers recompute it).
  mutable uint64_t next_timer_ns_ = UINT64_MAX;
  // Under mu_: next_timer_ns_ from every peer's deadlines; returns it.
  uint64_t refresh_next_timer() const noexcept;
  bool engine_asleep_ = false;  // between prepare_sleep() and end_sleep() (under mu_)
  bool warned_size_ = false;    // a peer's datagrams were too long for ours (logged once)
  int batch_depth_ = 0;
  UdpStats st_;
  std::FILE* trace_ = nullptr;
  uint64_t trace_start_ns_ = 0;
  uint64_t last_trace_ns_ = 0;
};

}  // namespace tsu::transport::udp
