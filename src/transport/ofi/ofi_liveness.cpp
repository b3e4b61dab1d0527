// OfiTransport's view of its peers' liveness: keep-alives to watched peers,
// peers declared lost, operations held until their peer's fate is known,
// backpressured peers watched, and gaps in a peer's sequence timed out.
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "transport/ofi/ofi_internal.hpp"
#include "transport/ofi/ofi_transport.hpp"
#include "util/clock.hpp"

namespace tsu::transport::ofi {

bool OfiTransport::hold_until_peer_known(RmaContext* ctx, uint32_t rank,
                                         tsu_status_t status) noexcept {
  if (!ctx || rank >= size_ || rank == rank_ || lost_[rank].load(std::memory_order_acquire))
    return false;
  try {
    doubtful_.push_back({ctx, rank, status, util::now_ns()});
  } catch (...) {
    return false;
  }
  doubtful_held_.fetch_add(1, std::memory_order_relaxed);
  watch_backpressured(rank);
  return true;
}

bool OfiTransport::doubtful_settleable() const noexcept {
  return std::any_of(doubtful_.begin(), doubtful_.end(), [this](const Doubtful& d) {
    return lost_[d.rank].load(std::memory_order_acquire) ||
           heard_ns_[d.rank] >= d.since_ns + cfg_.keepalive_ns;
  });
}

void OfiTransport::settle_doubtful() noexcept {
  for (std::size_t i = 0; i < doubtful_.size();) {
    const Doubtful d = doubtful_[i];
    const bool lost = lost_[d.rank].load(std::memory_order_acquire);
    // Heard a whole keep-alive interval after the refusal: not a message it
    // sent before dying and this rank read late.
    if (!lost && heard_ns_[d.rank] < d.since_ns + cfg_.keepalive_ns) {
      ++i;
      continue;
    }
    try {
      faulted_.emplace_back(d.ctx, lost ? TSU_ERR_PEER_LOST : d.status);
    } catch (...) {
      return;  // no memory: the next poll tries again
    }
    doubtful_[i] = doubtful_.back();
    doubtful_.pop_back();
  }
}

void OfiTransport::declare_lost(uint32_t rank, const char* why, bool tell_it) noexcept {
  if (rank >= size_ || lost_[rank].exchange(true, std::memory_order_acq_rel)) return;
  TSU_LOG_WARN("ofi: rank %u is lost (%s)", rank, why);
  cancel_bulk(rank);
  try {
    newly_lost_.push_back(rank);
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory reporting rank %u lost", rank);
  }
  // Best effort, with an address already known (no bootstrap lookup under
  // mu_): should the notice not arrive, the rank's next ping gets one.
  if (const fi_addr_t to = peers_[rank].load(std::memory_order_acquire);
      tell_it && to != FI_ADDR_UNSPEC)
    send_control(rank, to, kLost);
}

void OfiTransport::watch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  watches_.watch(rank);
}

void OfiTransport::unwatch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  watches_.unwatch(rank);
}

// The provider refused an operation to `rank` for want of room.  A live peer
// drains it; a dead one never does: over tcp;ofi_rxm, sends and writes to a
// rank whose connection never came up return -FI_EAGAIN forever, and a
// staged operation stuck that way holds up every later one (retry_).  So the
// rank is watched until it has been heard from and nothing of it is stuck
// (release_backpressured): keep-alives, and TSU_ERR_PEER_LOST once it is
// silent past TSU_OFI_PEER_TIMEOUT (the udp route's retransmission timeout,
// in effect).  One watch per rank however often it refuses.  Called with mu_
// held, on any thread.
void OfiTransport::watch_backpressured(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_ || backpressured_[rank]) return;
  try {
    backpressured_list_.push_back(rank);
  } catch (const std::bad_alloc&) {
    return;  // not watched: the next refusal tries again
  }
  backpressured_[rank] = 1;
  backpressured_ns_[rank] = util::now_ns();
  watches_.watch(rank);
}

void OfiTransport::release_backpressured() noexcept {
  for (std::size_t i = 0; i < backpressured_list_.size();) {
    const uint32_t r = backpressured_list_[i];
    // Heard: a message, a pong or a send completion since the refusal (the
    // peer is alive and draining).  Stuck: an operation of it still waits
    // for room; its next refusal would watch it again at once.
    const bool lost = lost_[r].load(std::memory_order_acquire);
    const bool heard = heard_ns_[r] > backpressured_ns_[r];
    const bool stuck = std::any_of(retry_.begin(), retry_.end(),
                                   [r](const Staged& s) { return s.rank == r; }) ||
                       std::any_of(doubtful_.begin(), doubtful_.end(),
                                   [r](const Doubtful& d) { return d.rank == r; });
    if (!lost && (!heard || stuck)) {
      ++i;
      continue;
    }
    backpressured_[r] = 0;
    backpressured_list_[i] = backpressured_list_.back();
    backpressured_list_.pop_back();
    watches_.unwatch(r);
  }
}

bool OfiTransport::send_control(uint32_t dst, fi_addr_t to, uint32_t kind) noexcept {
  // The sequence field says how many messages this rank has handed the
  // provider for dst, plus one (0: no count, while some wait to be posted),
  // so that the receiver can tell one went missing (note_gap).
  const bool counted = staged_.empty() && retry_.empty();
  const WirePrefix prefix{rank_, job_tag_, counted ? send_seq_[dst] + 1 : 0, kind};
  ssize_t rc;
  if (sizeof prefix <= msg_inject_size_) {
    rc = fi_inject(ep_, &prefix, sizeof prefix, to);
  } else {
    if (free_tx_.empty()) return false;
    Buffer* b = free_tx_.back();
    std::memcpy(b->data, &prefix, sizeof prefix);
    b->dst = dst;
    rc = fi_send(ep_, b->data, sizeof prefix, desc_, to, &b->ctx);
    if (rc == 0) free_tx_.pop_back();  // a failure completes with an error: lost
  }
  if (rc == 0) {
    (kind == kPing ? pings_ : kind == kPong ? pongs_ : lost_notices_)
        .fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (rc == -FI_EAGAIN) {
    fi_cq_read(cq_, nullptr, 0);  // a progress nudge for manual providers
    return false;
  }
  errors_.fetch_add(1, std::memory_order_relaxed);
  TSU_LOG_DEBUG("ofi: keep-alive to rank %u failed: %s", dst,
                fi_text(static_cast<int>(rc)).c_str());
  if (status_of(rc) == TSU_ERR_PEER_LOST) declare_lost(dst, "a keep-alive to it failed");
  return false;
}

void OfiTransport::keepalive(uint64_t now) noexcept {
  // Time this rank did not poll (manual progress and a long computation, or
  // a progress thread that got no CPU) is not the peers' silence: what they
  // sent meanwhile waited unread in our queue.  Watches that were running
  // before such a pause count their silence without it.
  const uint64_t pause = last_keepalive_ns_ ? now - last_keepalive_ns_ : 0;
  last_keepalive_ns_ = now;
  if (pause > cfg_.keepalive_ns)
    for (uint32_t r : watching_)
      watch_since_ns_[r] = std::min(now, std::max(watch_since_ns_[r], heard_ns_[r]) + pause);
  if (watches_.changed()) {
    // Watches that started or ended since the last look.  A new one counts
    // silence from now: what was heard, or not, while nothing watched the
    // peer is stale (a peer idle for an hour is not lost the moment a wait
    // on it starts).
    watches_.drain([&](uint32_t r, bool watched) {
      const bool in = watch_slot_[r] != kNotWatching;
      if (watched && !in && !lost_[r].load(std::memory_order_acquire)) {
        watching_.push_back(r);  // reserved for every rank: no allocation
        watch_slot_[r] = static_cast<uint32_t>(watching_.size() - 1);
        watch_since_ns_[r] = now;
        pinged_ns_[r] = 0;
      } else if (!watched && in) {
        stop_watching(r);  // nothing waits on it any more: no more pings
        watch_ends_.fetch_add(1, std::memory_order_relaxed);
      }
    });
    // No tick forced: a new watch's first ping and timeout are an interval
    // away, and receives posted one after another start and end watches at
    // every message.
  }
  if (watching_.empty() || now < next_tick_ns_) {
    watched_now_.store(static_cast<uint32_t>(watching_.size()), std::memory_order_relaxed);
    return;
  }
  next_tick_ns_ = now + cfg_.keepalive_ns / 4;
  {
    std::lock_guard lock(mu_);
    if (!backpressured_list_.empty()) release_backpressured();
  }
  for (std::size_t i = 0; i < watching_.size();) {
    const uint32_t r = watching_[i];
    if (lost_[r].load(std::memory_order_acquire)) {
      stop_watching(r);  // lost: no more pings (watching_[i] is another rank now)
      continue;
    }
    ++i;
    const uint64_t silent = now - std::max(heard_ns_[r], watch_since_ns_[r]);
    if (silent >= cfg_.peer_timeout_ns) {
      silent_lost_.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(mu_);
      declare_lost(r, "silent past TSU_OFI_PEER_TIMEOUT");
      continue;
    }
    if (silent < cfg_.keepalive_ns || now - pinged_ns_[r] < cfg_.keepalive_ns) continue;
    const fi_addr_t to = peer_address(r);  // outside mu_: may ask the bootstrap
    if (to == FI_ADDR_UNSPEC) continue;    // no address yet: the timeout still runs
    std::lock_guard lock(mu_);
    if (send_control(r, to, kPing)) pinged_ns_[r] = now;
  }
  watched_now_.store(static_cast<uint32_t>(watching_.size()), std::memory_order_relaxed);
}

void OfiTransport::stop_watching(uint32_t rank) noexcept {
  const uint32_t slot = watch_slot_[rank];
  const uint32_t moved = watching_.back();
  watching_[slot] = moved;
  watch_slot_[moved] = slot;
  watching_.pop_back();
  watch_slot_[rank] = kNotWatching;
}

void OfiTransport::note_gap(uint32_t src, uint32_t need_seq) noexcept {
  if (lost_[src].load(std::memory_order_relaxed)) return;
  try {
    auto [it, fresh] = gaps_.try_emplace(src, Gap{util::now_ns(), need_seq, recv_seq_[src]});
    // A later look may see more missing; the wait counts from the first.
    if (!fresh && static_cast<int32_t>(need_seq - it->second.need_seq) > 0)
      it->second.need_seq = need_seq;
  } catch (...) {
    TSU_LOG_ERROR("ofi: out of memory noting a gap in rank %u's messages", src);
  }
}

void OfiTransport::check_gaps() noexcept {
  const uint64_t now = util::now_ns();
  // Time nobody polled does not count (manual progress, a long computation):
  // what was missing may be in the completion queue, unread.
  const uint64_t pause = last_gap_check_ns_ ? now - last_gap_check_ns_ : 0;
  last_gap_check_ns_ = now;
  const bool paused = pause > cfg_.peer_timeout_ns / 8;
  for (auto it = gaps_.begin(); it != gaps_.end();) {
    // (Only for gaps open before the pause began.)
    if (paused && it->second.since_ns <= now - pause) it->second.since_ns += pause;
    const uint32_t src = it->first;
    if (static_cast<int32_t>(recv_seq_[src] - it->second.need_seq) >= 0 ||
        lost_[src].load(std::memory_order_relaxed)) {
      it = gaps_.erase(it);  // closed: what was missing arrived (or the peer is gone)
      continue;
    }
    if (recv_seq_[src] != it->second.at_seq) {
      // Still short, but moving: a large message in flight (tcp;ofi_rxm
      // completes a rendezvous receive after later small ones) is slow, not
      // lost.  Loss is one message missing for the whole timeout.
      it->second.at_seq = recv_seq_[src];
      it->second.since_ns = now;
    }
    if (now <= it->second.since_ns || now - it->second.since_ns < cfg_.peer_timeout_ns) {
      ++it;
      continue;
    }
    TSU_LOG_ERROR("ofi: message %u from rank %u never arrived though the provider took it "
                  "(%u sent): the provider lost it",
                  recv_seq_[src], src, it->second.need_seq);
    it = gaps_.erase(it);
    // What is held behind the hole can never run in order.
    held_.erase(held_.lower_bound(uint64_t{src} << 32),
                held_.lower_bound(uint64_t{src + 1} << 32));
    std::lock_guard lock(mu_);
    declare_lost(src, "a message from it was lost by the provider", /*tell_it=*/true);
  }
}

}  // namespace tsu::transport::ofi
