// The ordered-request book (core/order_book.hpp) on its own: what it holds,
// releases and fails, and its completion watermark, with completions in any
// order.
#include <gtest/gtest.h>

#include <vector>

#include "core/order_book.hpp"

namespace {

using tsu::core::Command;
using tsu::core::OrderBook;
using tsu::core::OrderedRelease;
using tsu::core::OrderedRequest;
using D = OrderBook::Decision;

struct Added {
  OrderedRequest* req = nullptr;
  uint64_t id = 0;
  D decision = D::kRun;
};

Added add(OrderBook& b, uint64_t after) {
  Added a;
  EXPECT_EQ(b.add(Command{}, after, a.req, a.id, a.decision), TSU_OK);
  return a;
}

std::vector<OrderedRelease> finish(OrderBook& b, OrderedRequest* r, tsu_status_t st = TSU_OK) {
  std::vector<OrderedRelease> out;
  b.finish(r, st, out);
  return out;
}

TEST(OrderBook, IdsCountFromOneAndUnknownHandlesAreRefused) {
  OrderBook b(nullptr);
  OrderedRequest* r = nullptr;
  uint64_t id = 0;
  D d{};
  EXPECT_EQ(b.add(Command{}, 1, r, id, d), TSU_ERR_INVALID_ARG);  // nothing issued yet
  EXPECT_EQ(add(b, TSU_REQ_NONE).id, 1u);
  EXPECT_EQ(add(b, TSU_REQ_NONE).id, 2u);
  EXPECT_EQ(b.add(Command{}, 3, r, id, d), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(b.last_id(), 2u);
}

TEST(OrderBook, WatermarkWaitsForTheGapToClose) {
  OrderBook b(nullptr);
  Added a = add(b, TSU_REQ_NONE), c = add(b, TSU_REQ_NONE), e = add(b, TSU_REQ_NONE);
  EXPECT_EQ(b.done_below(), 1u);
  EXPECT_TRUE(finish(b, e.req).empty());  // 3 done, 1 and 2 not
  EXPECT_EQ(b.done_below(), 1u);
  finish(b, a.req);
  EXPECT_EQ(b.done_below(), 2u);
  finish(b, c.req);
  EXPECT_EQ(b.done_below(), 4u);  // 1..3 all done
}

TEST(OrderBook, FollowersAreHeldThenReleasedTogether) {
  OrderBook b(nullptr);
  Added p = add(b, TSU_REQ_NONE);
  Added f1 = add(b, p.id), f2 = add(b, p.id), free = add(b, TSU_REQ_NONE);
  EXPECT_EQ(f1.decision, D::kHold);
  EXPECT_EQ(f2.decision, D::kHold);
  EXPECT_EQ(free.decision, D::kRun);
  EXPECT_EQ(b.held(), 2u);
  const auto rel = finish(b, p.req);
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_EQ(rel[0].req, f1.req);
  EXPECT_EQ(rel[1].req, f2.req);
  EXPECT_FALSE(rel[0].fail);
  EXPECT_EQ(b.held(), 0u);
  // A follower of a completed request runs at once.
  EXPECT_EQ(add(b, p.id).decision, D::kRun);
}

TEST(OrderBook, AllEarlierWaitsForEveryOneThenRuns) {
  OrderBook b(nullptr);
  Added a = add(b, TSU_REQ_NONE), c = add(b, TSU_REQ_NONE);
  Added all = add(b, TSU_REQ_ALL);
  EXPECT_EQ(all.decision, D::kHold);
  Added later = add(b, TSU_REQ_NONE);  // after it, not waited for
  EXPECT_TRUE(finish(b, c.req).empty());
  EXPECT_TRUE(finish(b, later.req).empty());
  const auto rel = finish(b, a.req);
  ASSERT_EQ(rel.size(), 1u);
  EXPECT_EQ(rel[0].req, all.req);
  EXPECT_FALSE(rel[0].fail);
  EXPECT_EQ(b.done_below(), all.id);
  finish(b, all.req);
  EXPECT_EQ(b.done_below(), later.id + 1);
  // Nothing pending: runs at once.
  EXPECT_EQ(add(b, TSU_REQ_ALL).decision, D::kRun);
}

TEST(OrderBook, FailureFailsFollowersUntilReported) {
  OrderBook b(nullptr);
  Added bad = add(b, TSU_REQ_NONE);
  Added f = add(b, bad.id);
  Added all = add(b, TSU_REQ_ALL);
  auto rel = finish(b, bad.req, TSU_ERR_OUT_OF_BOUNDS);
  ASSERT_EQ(rel.size(), 1u);
  EXPECT_EQ(rel[0].req, f.req);
  EXPECT_TRUE(rel[0].fail);
  // The follower fails too (its own failure): the "all earlier" one fails.
  rel = finish(b, f.req, TSU_ERR_DEPENDENCY);
  ASSERT_EQ(rel.size(), 1u);
  EXPECT_EQ(rel[0].req, all.req);
  EXPECT_TRUE(rel[0].fail);
  finish(b, all.req, TSU_ERR_DEPENDENCY);
  // Later followers of the failed one fail at once, until a wait reports it.
  EXPECT_EQ(add(b, bad.id).decision, D::kFail);
  EXPECT_EQ(add(b, TSU_REQ_ALL).decision, D::kFail);
  uint64_t id = 0;
  tsu_status_t st = TSU_OK;
  ASSERT_TRUE(b.take_failure(all.id, id, st));
  EXPECT_EQ(id, bad.id);
  EXPECT_EQ(st, TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_FALSE(b.take_failure(all.id, id, st));  // reported once (all up to all.id)
  EXPECT_EQ(add(b, bad.id).decision, D::kRun);
}

TEST(OrderBook, AllEarlierIsNotFailedByALaterFailure) {
  OrderBook b(nullptr);
  Added a = add(b, TSU_REQ_NONE);
  Added all = add(b, TSU_REQ_ALL);
  Added after = add(b, TSU_REQ_NONE);
  EXPECT_TRUE(finish(b, after.req, TSU_ERR_BAD_SEGMENT).empty());
  const auto rel = finish(b, a.req);
  ASSERT_EQ(rel.size(), 1u);
  EXPECT_FALSE(rel[0].fail);  // the failed one was issued after it
  finish(b, all.req);
}

TEST(OrderBook, WithdrawForgetsTheLastRequest) {
  OrderBook b(nullptr);
  Added a = add(b, TSU_REQ_NONE);
  b.withdraw(a.req);
  EXPECT_EQ(b.last_id(), 0u);
  EXPECT_EQ(b.done_below(), 1u);
  EXPECT_EQ(add(b, TSU_REQ_NONE).id, 1u);
}

}  // namespace
