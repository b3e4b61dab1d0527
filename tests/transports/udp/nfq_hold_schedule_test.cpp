// The NFQUEUE holder's hold policy: every packet released exactly once, in
// order of release time; jitter and the reorder hold reorder, a fixed delay
// does not; the holding area is bounded; stopping releases everything.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "hold_schedule.hpp"

namespace {

using tsu::nfq::HoldPolicy;
using tsu::nfq::HoldSchedule;
using tsu::nfq::Nanos;

constexpr Nanos kMs{1'000'000};

// Packets 0..n-1 arrive 10 us apart; returns the order they are released in.
std::vector<std::uint32_t> release_order(HoldSchedule& schedule, std::uint32_t n) {
  for (std::uint32_t id = 0; id < n; ++id) EXPECT_TRUE(schedule.admit(id, Nanos(id * 10'000)));
  std::vector<std::uint32_t> order;
  schedule.take_due(Nanos(1'000'000'000), order);
  return order;
}

bool released_each_once(std::vector<std::uint32_t> order, std::uint32_t n) {
  std::sort(order.begin(), order.end());
  std::vector<std::uint32_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0u);
  return order == expected;
}

TEST(NfqHoldSchedule, FixedDelayKeepsOrderAndHoldsUntilDue) {
  HoldSchedule schedule(HoldPolicy{.delay = 2 * kMs});
  ASSERT_TRUE(schedule.admit(7, Nanos(0)));
  ASSERT_TRUE(schedule.admit(8, Nanos(10)));
  std::vector<std::uint32_t> out;
  schedule.take_due(2 * kMs - Nanos(1), out);
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(schedule.next_release(), 2 * kMs);
  schedule.take_due(2 * kMs + Nanos(10), out);
  EXPECT_EQ(out, (std::vector<std::uint32_t>{7, 8}));
  EXPECT_EQ(schedule.counters().reordered, 0u);
  EXPECT_EQ(schedule.counters().released, 2u);
  EXPECT_FALSE(schedule.next_release().has_value());
}

TEST(NfqHoldSchedule, JitterReordersEveryPacketStillReleasedOnce) {
  HoldSchedule schedule(HoldPolicy{.delay = 2 * kMs, .jitter = kMs, .seed = 3});
  const auto order = release_order(schedule, 500);
  EXPECT_TRUE(released_each_once(order, 500));
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
  EXPECT_GT(schedule.counters().reordered, 0u);
  EXPECT_EQ(schedule.counters().released, 500u);
}

TEST(NfqHoldSchedule, ReorderPercentHoldsSomePacketsBack) {
  HoldSchedule schedule(HoldPolicy{.reorder_percent = 25, .reorder_extra = kMs, .seed = 4});
  const auto order = release_order(schedule, 400);
  EXPECT_TRUE(released_each_once(order, 400));
  // About a quarter are overtaken; far from none and far from all.
  EXPECT_GT(schedule.counters().reordered, 40u);
  EXPECT_LT(schedule.counters().reordered, 200u);
}

TEST(NfqHoldSchedule, SameSeedSameOrder) {
  const HoldPolicy policy{.delay = kMs, .jitter = kMs, .reorder_percent = 10, .reorder_extra = kMs, .seed = 9};
  HoldSchedule a(policy), b(policy);
  EXPECT_EQ(release_order(a, 300), release_order(b, 300));
}

TEST(NfqHoldSchedule, FullHoldingAreaBypasses) {
  HoldSchedule schedule(HoldPolicy{.delay = kMs, .max_held = 3});
  for (std::uint32_t id = 0; id < 3; ++id) EXPECT_TRUE(schedule.admit(id, Nanos(0)));
  EXPECT_FALSE(schedule.admit(3, Nanos(0)));
  EXPECT_EQ(schedule.held_now(), 3u);
  EXPECT_EQ(schedule.counters().bypassed, 1u);
  EXPECT_EQ(schedule.counters().queued, 4u);
  EXPECT_EQ(schedule.counters().peak_held, 3u);
}

TEST(NfqHoldSchedule, StoppingReleasesEverythingHeld) {
  HoldSchedule schedule(HoldPolicy{.delay = 1000 * kMs, .jitter = 10 * kMs, .seed = 5});
  for (std::uint32_t id = 0; id < 50; ++id) ASSERT_TRUE(schedule.admit(id, Nanos(0)));
  std::vector<std::uint32_t> out;
  schedule.take_due(Nanos(0), out);
  EXPECT_TRUE(out.empty());
  schedule.take_all(out);
  EXPECT_TRUE(released_each_once(out, 50));
  EXPECT_EQ(schedule.counters().flushed, 50u);
  EXPECT_EQ(schedule.held_now(), 0u);
}

}  // namespace
