// Which stores a member writes its stage with: plain, or non-temporal
// (coll/stream_copy.hpp), chosen by measurement.
//
// Why measured: a host may move a VM's vCPUs between a "near" placement and
// a "far" one (a cache-line crossing several times slower) every few
// seconds.  Near, plain stores win: the reader takes the stage from the
// shared cache.  Far, each stage line crossing twice per use (data one way,
// ownership back) makes plain stores slower than streaming ones, which cost
// the same in both placements (the figures: docs/messaging.md, "Which stores
// write a stage").  Neither is right all the time, and the placement cannot
// be asked for.
//
// How: every member counts the team's staged collectives alike.  Numbers
// k with k % kProbePeriod in {0, 1} probe plain stores, those in
// {kProbePeriod / 2, kProbePeriod / 2 + 1} streaming ones: every member uses
// the probed stores, so they agree.  A probe is two collectives and only
// the second is timed, because the first pays for the switch: plain stores
// after streaming ones find the stage cold in memory, streaming stores
// after plain ones must evict it from both caches.  (With single timed
// probes, runs split into "mostly plain" and "mostly streaming" and a
// switched-from probe may have read the switch, not the stores; with
// two-collective probes the split remains, and those runs' plain probes
// read well above the plain cost of plain runs: the far placement, it
// seems; docs/messaging.md, "Which stores write a stage".)
// On every collective with k % kTimedPeriod == 1 (the probes' second ones
// and, well clear of them, ones in the stores the writers chose), a
// member times its own copying (not its waits) and
// folds the time per MiB into a running average in its slot, per size
// class, collective kind and store kind (SlotArea::stage_cost), where the
// team's writers read it.  A writer switches stores when the other's
// average, summed over all members (a broadcast's readers count for its
// root), is below 4/5 of the current one's.  The averages drop to a lower
// sample at once and rise by a quarter of the difference, at most 25% a
// sample: timing noise (preemption) only adds, so a slow sample does not
// switch, a real 3x slowdown does in 4 timed collectives, while a
// probe that finds the other stores cheap again switches back at once.
// Probes are two of every 64 collectives, few enough that probing the
// slower stores costs little (the figure: docs/messaging.md).  The
// averages are racy relaxed 32-bit loads and stores: a stale value only
// delays a switch.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coll/node_area.hpp"

namespace tsu::coll {

inline constexpr uint64_t kProbePeriod = 64;
inline constexpr uint64_t kTimedPeriod = 8;

// The setting TSU_COLL_STAGE_STREAM.
enum StageStoreSetting : uint32_t { kStagePlain = 0, kStageStream = 1, kStageMeasured = 2 };

// For the team's k-th staged collective: 0 or 1 (plain or streaming) where
// it probes, else -1.
inline int stage_probe(uint64_t k) noexcept {
  const uint64_t i = k % kProbePeriod;
  if (i <= 1) return 0;
  if (i - kProbePeriod / 2 <= 1) return 1;
  return -1;
}
// Whether a member times its copying in the k-th staged collective.
inline bool stage_timed(uint64_t k) noexcept { return k % kTimedPeriod == 1; }
static_assert(kProbePeriod % kTimedPeriod == 0 && kProbePeriod / 2 % kTimedPeriod == 0,
              "the timed collectives include each probe's second");

// The size class of a staged collective moving `len` bytes per member.
inline unsigned stage_size_class(std::size_t len) noexcept {
  return len <= (64u << 10) ? 0 : len <= (256u << 10) ? 1 : 2;
}
static_assert(node::kStagedSizes == 3);

// Folds one timed collective's copying time (ns per MiB) into this
// member's average: down to a lower sample at once, up by a quarter of the
// difference but at most 25% (a preempted copy can take many times as long).
inline void record_stage_cost(std::atomic<uint32_t>& avg, uint64_t ns_per_mib) noexcept {
  const uint64_t x = ns_per_mib > UINT32_MAX ? UINT32_MAX : (ns_per_mib ? ns_per_mib : 1);
  const uint64_t old = avg.load(std::memory_order_relaxed);
  const uint64_t up = x > old ? std::min(x - old, old) / 4 : 0;  // at most +25% a sample
  avg.store(static_cast<uint32_t>(!old || x < old ? x : std::min<uint64_t>(old + up, UINT32_MAX)),
            std::memory_order_relaxed);
}

// The stores for the team's next collective of `kind` and size class
// `size`: true for streaming.  `now`: the stores used last (plain until
// every member has timed both).
inline bool stage_stream_next(const std::vector<node::SlotArea*>& slots, unsigned size, unsigned kind,
                              bool now) noexcept {
  uint64_t plain = 0, stream = 0;
  for (const node::SlotArea* s : slots) {
    const uint32_t p = s->stage_cost[size][kind][0].load(std::memory_order_relaxed);
    const uint32_t q = s->stage_cost[size][kind][1].load(std::memory_order_relaxed);
    if (!p || !q) return now;
    plain += p;
    stream += q;
  }
  return now ? !(plain * 5 < stream * 4) : stream * 5 < plain * 4;
}

}  // namespace tsu::coll
