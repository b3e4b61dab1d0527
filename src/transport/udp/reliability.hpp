// Per-peer reliability state: the sending window (sequence numbers, the
// retransmission queue, RTT and congestion control) and the receiving window
// (cumulative + selective acknowledgement, out-of-order buffer, duplicate
// suppression, in-order delivery).  Created lazily on first contact.
//
// Sequence space (32-bit, compared with wrap-around):
//   una <= snd_max <= nxt      [una, snd_max): sent, not all acknowledged
//                              [snd_max, nxt): queued, not yet sent
//   nxt - una <= queue capacity; snd_max - una <= window (the receiver's
//   reordering buffer); the pipe, snd_max - una - sacked, <= cwnd: datagrams
//   the receiver already holds do not count against the congestion window,
//   so one hole at una does not stop new data (which is also what lets RACK
//   notice a lost retransmission)
// Receiver: every seq < rcv_nxt was delivered exactly once; seq in
// (rcv_nxt, rcv_nxt + window) may sit in the out-of-order ring; anything
// else is a duplicate (counted, answered with an ack so a lost ack is
// repaired) or out of window (dropped).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <vector>

#include "transport/udp/congestion.hpp"
#include "transport/udp/datagram.hpp"
#include "transport/udp/fragment.hpp"

namespace tsu::transport::udp {

inline bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }

struct TxSlot {
  std::byte* buf = nullptr;  // WireHeader + payload
  uint32_t len = 0;          // total datagram bytes
  uint64_t sent_ns = 0;      // last transmission
  uint8_t tx = 0;            // transmissions so far
  bool sacked = false;
  bool fast_rtx = false;     // retransmitted on a selective-ack gap since last timeout
};

struct RxSlot {
  std::byte* buf = nullptr;  // whole datagram (payload at kHeaderSize)
  uint32_t payload_len = 0;
  uint8_t flags = 0;
};

struct Peer {
  Peer(uint32_t rank_, uint32_t queue, uint32_t window, const RttEstimator& rtt_,
       const CongestionControl& cc_, uint64_t now)
      : rank(rank_), tx(queue), rtt(rtt_), cc(cc_), rx(window), last_rx_ns(now),
        last_ping_ns(now), created_ns(now), monitor_since_ns(now) {}

  const uint32_t rank;
  sockaddr_in addr{};
  bool lost = false;

  // Sending side.
  uint32_t una = 0, snd_max = 0, nxt = 0;
  std::vector<TxSlot> tx;  // queue capacity, indexed seq & (size-1)
  RttEstimator rtt;
  CongestionControl cc;
  uint64_t rto_deadline = UINT64_MAX;  // earliest unacked sent_ns + rto
  uint64_t rto_fired_ns = 0;  // last timeout, while its undo is possible (0: none)
  uint64_t rack_ns = 0;  // newest transmission time known delivered (RACK)
  // RACK reordering window = reo_mult * srtt / 4: widened when the peer
  // reports a duplicate (our retransmission was spurious: the "lost" datagram
  // was only reordered), narrowed again after kReoDecayEpochs quiet recoveries.
  uint32_t reo_mult = 1;
  uint32_t reo_quiet_epochs = 0;
  uint64_t tlp_deadline = UINT64_MAX;  // tail-loss probe (RFC 8985, section 7)
  uint32_t traced_cwnd = 0;  // the window last written to the timeline (TSU_TRACE)
  uint8_t probes = 0;   // tail-loss probes sent since the last new acknowledgement
  uint32_t sacked = 0;  // selectively acknowledged datagrams in [una, snd_max)

  // Receiving side.
  uint32_t rcv_nxt = 0;
  std::vector<RxSlot> rx;  // window, indexed seq & (size-1)
  uint32_t rx_buffered = 0;
  bool ack_pending = false;  // something arrived that we have not acknowledged
  bool ack_now = false;      // acknowledge at the end of this poll (gap, ping)
  bool dup_seen = false;     // a duplicate arrived: tell the peer (kDupSeen)
  uint32_t rx_unacked = 0;   // data datagrams received since our last ack
  uint32_t rx_whole = 0;     // ...of which each carried whole messages (first and last)
  bool rx_message = false;   // ...and one of them completed a message
  uint64_t ack_deadline = UINT64_MAX;  // a held-back pure ack leaves by then
  bool pong = false;
  uint64_t echo_ts = 0;     // ts of the newest datagram to acknowledge
  uint64_t echo_rx_ns = 0;  // when it arrived (our clock)
  Reassembler reasm;

  // Liveness.  Only a monitored peer is pinged while silent, and declared
  // lost once silent past the timeout: one this rank waits on (watched:
  // PeerLoss::watch_peer) or has unacknowledged data for.  Silence counts
  // from the later of the last datagram heard and monitor_since_ns (when
  // monitoring began): a peer idle for an hour is not lost the moment a
  // wait on it starts.
  uint64_t last_rx_ns;
  uint64_t last_ping_ns;
  uint64_t created_ns;
  uint64_t monitor_since_ns;
  bool watched = false;
  bool monitored() const noexcept { return watched || una != snd_max; }
  uint64_t silent_since() const noexcept { return last_rx_ns > monitor_since_ns ? last_rx_ns : monitor_since_ns; }

  // Scratch datagrams for acks and pings (alive until the next flush).
  alignas(8) std::byte ack_buf[kHeaderSize + kMaxSackBytes + kTagSize];
  alignas(8) std::byte ping_buf[kHeaderSize + kTagSize];

  bool in_tx_list = false;  // queued for transmission in this poll
  bool in_ack_list = false;

  uint32_t queued() const noexcept { return nxt - una; }
  // The echoed timestamp moved forward by how long we held it, so the
  // sender's RTT sample excludes our delay before answering (as QUIC's
  // ack_delay): a reply sent long after the request does not inflate RTT.
  uint64_t echo_for(uint64_t now) const noexcept {
    return echo_ts ? echo_ts + (now - echo_rx_ns) : 0;
  }
  // 64-bit selective-ack map relative to rcv_nxt (bit i: rcv_nxt + 1 + i).
  uint64_t sack64() const noexcept {
    if (!rx_buffered) return 0;
    uint64_t m = 0;
    const uint32_t mask = static_cast<uint32_t>(rx.size() - 1);
    const uint32_t n = std::min<uint32_t>(64, static_cast<uint32_t>(rx.size()) - 1);
    for (uint32_t i = 0; i < n; ++i)
      if (rx[(rcv_nxt + 1 + i) & mask].buf) m |= uint64_t{1} << i;
    return m;
  }
};

}  // namespace tsu::transport::udp
