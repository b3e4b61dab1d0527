// Which stores a member writes its stage with: plain, or non-temporal
// (coll/stream_copy.hpp), chosen by measurement.
//
// Why measured: on the 2-vCPU VM this was built on, the host moves the two
// vCPUs between a "near" placement (a cache line crosses in 30-90 ns) and a
// "far" one (~450 ns), every few seconds.  Near, plain stores win: the
// reader takes the stage from the shared cache (2-rank 1 MiB allreduce
// ~120 us).  Far, each stage line crossing twice per use (data one way,
// ownership back) makes plain stores 3x slower (~370 us), while streaming
// stores stay at ~200 us in both placements (docs/benchmarks-coll.md).
// Neither is right all the time, and the placement cannot be asked for.
//
// How: the team's k-th staged collective probes plain stores where
// k % kProbePeriod == 0 and streaming ones where it is kProbePeriod / 2; on
// a probe every member uses the probed stores (all count the same staged
// ops, so they agree) and times its own copying (not its waits).  Each
// member keeps, per collective kind and store kind, a running average of
// that time per MiB in its slot (SlotArea::stage_cost; per size class too:
// a 32 KiB probe is not compared with a 1 MiB one), where the team's
// writers read it: between probes a writer uses the stores whose summed
// cost over all members is lower (a broadcast's root counts its readers'
// copying too).  A probe every 32 staged collectives costs ~1% where the
// probed stores are 1.7x slower.  The averages are racy relaxed loads and
// stores of 32-bit values: a stale or torn-free old value only delays a
// switch by a probe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coll/node_area.hpp"

namespace tsu::coll {

inline constexpr uint64_t kProbePeriod = 64;

// The setting TSU_COLL_STAGE_STREAM.
enum StageStoreSetting : uint32_t { kStagePlain = 0, kStageStream = 1, kStageMeasured = 2 };

// For the team's k-th staged collective: 0 or 1 (plain or streaming) where
// it probes, else -1.
inline int stage_probe(uint64_t k) noexcept {
  if (k % kProbePeriod == 0) return 0;
  if (k % kProbePeriod == kProbePeriod / 2) return 1;
  return -1;
}

// The size class of a staged collective moving `len` bytes per member.
inline unsigned stage_size_class(std::size_t len) noexcept {
  return len <= (64u << 10) ? 0 : len <= (256u << 10) ? 1 : 2;
}
static_assert(node::kStagedSizes == 3);

// Folds one probe's copying time (ns per MiB) into this member's average
// (weight 1/2: the placement changes within seconds).
inline void record_stage_cost(std::atomic<uint32_t>& avg, uint64_t ns_per_mib) noexcept {
  const uint64_t x = ns_per_mib > UINT32_MAX ? UINT32_MAX : (ns_per_mib ? ns_per_mib : 1);
  const uint64_t old = avg.load(std::memory_order_relaxed);
  avg.store(static_cast<uint32_t>(old ? (old + x) / 2 : x), std::memory_order_relaxed);
}

// Whether streaming stores cost the team less for collectives of `kind`
// and size class `size` (plain until every member has timed both).
inline bool stage_stream_cheaper(const std::vector<node::SlotArea*>& slots, unsigned size,
                                 unsigned kind) noexcept {
  uint64_t plain = 0, stream = 0;
  for (const node::SlotArea* s : slots) {
    const uint32_t p = s->stage_cost[size][kind][0].load(std::memory_order_relaxed);
    const uint32_t q = s->stage_cost[size][kind][1].load(std::memory_order_relaxed);
    if (!p || !q) return false;
    plain += p;
    stream += q;
  }
  return stream < plain;
}

}  // namespace tsu::coll
