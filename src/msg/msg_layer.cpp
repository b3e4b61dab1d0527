// MsgLayer (tagged messages): its setup, the tables of rendezvous in flight
// (named by cookies), peer loss and the counters.  The send path, matching
// and rendezvous transfers live in msg_send.cpp, msg_receive.cpp and
// msg_rendezvous.cpp.
#include "msg/msg_layer.hpp"

#include <algorithm>
#include <cstring>

#include "am/am_layer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "msg/msg_records.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"

namespace tsu::msg {

using core::MessageHeader;
using transport::Access;

uint64_t MsgLayer::add_send(std::unique_ptr<SendReq>& req) noexcept {
  std::lock_guard lock(net_mu_);
  const uint64_t cookie = next_cookie_++;
  try {
    sends_[cookie] = std::move(req);  // moved only once the slot exists
  } catch (const std::bad_alloc&) {
    return 0;
  }
  return cookie;
}

std::unique_ptr<MsgLayer::SendReq> MsgLayer::take_send(uint64_t cookie, uint32_t peer) noexcept {
  std::lock_guard lock(net_mu_);
  auto it = sends_.find(cookie);
  if (it == sends_.end() || it->second->dst != peer) return nullptr;
  std::unique_ptr<SendReq> req = std::move(it->second);
  sends_.erase(it);
  return req;
}

uint64_t MsgLayer::add_pull(std::unique_ptr<NetPull>& np) noexcept {
  std::lock_guard lock(net_mu_);
  const uint64_t cookie = next_cookie_++;
  try {
    pulls_[cookie] = std::move(np);  // moved only once the slot exists
  } catch (const std::bad_alloc&) {
    return 0;
  }
  return cookie;
}

std::unique_ptr<MsgLayer::NetPull> MsgLayer::take_pull(uint64_t cookie, uint32_t peer) noexcept {
  std::lock_guard lock(net_mu_);
  auto it = pulls_.find(cookie);
  if (it == pulls_.end() || it->second->src != peer) return nullptr;
  std::unique_ptr<NetPull> np = std::move(it->second);
  pulls_.erase(it);
  return np;
}

std::size_t MsgLayer::area_bytes(const core::Config& cfg, uint32_t ranks) noexcept {
  return PostedQueue::bytes_for(std::min(cfg.posted_slots, PostedQueue::kMaxCapacity), ranks);
}

MsgLayer::MsgLayer(runtime::Runtime& rt, am::AmLayer& am, uint32_t area_id)
    : rt_(rt),
      am_(am),
      eager_max_(rt.config().eager_max),
      sceager_min_(rt.config().sceager_min),
      sceager_(rt.config().sceager),
      sent_(new std::atomic<uint64_t>[rt.size()]),
      ranks_(rt.size()),
      sc_skip_(new std::atomic<uint32_t>[rt.size()]),
      peer_queue_(new std::atomic<std::byte*>[rt.size()]),
      peer_capacity_(new std::atomic<uint32_t>[rt.size()]),
      area_id_(area_id) {
  for (uint32_t r = 0; r < rt.size(); ++r) {
    sent_[r].store(0, std::memory_order_relaxed);
    sc_skip_[r].store(0, std::memory_order_relaxed);
    peer_queue_[r].store(nullptr, std::memory_order_relaxed);
    peer_capacity_[r].store(0, std::memory_order_relaxed);
  }
  std::size_t area_size = 0;
  std::byte* area = rt.layer_area(area_id, area_size);
  uint32_t capacity = std::min(rt.config().posted_slots, PostedQueue::kMaxCapacity);
  while (capacity && PostedQueue::bytes_for(capacity, rt.size()) > area_size) capacity /= 2;
  if (!area || !capacity) {
    // No layer area (cannot happen: the runtime creates one; kept so the
    // queue and its lock always exist): a private one, which no sender
    // reaches.
    capacity = 1;
    area_size = PostedQueue::bytes_for(capacity, rt.size());
    private_area_.reset(new AreaLine[(area_size + 63) / 64]());
    area = reinterpret_cast<std::byte*>(private_area_.get());
  }
  mine_ = PostedQueue(area, capacity, rt.size());
  mine_.format();
  slots_.resize(capacity);
  for (uint32_t i = capacity; i-- > 0;) free_slots_.push_back(static_cast<uint16_t>(i));
  rt.handlers().set(kHandlerMsgEager, on_eager, this);
  rt.handlers().set(kHandlerMsgRts, on_rts, this);
  rt.handlers().set(kHandlerMsgFin, on_fin, this);
  rt.handlers().set(kHandlerMsgScPoke, on_sc_poke, this);
  rt.handlers().set(kHandlerMsgCts, on_cts, this);
  rt.handlers().set(kHandlerMsgData, on_data, this);
}

MsgLayer::~MsgLayer() = default;

void MsgLayer::on_peer_lost(uint32_t rank) noexcept {
  std::vector<std::unique_ptr<SendReq>> sends;
  std::vector<std::unique_ptr<NetPull>> pulls;
  {
    std::lock_guard lock(net_mu_);
    for (auto it = sends_.begin(); it != sends_.end();) {
      if (it->second->dst == rank) {
        sends.push_back(std::move(it->second));
        it = sends_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = pulls_.begin(); it != pulls_.end();) {
      if (it->second->src == rank) {
        pulls.push_back(std::move(it->second));
        it = pulls_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Posted receives that name the lost rank (any-source ones stay).
  std::vector<std::unique_ptr<Local>> posted;
  Filled filled;
  lock_queue(filled);
  for (uint32_t i = 0; i < mine_.count();) {
    const uint16_t slot = mine_.order(i);
    if (mine_.entry(slot).f.src != rank) {
      ++i;
      continue;
    }
    mine_.remove_at(i);
    posted.push_back(std::move(slots_[slot]));
    free_entry(slot);  // may move overflow receives in at the end: still scanned
  }
  for (auto it = overflow_.begin(); it != overflow_.end();) {
    if ((*it)->src == rank) {
      posted.push_back(std::move(*it));
      it = overflow_.erase(it);
    } else {
      ++it;
    }
  }
  unlock_queue(filled);
  if (!sends.empty() || !pulls.empty() || !posted.empty())
    TSU_LOG_WARN("rank %u lost: failing %zu rendezvous sends, %zu transfers, %zu receives", rank,
                 sends.size(), pulls.size(), posted.size());
  for (auto& req : sends) runtime::run_callback(req->cb, TSU_ERR_PEER_LOST);
  for (auto& np : pulls) complete(*np->l, np->src, np->tag, np->len, TSU_ERR_PEER_LOST);
  for (auto& l : posted)
    if (l) complete(*l, rank, l->tag, 0, TSU_ERR_PEER_LOST);
}

void MsgLayer::counters(tsu_msg_counters_t& out) const noexcept {
  out.eager = counters_.eager.load(std::memory_order_relaxed);
  out.sceager = counters_.sceager.load(std::memory_order_relaxed);
  out.sceager_busy = counters_.busy.load(std::memory_order_relaxed);
  out.sceager_miss = counters_.miss.load(std::memory_order_relaxed);
  out.rendezvous = counters_.rndv.load(std::memory_order_relaxed);
  out.unexpected = counters_.unexpected.load(std::memory_order_relaxed);
}

#if TSU_FAULT_INJECTION
void MsgLayer::test_hold_lock(bool hold) noexcept {
  if (hold) {
    util::Backoff b;
    while (!mine_.try_lock()) {
      rt_.engine().progress();  // a record waiting there keeps senders (and us) out
      b.pause();
    }
  } else {
    mine_.unlock();
  }
}
#endif

}  // namespace tsu::msg
