// Timers: retransmission timeouts with back-off, keep-alives for idle peers,
// and peer loss (no authenticated datagram for peer_timeout).
#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "transport/udp/udp_trace.hpp"
#include "transport/udp/udp_transport.hpp"

namespace tsu::transport::udp {

void UdpTransport::run_timers(uint64_t now) {
  uint64_t next = UINT64_MAX;
  for (Peer* pp : active_) {
    Peer& p = *pp;
    if (p.lost) continue;
    const bool monitored = p.monitored();
    if (monitored && now - p.silent_since() >= cfg_.peer_timeout_ns) {
      declare_lost(p, "no answer");
      continue;
    }
    if (p.una != p.snd_max && now >= p.rto_deadline) check_retransmit(p, now);
    if (p.una != p.snd_max && p.probes < kMaxProbes && now >= p.tlp_deadline) {
      for (uint32_t seq = p.snd_max; seq != p.una;) {
        --seq;
        TxSlot& s = p.tx[seq & (cfg_.queue - 1)];
        if (s.sacked) continue;
        ++p.probes;
        ++st_.retransmits;
        ++st_.tail_probes;
        TSU_TRACE(kTraceRetransmit, p.rank, seq, 2);
        stage_data(p, seq, now);
        break;
      }
    }
    if (p.ack_pending && now >= p.ack_deadline) stage_ack(p, now);  // nothing carried it
    // Keep-alive: a monitored peer we have heard nothing from for an
    // interval is pinged (once per interval); its answer refreshes
    // last_rx_ns.  An idle rank pings no one (O(waits), not O(peers)).
    if (monitored && now - p.silent_since() >= cfg_.keepalive_ns &&
        now - p.last_ping_ns >= cfg_.keepalive_ns)
      send_ping(p, now);
    next = std::min(next, peer_deadline(p));
  }
  next_timer_ns_ = next;
}

uint64_t UdpTransport::peer_deadline(const Peer& p) const noexcept {
  if (p.lost) return UINT64_MAX;
  uint64_t next = p.rto_deadline;
  if (p.probes < kMaxProbes && p.una != p.snd_max) next = std::min(next, p.tlp_deadline);
  if (p.ack_pending) next = std::min(next, p.ack_deadline);
  if (!p.monitored()) return next;
  next = std::min(next, std::max(p.silent_since(), p.last_ping_ns) + cfg_.keepalive_ns);
  return std::min(next, p.silent_since() + cfg_.peer_timeout_ns);
}

void UdpTransport::check_retransmit(Peer& p, uint64_t now) {
  const uint32_t qmask = cfg_.queue - 1;
  const uint64_t rto = p.rtt.rto();
  bool fired = false;
  uint32_t budget = 0;
  uint64_t deadline = UINT64_MAX;
  for (uint32_t seq = p.una; seq != p.snd_max; ++seq) {
    TxSlot& s = p.tx[seq & qmask];
    if (s.sacked) continue;
    if (now - s.sent_ns >= rto) {
      if (!fired) {
        fired = true;
        ++st_.timeouts;
        p.cc.on_timeout(p.snd_max);
        p.rto_fired_ns = now;
        p.rtt.backoff();
        budget = std::max(p.cc.window(), 1u);
        trace(p, now, 'T');
        trace_window(p);
      }
      s.fast_rtx = false;
      if (budget) {
        // Oldest first, as many as the collapsed window allows; the rest
        // restart their timers (selective acks of these repair them sooner).
        --budget;
        ++st_.retransmits;
        TSU_TRACE(kTraceRetransmit, p.rank, seq, 0);
        p.rto_deadline = UINT64_MAX;  // recomputed below
        stage_data(p, seq, now);
      } else {
        s.sent_ns = now;
      }
    }
    deadline = std::min(deadline, s.sent_ns + p.rtt.rto());
  }
  p.rto_deadline = deadline;
}

void UdpTransport::send_ping(Peer& p, uint64_t now) {
  if (p.addr.sin_family != AF_INET) return;
  WireHeader h = control_header(p, kPing, now);
  h.payload_crc = crc32c(nullptr, 0);
  seal_header(h, secret_);
  std::memcpy(p.ping_buf, &h, kHeaderSize);
  if (cfg_.auth) seal_tag(p.ping_buf, kHeaderSize, cfg_.auth_key, rank_, tag_counter_++);
  sock_.stage(p.ping_buf, kHeaderSize + trailer(), p.addr);
  p.last_ping_ns = now;
  ++st_.pings_sent;
}

void UdpTransport::declare_lost(Peer& p, const char* why) {
  p.lost = true;
  ++st_.peers_lost;
  TSU_LOG_WARN("udp: rank %u is lost (%s for %.1f s); its requests fail with PEER_LOST", p.rank,
               why, static_cast<double>(cfg_.peer_timeout_ns) / 1e9);
  // Nothing will be sent to it again: release its buffers.
  for (uint32_t seq = p.una; seq != p.nxt; ++seq) {
    TxSlot& s = p.tx[seq & (cfg_.queue - 1)];
    pool_.put(s.buf);
    s = TxSlot{};
  }
  p.una = p.snd_max = p.nxt;
  p.sacked = 0;
  p.rto_deadline = UINT64_MAX;
  for (auto& r : p.rx) {
    pool_.put(r.buf);
    r = RxSlot{};
  }
  p.rx_buffered = 0;
  newly_lost_.push_back(p.rank);
}

void UdpTransport::trace(const Peer& p, uint64_t now, char event) {
  if (!trace_) return;
  last_trace_ns_ = now;
  std::fprintf(trace_, "%.1f %u %c %.2f %.2f %.1f %.1f %u %llu\n",
               static_cast<double>(now - trace_start_ns_) / 1e3, p.rank, event, p.cc.cwnd(),
               p.cc.ssthresh(), static_cast<double>(p.rtt.srtt()) / 1e3,
               static_cast<double>(p.rtt.rto()) / 1e3, p.snd_max - p.una,
               static_cast<unsigned long long>(st_.retransmits));
}

}  // namespace tsu::transport::udp
