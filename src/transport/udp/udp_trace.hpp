// The udp transport's timeline events (TSU_TRACE, docs/trace.md):
// retransmissions and congestion-window changes per peer.
#pragma once

#include "core/trace.hpp"
#include "transport/udp/reliability.hpp"

namespace tsu::transport::udp {

// reason: 0 retransmission timeout, 1 fast retransmit (loss found by
// selective acks), 2 tail-loss probe.
inline constexpr core::trace::EventType kTraceRetransmit{
    "udp retransmit", "udp", 'i', {"peer", "seq", "reason"}};
// A counter track per peer (the event's id is the peer's rank).
inline constexpr core::trace::EventType kTraceWindow{
    "udp cwnd", "udp", 'C', {"cwnd", "ssthresh", nullptr}};

// After the congestion state may have changed: one counter event when the
// whole-datagram window moved (not one per acknowledgement).
inline void trace_window(Peer& p) noexcept {
  if (!core::trace::on()) [[likely]] return;
  const uint32_t w = p.cc.window();
  if (w == p.traced_cwnd) return;
  p.traced_cwnd = w;
  core::trace::record(kTraceWindow, p.rank, w, static_cast<uint64_t>(p.cc.ssthresh()), 0);
}

}  // namespace tsu::transport::udp
