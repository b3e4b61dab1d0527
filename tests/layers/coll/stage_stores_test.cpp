// The node collectives' stage stores: the streaming copy against memcpy at
// every alignment and ragged length, and the measured choice between plain
// and streaming stores (coll/stage_store_choice.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "coll/stage_store_choice.hpp"
#include "coll/stream_copy.hpp"

namespace {

using tsu::coll::kProbePeriod;
using tsu::coll::node::SlotArea;

std::byte pattern(std::size_t i, unsigned salt) { return static_cast<std::byte>((i * 131 + salt * 7 + 3) & 0xff); }

TEST(StreamCopy, MatchesMemcpyAtEveryAlignmentAndLength) {
  constexpr std::size_t kGuard = 80;
  const std::size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 4096 + 13, 65536 + 7};
  std::vector<std::byte> src(70000 + 128), dst(70000 + 2 * kGuard + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = pattern(i, 1);
  for (std::size_t n : lengths)
    for (std::size_t doff = 0; doff < 64; doff += (n > 4096 ? 7 : 1))
      for (std::size_t soff : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{33}}) {
        for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = pattern(i, 2);
        std::byte* to = dst.data() + kGuard + doff;
        tsu::coll::stream_copy(to, src.data() + soff, n);
        tsu::coll::stream_fence();
        ASSERT_EQ(std::memcmp(to, src.data() + soff, n), 0) << "n " << n << " dst+" << doff << " src+" << soff;
        for (std::size_t i = 0; i < kGuard + doff; ++i)
          ASSERT_EQ(dst[i], pattern(i, 2)) << "wrote before dst: n " << n << " dst+" << doff;
        for (std::size_t i = kGuard + doff + n; i < dst.size(); ++i)
          ASSERT_EQ(dst[i], pattern(i, 2)) << "wrote past dst: n " << n << " dst+" << doff;
      }
}

TEST(StageStoreChoice, ProbesPlainThenStreamingTwiceInARowPerPeriod) {
  int plain = 0, stream = 0, none = 0;
  for (uint64_t k = 0; k < 4 * kProbePeriod; ++k) {
    const int p = tsu::coll::stage_probe(k);
    plain += p == 0;
    stream += p == 1;
    none += p < 0;
  }
  EXPECT_EQ(plain, 8);
  EXPECT_EQ(stream, 8);
  EXPECT_EQ(none, static_cast<int>(4 * kProbePeriod - 16));
  EXPECT_EQ(tsu::coll::stage_probe(0), 0);  // plain first: the choice before any probe
  EXPECT_EQ(tsu::coll::stage_probe(1), 0);
  EXPECT_EQ(tsu::coll::stage_probe(2), -1);
  EXPECT_EQ(tsu::coll::stage_probe(kProbePeriod / 2 - 1), -1);
  EXPECT_EQ(tsu::coll::stage_probe(kProbePeriod / 2), 1);
  EXPECT_EQ(tsu::coll::stage_probe(kProbePeriod / 2 + 1), 1);
  EXPECT_EQ(tsu::coll::stage_probe(kProbePeriod / 2 + 2), -1);
  EXPECT_EQ(tsu::coll::stage_probe(kProbePeriod + 1), 0);
}

TEST(StageStoreChoice, SizeClassesSplitAt64And256KiB) {
  EXPECT_EQ(tsu::coll::stage_size_class(9000), 0u);
  EXPECT_EQ(tsu::coll::stage_size_class(64u << 10), 0u);
  EXPECT_EQ(tsu::coll::stage_size_class((64u << 10) + 1), 1u);
  EXPECT_EQ(tsu::coll::stage_size_class(256u << 10), 1u);
  EXPECT_EQ(tsu::coll::stage_size_class(1u << 20), 2u);
}

TEST(StageStoreChoice, AveragesDropAtOnceAndRiseByAQuarterAtMost25Percent) {
  auto slot = std::make_unique<SlotArea>();
  std::atomic<uint32_t>& avg = slot->stage_cost[2][3][1];
  avg.store(0);
  tsu::coll::record_stage_cost(avg, 1000);
  EXPECT_EQ(avg.load(), 1000u);  // first sample taken as is
  tsu::coll::record_stage_cost(avg, 1400);
  EXPECT_EQ(avg.load(), 1100u);  // a slower sample: a quarter of the way
  tsu::coll::record_stage_cost(avg, 30000);
  EXPECT_EQ(avg.load(), 1375u);  // a far slower one (preempted): +25% at most
  tsu::coll::record_stage_cost(avg, 900);
  EXPECT_EQ(avg.load(), 900u);  // a faster one: at once
  tsu::coll::record_stage_cost(avg, 0);  // a zero reads as "no sample": kept at least 1
  EXPECT_EQ(avg.load(), 1u);
  avg.store(UINT32_MAX - 1);
  tsu::coll::record_stage_cost(avg, uint64_t{1} << 40);
  EXPECT_GE(avg.load(), UINT32_MAX - 1);  // clamped, not wrapped
}

TEST(StageStoreChoice, TimesEachProbesSecondAndNeverTheFirstOrTheOneAfter) {
  for (uint64_t k = 0; k < 2 * kProbePeriod; ++k) {
    const int p = tsu::coll::stage_probe(k);
    const int before = k ? tsu::coll::stage_probe(k - 1) : -1;
    if (p >= 0 && before == p) {
      EXPECT_TRUE(tsu::coll::stage_timed(k)) << k;  // a probe's second
    }
    if (p >= 0 && before != p) {
      EXPECT_FALSE(tsu::coll::stage_timed(k)) << k;  // a probe's first pays the switch
    }
    if (p < 0 && before >= 0) {
      EXPECT_FALSE(tsu::coll::stage_timed(k)) << k;  // the switch back
    }
  }
  int timed = 0;
  for (uint64_t k = 0; k < kProbePeriod; ++k) timed += tsu::coll::stage_timed(k);
  EXPECT_EQ(timed, 8);
}

TEST(StageStoreChoice, SwitchesWhenTheOtherStoresCostUnderFourFifthsSummedOverMembers) {
  std::vector<std::unique_ptr<SlotArea>> own;
  std::vector<SlotArea*> slots;
  for (int i = 0; i < 2; ++i) {
    own.push_back(std::make_unique<SlotArea>());
    for (auto& size : own.back()->stage_cost)
      for (auto& kind : size)
        for (auto& c : kind) c.store(0);
    slots.push_back(own.back().get());
  }
  constexpr unsigned kBroadcast = 1;
  const unsigned kBig = tsu::coll::stage_size_class(1u << 20);
  auto next = [&](bool now) { return tsu::coll::stage_stream_next(slots, kBig, kBroadcast, now); };
  auto set = [&](int member, uint32_t plain, uint32_t stream) {
    slots[member]->stage_cost[kBig][kBroadcast][0].store(plain);
    slots[member]->stage_cost[kBig][kBroadcast][1].store(stream);
  };
  EXPECT_FALSE(next(false));  // nothing measured: as before
  EXPECT_TRUE(next(true));
  // The root's streaming stores cost it more, its reader much less: the sum decides.
  set(0, 100, 300);
  EXPECT_FALSE(next(false));  // member 1 not measured yet
  set(1, 500, 100);
  EXPECT_TRUE(next(false));  // 400 < 4/5 of 600
  set(1, 500, 190);
  EXPECT_FALSE(next(false));  // 490: not under 480, plain stays
  EXPECT_TRUE(next(true));    // and streaming stays (600 is not under 4/5 of 490)
  set(1, 200, 190);
  EXPECT_FALSE(next(true));  // 300 < 4/5 of 490: back to plain
  EXPECT_FALSE(tsu::coll::stage_stream_next(slots, kBig, kBroadcast + 1, false));  // per kind
  EXPECT_FALSE(tsu::coll::stage_stream_next(slots, 0, kBroadcast, false));         // per size class
}

}  // namespace
