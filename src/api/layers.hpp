// The messaging layers above core, owned by the runtime as its Extension:
// active messages (the send path of the others), tagged messages and
// collectives.  Made at init by make_layers (before the init barrier).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "am/am_layer.hpp"
#include "coll/coll_layer.hpp"
#include "msg/msg_layer.hpp"
#include "api/ordered_requests.hpp"
#include "runtime/runtime.hpp"

namespace tsu::api {

// The layers' slices of the layer area (runtime/layer_area.hpp).
inline constexpr uint32_t kMsgAreaId = 1;   // the tagged layer's posted-receive queue
inline constexpr uint32_t kCollAreaId = 2;  // the collectives' node team slots

struct Layers final : runtime::Extension {
  explicit Layers(runtime::Runtime& rt)
      : am(rt), msg(rt, am, kMsgAreaId), coll(rt, am, kCollAreaId), ordered(rt) {
    lost_.reserve(rt.size());  // a rank is declared lost at most once
  }
  std::size_t poll() noexcept override {
    return fail_lost_peers() + am.poll() + msg.poll() + coll.poll() + ordered.poll();
  }
  bool idle() const noexcept override {
    return am.idle() && msg.idle() && coll.idle() && ordered.idle() &&
           !lost_pending_.load(std::memory_order_acquire);
  }
  // Also waits for off-node long AMs still waiting for their target's answer.
  bool quiescent() const noexcept override { return idle() && am.no_long_in_flight(); }
  void print_stats(uint32_t rank) const noexcept override { coll.print_stats(rank); }
  void note_peer_lost(uint32_t rank) noexcept override {
    std::lock_guard lock(lost_mu_);
    lost_.push_back(rank);
    lost_pending_.store(true, std::memory_order_release);
  }

  am::AmLayer am;
  msg::MsgLayer msg;
  coll::CollLayer coll;
  OrderedRequests ordered;  // held ordered requests' starts (seed 001)

 private:
  // Fails every request waiting on a rank the transport declared lost (in
  // progress context, outside the transport's lock).
  std::size_t fail_lost_peers() noexcept {
    if (!lost_pending_.load(std::memory_order_acquire)) return 0;
    std::vector<uint32_t> lost;
    {
      std::lock_guard lock(lost_mu_);
      lost = lost_;
      lost_.clear();  // keeps its capacity: note_peer_lost never allocates
      lost_pending_.store(false, std::memory_order_release);
    }
    for (uint32_t r : lost) {
      am.on_peer_lost(r);
      msg.on_peer_lost(r);
      coll.on_peer_lost(r);
    }
    return lost.size();
  }

  std::mutex lost_mu_;
  std::vector<uint32_t> lost_;  // guarded by lost_mu_
  std::atomic<bool> lost_pending_{false};
};

// The factory Runtime::create calls (reserve before the transports open,
// make after).
extern const runtime::ExtensionFactory kLayersFactory;

// Collective synchronization of the layers' setup calls (handler and team
// registration): returns when every rank has called it; drives progress.
tsu_status_t layers_sync(runtime::Runtime& rt, const char* fn) noexcept;

inline Layers& layers(runtime::Runtime& rt) noexcept {
  return *static_cast<Layers*>(rt.extension());
}

}  // namespace tsu::api
