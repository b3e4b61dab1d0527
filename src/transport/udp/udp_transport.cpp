#include "transport/udp/udp_transport.hpp"

#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "util/clock.hpp"

namespace tsu::transport::udp {

UdpTransport::UdpTransport(uint32_t rank, uint32_t size, const Secret& secret,
                           const UdpConfig& cfg)
    : rank_(rank), size_(size), secret_(secret), cfg_(cfg), pool_(cfg.mtu),
      peers_(size), addrs_(size), watch_asked_(new std::atomic<bool>[size]()), watches_(size) {}

UdpTransport::~UdpTransport() {
  if (trace_) std::fclose(trace_);
}

tsu_status_t UdpTransport::open(std::string& error) {
  if (cfg_.auth && !init_tag_crypto()) {
    error = "udp: payload authentication needs libsodium, which cannot be initialised";
    return TSU_ERR_SYSTEM;
  }
  if (!sock_.open(cfg_.bind_ip, cfg_.port, cfg_.sockbuf, error)) return TSU_ERR_SYSTEM;
  if (!wake_.open(sock_.fd(), error)) return TSU_ERR_SYSTEM;
  sock_.set_segmentation(cfg_.gso);
  if (!cfg_.impair.empty()) {
    ImpairConfig ic;
    if (!parse_impair_spec(cfg_.impair, ic, error)) return TSU_ERR_CONFIG;
    ic.seed = ic.seed * 1000003u + rank_;  // each rank its own reproducible stream
    sock_.set_impairment(std::make_unique<ImpairStage>(ic));
    TSU_LOG_INFO("udp: impairment stage ON: %s", cfg_.impair.c_str());
  }
  if (!cfg_.trace_file.empty()) {
    const std::string path = cfg_.trace_file + "." + std::to_string(rank_);
    trace_ = std::fopen(path.c_str(), "w");
    if (trace_) std::fprintf(trace_, "t_us peer event cwnd ssthresh srtt_us rto_us inflight retransmits\n");
  }
  trace_start_ns_ = util::now_ns();
  if (cfg_.gro && sock_.enable_coalescing()) {
    rx_storage_.resize(kCoalescedBatch * UdpSocket::kMaxGsoBytes);
    rxbufs_.resize(kCoalescedBatch);
    for (std::size_t i = 0; i < rxbufs_.size(); ++i)
      rxbufs_[i] = UdpSocket::RxBuf{rx_storage_.data() + i * UdpSocket::kMaxGsoBytes,
                                    UdpSocket::kMaxGsoBytes, 0, {}, 0};
    rx_one_ = UdpSocket::RxBuf{pool_.get(), pool_.buffer_size(), 0, {}, 0};
  } else {
    rxbufs_.resize(UdpSocket::kBatch);
    for (auto& rb : rxbufs_) rb = UdpSocket::RxBuf{pool_.get(), pool_.buffer_size(), 0, {}, 0};
  }
  return TSU_OK;
}

void UdpTransport::set_peer_address(uint32_t rank, const sockaddr_in& addr) {
  std::lock_guard lock(mu_);
  if (rank < size_) addrs_[rank] = addr;
}

bool UdpTransport::address_known(uint32_t dst) {
  {
    std::lock_guard lock(mu_);
    if (addrs_[dst].sin_family == AF_INET) return true;
    if (peers_[dst] && peers_[dst]->addr.sin_family == AF_INET) {
      addrs_[dst] = peers_[dst]->addr;  // learned from its datagrams
      return true;
    }
  }
  if (!resolve_) return false;
  // The lookup may wait for the bootstrap service: not under the lock, so
  // the engine keeps polling meanwhile.  Two threads may both look up the
  // same rank the first time; both get the same address.
  sockaddr_in a{};
  if (!resolve_(dst, a) || a.sin_family != AF_INET) return false;
  std::lock_guard lock(mu_);
  ++st_.addr_lookups;
  if (addrs_[dst].sin_family != AF_INET) addrs_[dst] = a;
  if (peers_[dst] && peers_[dst]->addr.sin_family != AF_INET) peers_[dst]->addr = addrs_[dst];
  return true;
}

Peer& UdpTransport::peer(uint32_t rank) {
  auto& slot = peers_[rank];
  if (!slot) {
    const uint64_t now = util::now_ns();
    slot = std::make_unique<Peer>(rank, cfg_.queue, cfg_.window,
                                  RttEstimator(cfg_.initial_rto_ns, cfg_.min_rto_ns, cfg_.max_rto_ns),
                                  CongestionControl(cfg_.cwnd_initial, cfg_.cwnd_min, cfg_.window),
                                  now);
    slot->addr = addrs_[rank];
    active_.push_back(slot.get());
    ++st_.peers;
    if (watches_.watched(rank)) {
      slot->watched = true;
      ++watched_now_;
    }
    timer_by(now + cfg_.keepalive_ns);
  }
  return *slot;
}

void UdpTransport::timer_by(uint64_t t) noexcept {
  next_timer_ns_ = std::min(next_timer_ns_, t);
  if (engine_asleep_) wake_.arm_by(t);
}

bool UdpTransport::is_peer_lost(uint32_t rank) const noexcept {
  std::lock_guard lock(mu_);
  return rank < size_ && peers_[rank] && peers_[rank]->lost;
}

tsu_status_t UdpTransport::send_message(uint32_t dst, const core::MessageHeader& header,
                                        const void* payload) noexcept {
  if (dst >= size_ || dst == rank_) return TSU_ERR_BAD_RANK;
  if (header.payload_len > cfg_.max_message) return TSU_ERR_INVALID_ARG;
  if (!address_known(dst)) return TSU_ERR_UNREACHABLE;
  std::lock_guard lock(mu_);
  Peer& p = peer(dst);
  if (p.lost) return TSU_ERR_PEER_LOST;
  const std::size_t total = kMsgHeaderSize + header.payload_len;
  const std::size_t frag = max_fragment();
  if (try_pack(p, header, payload, total)) return TSU_OK;
  const auto n = static_cast<uint32_t>(fragment_count(total, frag));
  if (p.queued() + n > cfg_.queue) {
    ++st_.eagain;
    return TSU_EAGAIN;
  }
  const auto* body = static_cast<const std::byte*>(payload);
  std::size_t off = 0;  // offset in the message (header + payload)
  for (uint32_t i = 0; i < n; ++i) {
    const std::size_t len = std::min(frag, total - off);
    std::byte* buf = pool_.get();
    std::byte* dstp = buf + kHeaderSize;
    // The first fragment starts with the message header.
    std::size_t filled = 0;
    if (off < kMsgHeaderSize) {
      const std::size_t h = std::min(kMsgHeaderSize - off, len);
      std::memcpy(dstp, reinterpret_cast<const std::byte*>(&header) + off, h);
      filled = h;
    }
    if (filled < len) {
      const std::size_t from = off + filled - kMsgHeaderSize;
      std::memcpy(dstp + filled, body + from, len - filled);
    }
    WireHeader h{};
    h.type = kData;
    h.flags = static_cast<uint8_t>((i == 0 ? kFirst : 0) | (i + 1 == n ? kLast : 0));
    h.src_rank = rank_;
    h.dst_rank = dst;
    h.seq = p.nxt;
    h.payload_len = static_cast<uint32_t>(len);  // CRC at first transmission (stage_data)
    std::memcpy(buf, &h, kHeaderSize);
    TxSlot& s = p.tx[p.nxt & (cfg_.queue - 1)];
    s = TxSlot{buf, static_cast<uint32_t>(kHeaderSize + len), 0, 0, false, false};
    ++p.nxt;
    off += len;
  }
  ++st_.msgs_sent;
  if (batch_depth_ > 0) {
    schedule_tx(p);  // leaves at batch_end; later small messages may join it
    return TSU_OK;
  }
  const uint64_t now = util::now_ns();
  transmit(p, now);
  flush(now);  // outside a batch: send now
  return TSU_OK;
}

bool UdpTransport::try_pack(Peer& p, const core::MessageHeader& header, const void* payload,
                            std::size_t total) {
  // Only into the newest datagram, if it was never sent (queued beyond the
  // window, or waiting for batch_end) and holds whole messages.
  if (p.nxt == p.snd_max || total > max_fragment()) return false;
  TxSlot& s = p.tx[(p.nxt - 1) & (cfg_.queue - 1)];
  WireHeader h;
  std::memcpy(&h, s.buf, kHeaderSize);
  if ((h.flags & (kFirst | kLast)) != (kFirst | kLast) || h.payload_len + total > max_fragment())
    return false;
  std::byte* at = s.buf + kHeaderSize + h.payload_len;
  std::memcpy(at, &header, kMsgHeaderSize);
  if (header.payload_len) std::memcpy(at + kMsgHeaderSize, payload, header.payload_len);
  h.payload_len += static_cast<uint32_t>(total);
  h.flags |= kPacked;
  std::memcpy(s.buf, &h, kHeaderSize);
  s.len = static_cast<uint32_t>(kHeaderSize + h.payload_len);
  ++st_.msgs_sent;
  ++st_.msgs_packed;
  if (batch_depth_ > 0) schedule_tx(p);
  return true;
}

void UdpTransport::batch_begin() noexcept {
  std::lock_guard lock(mu_);
  ++batch_depth_;
}

void UdpTransport::batch_end() noexcept {
  std::lock_guard lock(mu_);
  if (--batch_depth_ != 0) return;
  const uint64_t now = util::now_ns();
  transmit_scheduled(now);
  flush(now);
}

void UdpTransport::watch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  watches_.watch(rank);
  // Called on every single-source receive: after the first call for a rank
  // the state exists (or is being made): one relaxed load, no lock.
  if (watch_asked_[rank].load(std::memory_order_relaxed)) return;
  watch_asked_[rank].store(true, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (rank >= size_ || rank == rank_ || peers_[rank]) return;
  if (std::find(to_watch_.begin(), to_watch_.end(), rank) != to_watch_.end()) return;
  try {
    to_watch_.push_back(rank);
    watch_pending_.store(true, std::memory_order_release);
  } catch (const std::bad_alloc&) {
    // Not watched: a wait on this rank ends only when it sends, or with the job.
  }
}

void UdpTransport::start_watching() noexcept {
  std::vector<uint32_t> ranks;
  {
    std::lock_guard lock(mu_);
    ranks.swap(to_watch_);
    watch_pending_.store(false, std::memory_order_relaxed);
  }
  for (uint32_t r : ranks) {
    if (!address_known(r)) continue;  // no address: nothing to ping
    std::lock_guard lock(mu_);
    try {
      if (!peers_[r]) peer(r);  // keep-alives from now on (liveness.cpp)
    } catch (const std::bad_alloc&) {
    }
  }
}

std::size_t UdpTransport::poll(const core::MessageHandlerTable& handlers) noexcept {
  if (watch_pending_.load(std::memory_order_acquire)) [[unlikely]] start_watching();
  std::size_t work = poll_protocol();
  // Dispatch outside the lock, in arrival order (only the engine's consumer
  // polls, so per-pair order holds).  Replies sent by handlers are staged and
  // leave together at batch_end, carrying the acks poll_protocol held back.
  if (dispatching_at_.empty()) return work;
  batch_begin();
  for (const ReadyAt& at : dispatching_at_) {
    core::MessageHeader hdr;
    const std::byte* m = at.owned ? dispatching_owned_[at.offset].data() : dispatching_.data() + at.offset;
    std::memcpy(&hdr, m, kMsgHeaderSize);
    if (!handlers.dispatch(at.src, hdr, m + kMsgHeaderSize)) {
      std::lock_guard lock(mu_);
      ++st_.unknown_handler;
    }
  }
  {
    std::lock_guard lock(mu_);
    const uint64_t now = util::now_ns();
    transmit_scheduled(now);  // replies first: they carry the acks
    send_acks(now);           // those no reply carried
    for (auto& b : dispatching_owned_)
      if (spare_buffers_.size() < kMaxSpareBuffers) spare_buffers_.push_back(std::move(b));
  }
  batch_end();
  dispatching_.clear();
  dispatching_at_.clear();
  dispatching_owned_.clear();
  return work;
}

void UdpTransport::apply_watches(uint64_t now) {
  watches_.drain([&](uint32_t r, bool watched) {
    Peer* p = peers_[r].get();
    if (!p || p->watched == watched) return;  // no state yet: peer() reads the count
    p->watched = watched;
    if (watched) {
      ++watched_now_;
      // Silence counts from now; the first ping is an interval away.
      if (p->una == p->snd_max) p->monitor_since_ns = now;
      timer_by(now + cfg_.keepalive_ns);
    } else {
      --watched_now_;
    }
  });
}

std::size_t UdpTransport::poll_protocol() noexcept {
  std::lock_guard lock(mu_);
  uint64_t now = util::now_ns();
  if (watches_.changed()) [[unlikely]] apply_watches(now);
  flush(now);  // anything staged must leave before acks may free its buffers
  std::size_t work = 0;
  for (int round = 0; round < 4; ++round) {
    const std::size_t n = sock_.receive(rxbufs_.data(), rxbufs_.size());
    if (!n) break;
    for (std::size_t i = 0; i < n; ++i) {
      if (sock_.coalescing()) handle_coalesced(rxbufs_[i], now);
      else handle_datagram(rxbufs_[i], now);
    }
    work += n;
    if (n < rxbufs_.size()) break;
    now = util::now_ns();
  }
  ready_.swap(dispatching_);
  ready_at_.swap(dispatching_at_);
  ready_owned_.swap(dispatching_owned_);
  now = util::now_ns();
  if (now >= next_timer_ns_) run_timers(now);
  wake_.consume_if_fired(now);
  // Armed for a sleep that has ended: disarm it in a pass that found nothing
  // (off the path of an arriving message), before it fires during traffic.
  if (work == 0 && !engine_asleep_) wake_.disarm();
  send_pending(now, /*defer_lone_acks=*/!dispatching_at_.empty());
  if (sock_.has_staged() || sock_.next_impair_due(now) == 0) flush(now);
  // Peer-loss notifications run last, outside the datagram loop.
  if (!newly_lost_.empty()) {
    std::vector<uint32_t> lost;
    lost.swap(newly_lost_);
    for (uint32_t r : lost)
      if (lost_fn_) lost_fn_(lost_ctx_, r);
    work += lost.size();
  }
  return work;
}

bool UdpTransport::prepare_sleep() noexcept {
  std::lock_guard lock(mu_);
  if (sock_.has_staged() || !tx_list_.empty() || !ack_list_.empty() || !newly_lost_.empty() ||
      !to_watch_.empty() || watches_.changed())
    return false;
  engine_asleep_ = true;
  if (const uint64_t next = refresh_next_timer(); next != UINT64_MAX) wake_.arm_by(next);
  return true;
}

void UdpTransport::end_sleep() noexcept {
  std::lock_guard lock(mu_);
  engine_asleep_ = false;
}

uint64_t UdpTransport::refresh_next_timer() const noexcept {
  uint64_t next = UINT64_MAX;
  for (const Peer* p : active_) next = std::min(next, peer_deadline(*p));
  next_timer_ns_ = next;
  return next;
}

uint64_t UdpTransport::max_sleep_ns() const noexcept {
  std::lock_guard lock(mu_);
  const uint64_t now = util::now_ns();
  uint64_t t = sock_.next_impair_due(now);
  // Recomputed: a stale earlier deadline would wake the engine for nothing
  // (in request/reply traffic, once or twice per round trip).
  const uint64_t next = refresh_next_timer();
  if (next != UINT64_MAX) t = std::min(t, next > now ? next - now : 0);
  return t;
}

UdpStats UdpTransport::stats() const {
  std::lock_guard lock(mu_);
  return st_;
}

void UdpTransport::print_stats(std::FILE* f) const noexcept {
  std::lock_guard lock(mu_);
  double cwnd = 0, srtt = 0;
  for (const Peer* p : active_) {
    cwnd = std::max(cwnd, p->cc.cwnd());
    srtt = std::max(srtt, static_cast<double>(p->rtt.srtt()) / 1000.0);
  }
  std::fprintf(f,
               "tsunagi[%u] udp: peers=%llu lost=%llu msgs_sent=%llu msgs_packed=%llu msgs_delivered=%llu "
               "datagrams_sent=%llu datagrams_received=%llu send_calls=%llu gso_sends=%llu recv_calls=%llu "
               "data_sent=%llu acks_sent=%llu acks_received=%llu pings=%llu retransmits=%llu "
               "fast_retransmits=%llu timeouts=%llu tail_probes=%llu duplicates=%llu out_of_window=%llu "
               "reordered=%llu spurious_reported=%llu spurious_timeouts=%llu eagain=%llu send_dropped=%llu "
               "addr_lookups=%llu watched=%u",
               rank_, (unsigned long long)st_.peers, (unsigned long long)st_.peers_lost,
               (unsigned long long)st_.msgs_sent, (unsigned long long)st_.msgs_packed,
               (unsigned long long)st_.msgs_delivered,
               (unsigned long long)sock_.sent, (unsigned long long)sock_.received,
               (unsigned long long)sock_.send_calls, (unsigned long long)sock_.gso_sends,
               (unsigned long long)sock_.recv_calls,
               (unsigned long long)st_.data_sent, (unsigned long long)st_.acks_sent,
               (unsigned long long)st_.acks_received, (unsigned long long)st_.pings_sent,
               (unsigned long long)st_.retransmits, (unsigned long long)st_.fast_retransmits,
               (unsigned long long)st_.timeouts, (unsigned long long)st_.tail_probes,
               (unsigned long long)st_.duplicates,
               (unsigned long long)st_.out_of_window, (unsigned long long)st_.reordered,
               (unsigned long long)st_.spurious_retransmits,
               (unsigned long long)st_.spurious_timeouts,
               (unsigned long long)st_.eagain, (unsigned long long)sock_.send_dropped,
               (unsigned long long)st_.addr_lookups, watched_now_);
  for (int i = 1; i < static_cast<int>(ParseStatus::kCount); ++i)
    std::fprintf(f, " drop_%s=%llu", parse_status_name(static_cast<ParseStatus>(i)),
                 (unsigned long long)st_.drops[i]);
  std::fprintf(f, " unknown_handler=%llu reassembly_errors=%llu max_cwnd=%.1f max_srtt_us=%.1f",
               (unsigned long long)st_.unknown_handler, (unsigned long long)st_.reassembly_errors,
               cwnd, srtt);
  if (const ImpairStage* im = sock_.impairment())
    std::fprintf(f,
                 " impair_dropped=%llu impair_duplicated=%llu impair_corrupted=%llu "
                 "impair_delayed=%llu impair_reordered=%llu",
                 (unsigned long long)im->dropped, (unsigned long long)im->duplicated,
                 (unsigned long long)im->corrupted, (unsigned long long)im->delayed,
                 (unsigned long long)im->reordered);
  std::fprintf(f, "\n");
}

}  // namespace tsu::transport::udp
