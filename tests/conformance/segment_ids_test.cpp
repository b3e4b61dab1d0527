// Segment ids are reused with a generation (issue 14): rank 0 runs 1,000,000
// register/free cycles of one and the same buffer and some thousands of
// shared-segment cycles; every round it publishes stale ids (of freed
// segments, some on the very index a live segment now has) and live ids to the
// other ranks, which put, get and run atomics on them.  Stale ids must fail
// with TSU_ERR_BAD_SEGMENT on every route, the live segments' sentinel bytes
// must show only the writes made through live ids, and live ids must work.
//
// White box: the test knows the id layout (generation << 14 | index) to name
// the stale id of the live segment's index.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mp_util.hpp"

namespace {

using mp::barrier;

constexpr uint32_t kIndexBits = 14;
// With at most two segments live besides the main one, indices come round in
// a fixed order every 16383 allocations (all non-main indices: fresh ones
// first, then FIFO).  A round makes exactly that many, so each round's live
// segments reuse the indices of the previous round's, whose mappings the
// peers hold: a stale id of a segment the peer had mapped, and a remap.
constexpr uint32_t kIndicesInTurn = (1u << kIndexBits) - 1;
constexpr uint32_t kSharedCyclesPerRound = 100;
constexpr uint32_t kRegCyclesPerRound = kIndicesInTurn - kSharedCyclesPerRound - 2;
constexpr uint32_t kRounds = 62;  // 1,009,422 register/free cycles, 6,200 shared ones
constexpr std::size_t kSegBytes = 4096;
constexpr uint8_t kSentinel = 0xA5;
constexpr uint64_t kMailboxOff = 0;     // in every rank's main segment: the round's ids
constexpr uint64_t kStageOff = 4096;    // rank 0: staging of the record; peers: put source
constexpr uint64_t kLandOff = 8192;     // peers: get destination
constexpr uint64_t kCounterOff = 0;     // in the live shared segment: the atomic word
constexpr uint64_t kProbeOff = 128;     // where stale requests aim (sentinel bytes)

struct Record {
  uint64_t round;
  tsu_seg_t live_reg, live_shared;
  tsu_seg_t stale_reg, stale_shared;  // the previous generation of the live ones' indices
  tsu_seg_t stale_old, stale_recent;  // freed in round 0; the last one freed before the round
  uint32_t pad;
};

uint8_t* main_base() {
  void* base = nullptr;
  std::size_t size = 0;
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &size), TSU_OK);
  return static_cast<uint8_t*>(base);
}


uint8_t peer_byte(uint32_t r, int i) { return static_cast<uint8_t>(0x10 * r + i + 1); }

// Rank 0's local checks of a stale id (self route and the local API).
void owner_expect_stale(tsu_seg_t stale, const char* what) {
  void* p = nullptr;
  std::size_t size = 0;
  EXPECT_EQ(tsu_laddr_ptr(tsu_laddr(stale, 0), 1, &p), TSU_ERR_BAD_SEGMENT) << what;
  EXPECT_EQ(tsu_segment_info(stale, &p, &size), TSU_ERR_BAD_SEGMENT) << what;
  EXPECT_EQ(tsu_segment_free(stale), TSU_ERR_BAD_SEGMENT) << what;
  EXPECT_EQ(mp::outcome([&](tsu_cb_t cb) {
              return tsu_try_put(tsu_gaddr(0, stale, kProbeOff), tsu_laddr(TSU_SEG_MAIN, kStageOff),
                                 8, cb);
            }),
            TSU_ERR_BAD_SEGMENT)
      << what << ": put to self";
}

TEST(SegmentIds, StaleIdsFailOnEveryRouteAcrossAMillionReuses) {
  const uint32_t me = mp::rank(), n = mp::size();
  ASSERT_LE(n, kSegBytes / 64);
  uint8_t* const mine = main_base();
  ASSERT_NE(mine, nullptr);
  // The one buffer every registration of rank 0 names.
  std::vector<uint8_t> reg_mem(kSegBytes);
  std::vector<tsu_seg_t> last_freed(1u << kIndexBits, TSU_SEG_MAIN);
  tsu_seg_t stale_old = TSU_SEG_MAIN, prev_live_shared = TSU_SEG_MAIN;
  uint64_t reg_cycles = 0, shared_cycles = 0;
  barrier();

  for (uint32_t round = 0; round < kRounds; ++round) {
    if (me == 0) {
      tsu_seg_t seg = TSU_SEG_MAIN;
      for (uint32_t i = 0; i < kRegCyclesPerRound; ++i) {
        ASSERT_EQ(tsu_mem_register(reg_mem.data(), reg_mem.size(), &seg), TSU_OK)
            << tsu_last_error();
        ASSERT_EQ(tsu_segment_free(seg), TSU_OK) << tsu_last_error();
        last_freed[seg & ((1u << kIndexBits) - 1)] = seg;
        ++reg_cycles;
        if (i % 5000 == 0) owner_expect_stale(seg, "registered, just freed");
      }
      for (uint32_t i = 0; i < kSharedCyclesPerRound; ++i) {
        void* base = nullptr;
        ASSERT_EQ(tsu_segment_alloc(kSegBytes, &seg, &base), TSU_OK) << tsu_last_error();
        std::memset(base, 0x11, 64);
        ASSERT_EQ(tsu_segment_free(seg), TSU_OK) << tsu_last_error();
        last_freed[seg & ((1u << kIndexBits) - 1)] = seg;
        ++shared_cycles;
      }
      if (round == 0) stale_old = seg;

      // This round's live segments, full of sentinel bytes.
      std::memset(reg_mem.data(), kSentinel, reg_mem.size());
      Record rec{};
      rec.round = round;
      ASSERT_EQ(tsu_mem_register(reg_mem.data(), reg_mem.size(), &rec.live_reg), TSU_OK);
      void* shared_base = nullptr;
      ASSERT_EQ(tsu_segment_alloc(kSegBytes, &rec.live_shared, &shared_base), TSU_OK);
      auto* shared = static_cast<uint8_t*>(shared_base);
      std::memset(shared, kSentinel, kSegBytes);
      std::memset(shared + kCounterOff, 0, 8);
      const auto stale_of = [&](tsu_seg_t live) {
        const tsu_seg_t s = last_freed[live & ((1u << kIndexBits) - 1)];
        return s != TSU_SEG_MAIN ? s : seg;
      };
      rec.stale_reg = stale_of(rec.live_reg);
      rec.stale_shared = stale_of(rec.live_shared);
      rec.stale_old = stale_old != TSU_SEG_MAIN ? stale_old : seg;
      rec.stale_recent = seg;
      if (round > 0) {
        // From round 1 on, the live segments sit on reused indices.
        EXPECT_EQ(rec.stale_reg & ((1u << kIndexBits) - 1), rec.live_reg & ((1u << kIndexBits) - 1));
        EXPECT_NE(rec.stale_reg, rec.live_reg);
        EXPECT_EQ(rec.stale_shared & ((1u << kIndexBits) - 1),
                  rec.live_shared & ((1u << kIndexBits) - 1));
        EXPECT_EQ(rec.stale_shared, prev_live_shared) << "the index of last round's live segment";
      }
      for (const tsu_seg_t s : {rec.stale_reg, rec.stale_shared, rec.stale_old, rec.stale_recent})
        owner_expect_stale(s, "published stale id");
      std::memcpy(mine + kStageOff, &rec, sizeof rec);
      for (uint32_t p = 1; p < n; ++p)
        ASSERT_EQ(mp::outcome([&](tsu_cb_t cb) {
                    return tsu_try_put(tsu_gaddr(p, TSU_SEG_MAIN, kMailboxOff),
                                       tsu_laddr(TSU_SEG_MAIN, kStageOff), sizeof rec, cb);
                  }),
                  TSU_OK)
            << tsu_last_error();
      barrier();  // A: the ids are out
      barrier();  // B: the peers are done
      // Only the writes through live ids landed.
      for (std::size_t i = 0; i < kSegBytes; ++i) {
        uint8_t want = kSentinel;
        const std::size_t r = i / 64;
        if (r >= 1 && r < n && i % 64 < 8) want = peer_byte(static_cast<uint32_t>(r), i % 64);
        ASSERT_EQ(reg_mem[i], want) << "registered segment byte " << i << ", round " << round;
      }
      uint64_t counter = 0;
      std::memcpy(&counter, shared + kCounterOff, 8);
      EXPECT_EQ(counter, n - 1) << "round " << round;
      for (std::size_t i = 8; i < kSegBytes; ++i)
        ASSERT_EQ(shared[i], kSentinel) << "shared segment byte " << i << ", round " << round;
      ASSERT_EQ(tsu_segment_free(rec.live_reg), TSU_OK);
      ASSERT_EQ(tsu_segment_free(rec.live_shared), TSU_OK);
      last_freed[rec.live_reg & ((1u << kIndexBits) - 1)] = rec.live_reg;
      last_freed[rec.live_shared & ((1u << kIndexBits) - 1)] = rec.live_shared;
      prev_live_shared = rec.live_shared;
      barrier();  // C: freed; next round
      continue;
    }

    // Peers.
    barrier();  // A
    Record rec;
    std::memcpy(&rec, mine + kMailboxOff, sizeof rec);
    EXPECT_EQ(rec.round, round);
    uint32_t node0 = 0, node_me = 1;
    ASSERT_EQ(tsu_node_of(0, &node0), TSU_OK);
    ASSERT_EQ(tsu_node_of(me, &node_me), TSU_OK);
    const bool same_node = node0 == node_me;
    std::memset(mine + kStageOff, 0xEE, 64);
    for (int i = 0; i < 8; ++i) mine[kStageOff + i] = peer_byte(me, i);
    for (const tsu_seg_t s : {rec.stale_reg, rec.stale_shared, rec.stale_old, rec.stale_recent}) {
      EXPECT_EQ(mp::outcome([&](tsu_cb_t cb) {
                  return tsu_try_put(tsu_gaddr(0, s, kProbeOff), tsu_laddr(TSU_SEG_MAIN, kStageOff + 8),
                                     8, cb);
                }),
                TSU_ERR_BAD_SEGMENT)
          << "put to stale id " << s << ", round " << round;
      EXPECT_EQ(mp::outcome([&](tsu_cb_t cb) {
                  return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kLandOff), tsu_gaddr(0, s, kProbeOff),
                                     8, cb);
                }),
                TSU_ERR_BAD_SEGMENT)
          << "get from stale id " << s << ", round " << round;
      uint64_t old = 0;
      EXPECT_EQ(mp::outcome([&](tsu_cb_t cb) {
                  return tsu_try_fetch_add_u64(tsu_gaddr(0, s, kCounterOff), 1, &old, cb);
                }),
                TSU_ERR_BAD_SEGMENT)
          << "atomic on stale id " << s << ", round " << round;
      void* p = nullptr;
      EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(0, s, 0), 8, &p),
                same_node ? TSU_ERR_BAD_SEGMENT : TSU_ERR_UNREACHABLE)
          << "pointer to stale id " << s;
    }
    // Live ids work.
    ASSERT_EQ(mp::outcome([&](tsu_cb_t cb) {
                return tsu_try_put(tsu_gaddr(0, rec.live_reg, 64 * me), tsu_laddr(TSU_SEG_MAIN, kStageOff),
                                   8, cb);
              }),
              TSU_OK)
        << tsu_last_error();
    std::memset(mine + kLandOff, 0, 16);
    ASSERT_EQ(mp::outcome([&](tsu_cb_t cb) {
                return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kLandOff),
                                   tsu_gaddr(0, rec.live_reg, 2048), 8, cb);
              }),
              TSU_OK);
    EXPECT_EQ(mp::check_fill(mine + kLandOff, 8, kSentinel), SIZE_MAX);
    uint64_t old = 0;
    ASSERT_EQ(mp::outcome([&](tsu_cb_t cb) {
                return tsu_try_fetch_add_u64(tsu_gaddr(0, rec.live_shared, kCounterOff), 1, &old, cb);
              }),
              TSU_OK);
    EXPECT_LT(old, n - 1);
    std::memset(mine + kLandOff, 0, 16);
    ASSERT_EQ(mp::outcome([&](tsu_cb_t cb) {
                return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kLandOff),
                                   tsu_gaddr(0, rec.live_shared, kSegBytes - 8), 8, cb);
              }),
              TSU_OK);
    EXPECT_EQ(mp::check_fill(mine + kLandOff, 8, kSentinel), SIZE_MAX);
    if (same_node) {
      void* p = nullptr;
      ASSERT_EQ(tsu_gaddr_ptr(tsu_gaddr(0, rec.live_shared, kSegBytes - 8), 8, &p), TSU_OK);
      EXPECT_EQ(mp::check_fill(p, 8, kSentinel), SIZE_MAX);
    }
    barrier();  // B
    barrier();  // C
  }
  if (me == 0) {
    EXPECT_EQ(reg_cycles, uint64_t{kRounds} * kRegCyclesPerRound);
    EXPECT_EQ(shared_cycles, uint64_t{kRounds} * kSharedCyclesPerRound);
  }
  barrier();
}

}  // namespace
