#include "hold_schedule.hpp"

#include <algorithm>

namespace tsu::nfq {

HoldSchedule::HoldSchedule(const HoldPolicy& policy) : policy_(policy), rng_(policy.seed) {}

Nanos HoldSchedule::draw_hold() {
  Nanos hold = policy_.delay;
  if (policy_.jitter.count() > 0) {
    std::uniform_int_distribution<std::int64_t> spread(-policy_.jitter.count(), policy_.jitter.count());
    hold += Nanos(spread(rng_));
  }
  if (policy_.reorder_percent > 0) {
    std::uniform_int_distribution<unsigned> percent(0, 99);
    if (percent(rng_) < policy_.reorder_percent) hold += policy_.reorder_extra;
  }
  return std::max(hold, Nanos(0));
}

bool HoldSchedule::admit(std::uint32_t packet_id, Nanos now) {
  ++counters_.queued;
  const std::uint64_t arrival = next_arrival_++;
  if (held_.size() >= policy_.max_held) {
    ++counters_.bypassed;
    note_released(arrival);
    return false;
  }
  held_.push(HeldPacket{now + draw_hold(), arrival, packet_id});
  ++counters_.held;
  counters_.peak_held = std::max<std::uint64_t>(counters_.peak_held, held_.size());
  return true;
}

void HoldSchedule::note_released(std::uint64_t arrival) {
  // A packet leaving after one that arrived later was overtaken.
  if (released_any_ && arrival < latest_released_arrival_) {
    ++counters_.reordered;
  } else {
    latest_released_arrival_ = arrival;
    released_any_ = true;
  }
}

void HoldSchedule::take_due(Nanos now, std::vector<std::uint32_t>& ids) {
  while (!held_.empty() && held_.top().release_at <= now) {
    note_released(held_.top().arrival);
    ids.push_back(held_.top().id);
    held_.pop();
    ++counters_.released;
  }
}

void HoldSchedule::take_all(std::vector<std::uint32_t>& ids) {
  while (!held_.empty()) {
    note_released(held_.top().arrival);
    ids.push_back(held_.top().id);
    held_.pop();
    ++counters_.flushed;
  }
}

std::optional<Nanos> HoldSchedule::next_release() const {
  if (held_.empty()) return std::nullopt;
  return held_.top().release_at;
}

}  // namespace tsu::nfq
