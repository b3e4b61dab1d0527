// Per-peer reliability: acknowledgement processing, fast retransmit,
// in-order delivery with duplicate suppression, transmission within the
// congestion window, and acknowledgements (piggybacked or pure).
#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "transport/udp/udp_trace.hpp"
#include "transport/udp/udp_transport.hpp"

namespace tsu::transport::udp {

void UdpTransport::handle_datagram(UdpSocket::RxBuf& rb, uint64_t now) {
  ParsedDatagram d;
  const ParseStatus ps =
      parse_datagram(std::span<const std::byte>(rb.data, rb.len), secret_, rank_, size_,
                     static_cast<uint32_t>(max_fragment()), d, tag_key());
  if (ps != ParseStatus::kOk) {
    ++st_.drops[static_cast<int>(ps)];
    TSU_LOG_DEBUG("udp: dropped a %zu-byte datagram: %s", rb.len, parse_status_name(ps));
    // Authenticated, so a rank of this job sent it; its retransmissions would
    // be dropped too until it is declared lost: say why, once.
    if (ps == ParseStatus::kTooLong && !warned_size_) {
      warned_size_ = true;
      TSU_LOG_WARN("udp: a peer sends datagrams larger than this rank's %u bytes (TSU_UDP_MTU=%s): "
                   "set TSU_UDP_MTU to one number on every rank",
                   static_cast<unsigned>(cfg_.mtu), cfg_.mtu_given ? "given" : "auto");
    }
    return;
  }
  Peer& p = peer(d.h.src_rank);
  if (p.lost) {
    ++st_.from_lost_peer;
    return;
  }
  p.last_rx_ns = now;
  // Learn the address from an authenticated datagram if we had none.
  if (p.addr.sin_family != AF_INET) p.addr = rb.from;
  on_ack_fields(p, d, now);
  if (d.h.flags & kDupSeen) widen_reordering_window(p);
  switch (d.h.type) {
    case kData:
      ++st_.data_received;
      on_data(p, d, rb.data, now);
      if (!rb.data) rb.data = pool_.get();  // the ring kept the buffer
      break;
    case kPing:
      p.ack_pending = true;
      p.ack_now = true;
      p.pong = true;
      p.echo_ts = d.h.ts;
      p.echo_rx_ns = now;
      schedule_ack(p);
      break;
    case kAck:
      ++st_.acks_received;
      break;
    default:
      break;
  }
}

void UdpTransport::handle_coalesced(const UdpSocket::RxBuf& rb, uint64_t now) {
  rx_one_.from = rb.from;
  if (rb.len == 0) {  // truncated: dropped (and counted) by the parser
    rx_one_.len = 0;
    handle_datagram(rx_one_, now);
    return;
  }
  const std::size_t seg = rb.segment ? rb.segment : rb.len;
  for (std::size_t off = 0; off < rb.len; off += seg) {
    // A datagram longer than ours is copied cut short: the parser rejects
    // it by its length field, as a truncated read would be.
    const std::size_t len = std::min({seg, rb.len - off, rx_one_.cap});
    std::memcpy(rx_one_.data, rb.data + off, len);
    rx_one_.len = len;
    handle_datagram(rx_one_, now);  // if the ring kept rx_one_.data, it was replaced
  }
}

void UdpTransport::on_ack_fields(Peer& p, const ParsedDatagram& d, uint64_t now) {
  const uint32_t ack = d.h.ack;
  // An ack for something never sent is stale or bogus: ignore all of it.
  if (seq_lt(p.snd_max, ack) || seq_lt(ack, p.una - cfg_.queue)) return;
  const uint32_t qmask = cfg_.queue - 1;
  uint32_t newly = 0;
  uint64_t rack = 0;  // newest transmission known delivered by this ack
  while (seq_lt(p.una, ack)) {
    TxSlot& s = p.tx[p.una & qmask];
    if (!s.sacked) ++newly;
    else --p.sacked;
    rack = std::max(rack, s.sent_ns);
    pool_.put(s.buf);
    s = TxSlot{};
    ++p.una;
  }
  // Selective acks: 64 bits in the header, more in a pure ack's payload.
  uint32_t highest = 0;
  bool have_highest = false;
  auto mark = [&](uint32_t seq) {
    if (!seq_lt(seq, p.snd_max) || seq_lt(seq, p.una)) return;
    TxSlot& s = p.tx[seq & qmask];
    if (!s.sacked) {
      s.sacked = true;
      ++p.sacked;
      ++newly;
      rack = std::max(rack, s.sent_ns);
    }
    highest = seq;
    have_highest = true;
  };
  for (uint64_t m = d.h.sack; m; m &= m - 1) mark(ack + 1 + static_cast<uint32_t>(__builtin_ctzll(m)));
  if (d.h.type == kAck) {
    for (std::size_t i = 0; i < d.payload.size(); ++i) {
      const auto b = static_cast<uint8_t>(d.payload[i]);
      for (uint32_t bit = 0; b >> bit; ++bit)
        if (b & (1u << bit)) mark(ack + 1 + 64 + static_cast<uint32_t>(i) * 8 + bit);
    }
  }
  if (newly) {
    // Spurious timeout: this ack echoes a transmission from before the
    // timeout (the echo is only ever moved later, by the peer's hold time).
    if (p.rto_fired_ns && d.h.echo_ts) {
      if (d.h.echo_ts < p.rto_fired_ns) {
        p.cc.undo_timeout();
        ++st_.spurious_timeouts;
        trace(p, now, 'U');
      } else {
        p.cc.forget_undo();  // a retransmission got through: it was real
      }
      p.rto_fired_ns = 0;
    }
    p.cc.on_ack(newly);
    if (d.h.echo_ts && d.h.echo_ts <= now) p.rtt.sample(now - d.h.echo_ts);
  }
  p.cc.on_una(p.una);
  if (newly) p.probes = 0;
  if (p.una == p.snd_max) p.rto_deadline = p.tlp_deadline = UINT64_MAX;
  // Loss detection (RACK, RFC 8985, simplified): a datagram still missing
  // that was (re)transmitted more than a reordering allowance (srtt/4) before
  // one that has now been delivered is lost: resend it.  Being time based it
  // works with small windows and also catches lost retransmissions.
  p.rack_ns = std::max(p.rack_ns, rack);
  if (have_highest || rack) {
    const uint64_t srtt = p.rtt.srtt();
    const uint64_t reo = std::max<uint64_t>(std::min<uint64_t>(p.reo_mult * srtt / 4, srtt), 20'000);
    for (uint32_t seq = p.una; seq != p.snd_max; ++seq) {
      TxSlot& s = p.tx[seq & qmask];
      if (s.sacked || s.tx == 0 || s.sent_ns + reo >= p.rack_ns) continue;
      if (!s.fast_rtx) {
        s.fast_rtx = true;
        if (p.cc.on_loss(seq, p.snd_max, p.rtt.srtt(), p.rtt.min_rtt())) {
          trace(p, now, 'L');
          if (p.reo_mult > 1 && ++p.reo_quiet_epochs >= kReoDecayEpochs) {
            --p.reo_mult;
            p.reo_quiet_epochs = 0;
          }
        }
      }
      ++st_.fast_retransmits;
      ++st_.retransmits;
      TSU_TRACE(kTraceRetransmit, p.rank, seq, 1);
      stage_data(p, seq, now);
    }
  }
  if (newly || p.snd_max != p.nxt) schedule_tx(p);
  if (newly && trace_ && now - last_trace_ns_ > 1'000'000) trace(p, now, 'A');
  trace_window(p);
}

void UdpTransport::widen_reordering_window(Peer& p) {
  if (p.reo_mult < kMaxReoMult) ++p.reo_mult;
  p.reo_quiet_epochs = 0;
  ++st_.spurious_retransmits;
}

void UdpTransport::on_data(Peer& p, const ParsedDatagram& d, std::byte*& buf, uint64_t now) {
  const uint32_t seq = d.h.seq;
  const uint32_t wmask = cfg_.window - 1;
  p.ack_pending = true;
  ++p.rx_unacked;
  if ((d.h.flags & (kFirst | kLast)) == (kFirst | kLast)) ++p.rx_whole;
  schedule_ack(p);
  if (seq_lt(seq, p.rcv_nxt)) {
    ++st_.duplicates;  // already delivered: never again; re-acknowledge
    p.ack_now = true;
    p.dup_seen = true;
    return;
  }
  if (seq - p.rcv_nxt >= cfg_.window) {
    ++st_.out_of_window;
    p.ack_now = true;
    return;
  }
  p.echo_ts = d.h.ts;
  p.echo_rx_ns = now;
  if (seq != p.rcv_nxt) {
    RxSlot& r = p.rx[seq & wmask];
    if (r.buf) {
      ++st_.duplicates;
      p.dup_seen = true;
      return;
    }
    r = RxSlot{buf, d.h.payload_len, d.h.flags};
    buf = nullptr;  // kept until its turn
    ++p.rx_buffered;
    ++st_.reordered;
    p.ack_now = true;  // gap notice: the sender learns at once
    return;
  }
  deliver(p, d.payload, d.h.flags);
  ++p.rcv_nxt;
  while (p.rx_buffered) {
    RxSlot& r = p.rx[p.rcv_nxt & wmask];
    if (!r.buf) break;
    const RxSlot taken = r;
    r = RxSlot{};
    --p.rx_buffered;
    deliver(p, std::span<const std::byte>(taken.buf + kHeaderSize, taken.payload_len),
            taken.flags);
    pool_.put(taken.buf);
    ++p.rcv_nxt;
  }
}

void UdpTransport::deliver(Peer& p, std::span<const std::byte> frag, uint8_t flags) {
  if (flags & kPacked) {
    const bool ok = p.reasm.idle() &&
                    for_each_packed(frag, cfg_.max_message, [&](const core::MessageHeader& h, const std::byte* b) {
                      keep_for_dispatch(p, h, b);
                    });
    if (!ok) {
      ++st_.reassembly_errors;
      TSU_LOG_WARN("udp: malformed packed datagram from rank %u dropped", p.rank);
    }
    return;
  }
  core::MessageHeader hdr;
  const std::byte* payload = nullptr;
  switch (p.reasm.feed(frag, flags, cfg_.max_message, hdr, payload)) {
    case Reassembler::Result::kNone:
      return;
    case Reassembler::Result::kError:
      ++st_.reassembly_errors;
      TSU_LOG_WARN("udp: malformed message from rank %u dropped", p.rank);
      return;
    case Reassembler::Result::kMessage:
      break;
  }
  if (p.reasm.holds_message()) {
    keep_reassembled(p);
    return;
  }
  keep_for_dispatch(p, hdr, payload);
}

void UdpTransport::keep_reassembled(Peer& p) {
  ++st_.msgs_delivered;
  p.rx_message = true;
  std::vector<std::byte> spare;
  if (!spare_buffers_.empty()) {
    spare = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
  }
  ready_at_.push_back(ReadyAt{ready_owned_.size(), p.rank, true});
  ready_owned_.push_back(p.reasm.take(std::move(spare)));
}

void UdpTransport::keep_for_dispatch(Peer& p, const core::MessageHeader& hdr,
                                     const std::byte* payload) {
  ++st_.msgs_delivered;
  p.rx_message = true;
  // Kept for dispatch after poll releases the lock (udp_transport.hpp).
  ready_.resize((ready_.size() + 7) & ~std::size_t{7});  // aligned payloads
  ready_at_.push_back(ReadyAt{ready_.size(), p.rank, false});
  const auto* hb = reinterpret_cast<const std::byte*>(&hdr);
  ready_.insert(ready_.end(), hb, hb + kMsgHeaderSize);
  if (hdr.payload_len) ready_.insert(ready_.end(), payload, payload + hdr.payload_len);
}

void UdpTransport::schedule_tx(Peer& p) {
  if (!p.in_tx_list) {
    p.in_tx_list = true;
    tx_list_.push_back(&p);
  }
}

void UdpTransport::schedule_ack(Peer& p) {
  if (!p.in_ack_list) {
    p.in_ack_list = true;
    ack_list_.push_back(&p);
  }
}

void UdpTransport::transmit(Peer& p, uint64_t now) {
  if (p.lost) return;
  const uint32_t cwnd = std::max(p.cc.window(), 1u);
  // New data with nothing in flight: the peer is monitored from now on
  // (liveness.cpp; the silence before does not count against it).
  if (p.snd_max == p.una && p.snd_max != p.nxt && !p.watched) {
    p.monitor_since_ns = now;
    timer_by(now + cfg_.keepalive_ns);
  }
  while (p.snd_max != p.nxt && p.snd_max - p.una < cfg_.window &&
         p.snd_max - p.una - p.sacked < cwnd) {
    stage_data(p, p.snd_max, now);
    ++p.snd_max;
  }
  // The rest leaves when acknowledgements open the window (on_ack_fields).
}

void UdpTransport::stage_data(Peer& p, uint32_t seq, uint64_t now) {
  TxSlot& s = p.tx[seq & (cfg_.queue - 1)];
  WireHeader h;
  std::memcpy(&h, s.buf, kHeaderSize);
  // The payload is final once sent (no more packing into it).
  if (s.tx == 0) h.payload_crc = crc32c(s.buf + kHeaderSize, h.payload_len);
  h.ack = p.rcv_nxt;
  h.sack = p.sack64();
  h.ts = now;
  h.echo_ts = p.echo_for(now);
  h.flags = static_cast<uint8_t>((h.flags & ~kDupSeen) | (p.dup_seen ? kDupSeen : 0));
  p.dup_seen = false;
  seal_header(h, secret_);
  std::memcpy(s.buf, &h, kHeaderSize);
  s.sent_ns = now;
  if (s.tx++ == 0) ++st_.data_sent;
  p.ack_pending = false;  // piggybacked
  p.ack_now = false;
  p.rx_unacked = 0;
  p.rx_whole = 0;
  p.rx_message = false;
  p.ack_deadline = UINT64_MAX;
  p.pong = false;
  p.rto_deadline = std::min(p.rto_deadline, now + p.rtt.rto());
  // Tail-loss probe: if nothing is acknowledged within ~2 RTT, resend the
  // newest datagram so the ack it draws reveals the holes (long before RTO).
  // Up to kMaxProbes, each waiting twice as long: with random loss a probe
  // or its ack is itself lost often enough that one probe then a 10 ms RTO
  // dominated the transfer time.
  const uint64_t srtt = p.rtt.srtt() ? p.rtt.srtt() : cfg_.initial_rto_ns / 2;
  p.tlp_deadline = now + (std::max<uint64_t>(2 * srtt, kMinProbeNs) << p.probes);
  timer_by(std::min(p.rto_deadline, p.tlp_deadline));
  if (cfg_.auth) seal_tag(s.buf, s.len, cfg_.auth_key, rank_, tag_counter_++);  // the buffer holds mtu bytes; s.len <= mtu - kTagSize
  sock_.stage(s.buf, s.len + trailer(), p.addr);
}

WireHeader UdpTransport::control_header(const Peer& p, uint8_t type, uint64_t now) const {
  WireHeader h{};
  h.type = type;
  h.src_rank = rank_;
  h.dst_rank = p.rank;
  h.ack = p.rcv_nxt;
  h.sack = p.sack64();
  h.ts = now;
  h.echo_ts = p.echo_for(now);
  return h;
}

void UdpTransport::stage_ack(Peer& p, uint64_t now) {
  WireHeader h = control_header(p, kAck, now);
  h.flags = static_cast<uint8_t>((p.pong ? kPong : 0) | (p.dup_seen ? kDupSeen : 0));
  p.dup_seen = false;
  // Extended selective acks beyond the first 64 (only as far as needed).
  std::byte* ext = p.ack_buf + kHeaderSize;
  std::size_t ext_len = 0;
  if (p.rx_buffered && cfg_.window > 65) {
    const uint32_t wmask = cfg_.window - 1;
    const std::size_t nbits = std::min<std::size_t>(cfg_.window - 65, kMaxSackBytes * 8);
    std::memset(ext, 0, (nbits + 7) / 8);
    for (std::size_t i = 0; i < nbits; ++i) {
      if (p.rx[(p.rcv_nxt + 65 + static_cast<uint32_t>(i)) & wmask].buf) {
        ext[i / 8] |= std::byte{static_cast<unsigned char>(1u << (i % 8))};
        ext_len = i / 8 + 1;
      }
    }
  }
  h.payload_len = static_cast<uint32_t>(ext_len);
  h.payload_crc = crc32c(ext, ext_len);
  seal_header(h, secret_);
  std::memcpy(p.ack_buf, &h, kHeaderSize);
  if (cfg_.auth) seal_tag(p.ack_buf, kHeaderSize + ext_len, cfg_.auth_key, rank_, tag_counter_++);
  sock_.stage(p.ack_buf, kHeaderSize + ext_len + trailer(), p.addr);
  ++st_.acks_sent;
  p.ack_pending = false;
  p.ack_now = false;
  p.rx_unacked = 0;
  p.rx_whole = 0;
  p.rx_message = false;
  p.ack_deadline = UINT64_MAX;
  p.pong = false;
}

void UdpTransport::transmit_scheduled(uint64_t now) {
  for (Peer* p : tx_list_) {
    p->in_tx_list = false;
    transmit(*p, now);
  }
  tx_list_.clear();
}

void UdpTransport::send_pending(uint64_t now, bool defer_lone_acks) {
  // Data first (it carries acknowledgements), then pure acks still owed.
  transmit_scheduled(now);
  if (!defer_lone_acks) {
    send_acks(now);
    return;
  }
  std::size_t kept = 0;
  for (Peer* p : ack_list_) {
    if (p->ack_pending && !p->lost && may_hold_ack(*p)) {
      ack_list_[kept++] = p;  // a handler's reply may carry it (send_acks later)
      continue;
    }
    p->in_ack_list = false;
    if (p->ack_pending && !p->lost) stage_ack(*p, now);
  }
  ack_list_.resize(kept);
}

void UdpTransport::send_acks(uint64_t now) {
  for (Peer* p : ack_list_) {
    p->in_ack_list = false;
    if (!p->ack_pending || p->lost) continue;
    // Only datagrams that completed messages wait (may_hold_ack): a fragment
    // in the middle of a transfer is acknowledged at once (the sender is
    // clocked by it).
    if (!may_hold_ack(*p) || now >= p->ack_deadline) {
      stage_ack(*p, now);
    } else if (p->ack_deadline == UINT64_MAX) {
      // A lone datagram no handler answered (typically a reply at the
      // requester): the next request usually follows within microseconds and
      // carries the ack.  Held at most kAckDelayNs; no timerfd is armed for
      // it (that would wake us in the middle of the next round trip), the
      // engine's sleep timeout covers it (max_sleep_ns).
      p->ack_deadline = now + kAckDelayNs;
      next_timer_ns_ = std::min(next_timer_ns_, p->ack_deadline);
    }
  }
  ack_list_.clear();
}

void UdpTransport::flush(uint64_t now) {
  sock_.flush(now);
  // Datagrams held by the impairment stage (test facility) leave from poll.
  if (const uint64_t due = sock_.next_impair_due(now); due != UINT64_MAX) timer_by(now + due);
}

}  // namespace tsu::transport::udp
