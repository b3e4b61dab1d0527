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

TEST(StageStoreChoice, ProbesPlainThenStreamingOncePerPeriod) {
  int plain = 0, stream = 0, none = 0;
  for (uint64_t k = 0; k < 4 * kProbePeriod; ++k) {
    const int p = tsu::coll::stage_probe(k);
    plain += p == 0;
    stream += p == 1;
    none += p < 0;
  }
  EXPECT_EQ(plain, 4);
  EXPECT_EQ(stream, 4);
  EXPECT_EQ(none, static_cast<int>(4 * kProbePeriod - 8));
  EXPECT_EQ(tsu::coll::stage_probe(0), 0);  // plain first: the choice before any probe
  EXPECT_EQ(tsu::coll::stage_probe(kProbePeriod / 2), 1);
}

TEST(StageStoreChoice, SizeClassesSplitAt64And256KiB) {
  EXPECT_EQ(tsu::coll::stage_size_class(9000), 0u);
  EXPECT_EQ(tsu::coll::stage_size_class(64u << 10), 0u);
  EXPECT_EQ(tsu::coll::stage_size_class((64u << 10) + 1), 1u);
  EXPECT_EQ(tsu::coll::stage_size_class(256u << 10), 1u);
  EXPECT_EQ(tsu::coll::stage_size_class(1u << 20), 2u);
}

TEST(StageStoreChoice, AveragesHalveTheOldValueAndClamp) {
  auto slot = std::make_unique<SlotArea>();
  std::atomic<uint32_t>& avg = slot->stage_cost[2][3][1];
  avg.store(0);
  tsu::coll::record_stage_cost(avg, 1000);
  EXPECT_EQ(avg.load(), 1000u);  // first sample taken as is
  tsu::coll::record_stage_cost(avg, 3000);
  EXPECT_EQ(avg.load(), 2000u);
  tsu::coll::record_stage_cost(avg, 0);  // a zero reads as "no sample": kept at least 1
  EXPECT_EQ(avg.load(), 1000u);
  avg.store(0);
  tsu::coll::record_stage_cost(avg, 0);
  EXPECT_EQ(avg.load(), 1u);
  tsu::coll::record_stage_cost(avg, uint64_t{1} << 40);
  EXPECT_GE(avg.load(), UINT32_MAX / 2);
}

TEST(StageStoreChoice, PicksTheStoresWhoseCostSummedOverMembersIsLower) {
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
  EXPECT_FALSE(tsu::coll::stage_stream_cheaper(slots, kBig, kBroadcast));  // nothing measured: plain
  // The root's streaming stores cost it more, its reader much less: the sum decides.
  slots[0]->stage_cost[kBig][kBroadcast][0].store(100);
  slots[0]->stage_cost[kBig][kBroadcast][1].store(300);
  EXPECT_FALSE(tsu::coll::stage_stream_cheaper(slots, kBig, kBroadcast));  // member 1 not measured yet
  slots[1]->stage_cost[kBig][kBroadcast][0].store(500);
  slots[1]->stage_cost[kBig][kBroadcast][1].store(100);
  EXPECT_TRUE(tsu::coll::stage_stream_cheaper(slots, kBig, kBroadcast));  // 400 < 600
  slots[1]->stage_cost[kBig][kBroadcast][1].store(400);
  EXPECT_FALSE(tsu::coll::stage_stream_cheaper(slots, kBig, kBroadcast));  // 700 > 600
  EXPECT_FALSE(tsu::coll::stage_stream_cheaper(slots, kBig, kBroadcast + 1));  // per kind
  EXPECT_FALSE(tsu::coll::stage_stream_cheaper(slots, 0, kBroadcast));         // per size class
}

}  // namespace
