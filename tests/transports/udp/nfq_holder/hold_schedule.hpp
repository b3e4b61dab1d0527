// How long each packet taken from an NFQUEUE is held, and the order in which
// held packets go back to the kernel.  No kernel code here: the queue loop
// feeds packet ids in and asks which are due, so the policy is testable alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <random>
#include <vector>

namespace tsu::nfq {

using Nanos = std::chrono::nanoseconds;

struct HoldPolicy {
  Nanos delay{0};
  Nanos jitter{0};            // hold is delay ± jitter, uniform
  unsigned reorder_percent = 0;
  Nanos reorder_extra{0};     // added to the hold of reorder_percent% of packets
  std::size_t max_held = 4096;
  std::uint64_t seed = 1;
};

struct HoldCounters {
  std::uint64_t queued = 0;     // handed over by the kernel
  std::uint64_t held = 0;       // taken into the holding area
  std::uint64_t released = 0;   // accepted when their hold ended
  std::uint64_t reordered = 0;  // released after a packet that arrived later
  std::uint64_t bypassed = 0;   // accepted at once: the holding area was full
  std::uint64_t flushed = 0;    // accepted early because the holder was stopping
  std::uint64_t peak_held = 0;
};

class HoldSchedule {
 public:
  explicit HoldSchedule(const HoldPolicy& policy);

  // A packet arrived at `now`.  False when the holding area is full: the caller
  // accepts it at once (counted as bypassed).
  bool admit(std::uint32_t packet_id, Nanos now);

  // Appends the ids of packets whose hold ended by `now`, earliest release first.
  void take_due(Nanos now, std::vector<std::uint32_t>& ids);

  // Appends every packet still held, in release order (the holder fails open).
  void take_all(std::vector<std::uint32_t>& ids);

  std::optional<Nanos> next_release() const;
  std::size_t held_now() const { return held_.size(); }
  const HoldCounters& counters() const { return counters_; }

 private:
  struct HeldPacket {
    Nanos release_at;
    std::uint64_t arrival;  // order the kernel handed packets over
    std::uint32_t id;
  };
  // Min-heap on release time; equal times keep arrival order.
  struct ReleasesLater {
    bool operator()(const HeldPacket& a, const HeldPacket& b) const {
      return a.release_at != b.release_at ? a.release_at > b.release_at : a.arrival > b.arrival;
    }
  };

  Nanos draw_hold();
  void note_released(std::uint64_t arrival);

  HoldPolicy policy_;
  std::mt19937_64 rng_;
  std::priority_queue<HeldPacket, std::vector<HeldPacket>, ReleasesLater> held_;
  std::uint64_t next_arrival_ = 0;
  std::uint64_t latest_released_arrival_ = 0;
  bool released_any_ = false;
  HoldCounters counters_;
};

}  // namespace tsu::nfq
