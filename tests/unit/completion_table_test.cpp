#include "core/completion_table.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using tsu::core::CompletionRecord;
using tsu::core::CompletionTable;
using tsu::core::ThreadContext;

void count_cb(tsu_status_t status, void* arg) {
  auto* hits = static_cast<int*>(arg);
  *hits += (status == TSU_OK) ? 1 : 100;
}

TEST(CompletionTable, AcquireUntilExhausted) {
  CompletionTable table(4);
  ThreadContext tc;
  std::set<uint32_t> ids;
  for (int i = 0; i < 4; ++i) {
    const uint32_t id = table.acquire(tsu_cb_none(), &tc);
    ASSERT_NE(id, UINT32_MAX);
    EXPECT_TRUE(ids.insert(id).second) << "ids must be distinct";
  }
  EXPECT_EQ(table.acquire(tsu_cb_none(), &tc), UINT32_MAX);
  EXPECT_EQ(table.free_count(), 0u);
}

TEST(CompletionTable, FinishedRecordsRunOnceAndAreReused) {
  CompletionTable table(2);
  ThreadContext tc;
  int hits = 0;
  for (int round = 0; round < 1000; ++round) {
    const uint32_t a = table.acquire(tsu_cb(count_cb, &hits), &tc);
    const uint32_t b = table.acquire(tsu_cb(count_cb, &hits), &tc);
    ASSERT_NE(a, UINT32_MAX);
    ASSERT_NE(b, UINT32_MAX);
    table.finish(b, TSU_OK);
    table.finish(a, TSU_ERR_OUT_OF_BOUNDS);
    std::vector<tsu_status_t> statuses;
    EXPECT_EQ(table.run_finished([&](const CompletionRecord& r) {
      statuses.push_back(r.status);
      r.cb.fn(r.status, r.cb.arg);
    }), 2u);
    ASSERT_EQ(statuses.size(), 2u);
    EXPECT_EQ(statuses[0], TSU_OK);
    EXPECT_EQ(statuses[1], TSU_ERR_OUT_OF_BOUNDS);
    EXPECT_EQ(table.free_count(), 2u);
  }
  EXPECT_EQ(hits, 1000 * 101);
}

TEST(CompletionTable, UnfinishedRecordsDoNotRun) {
  CompletionTable table(4);
  ThreadContext tc;
  const uint32_t a = table.acquire(tsu_cb_none(), &tc);
  (void)a;
  EXPECT_EQ(table.run_finished([](const CompletionRecord&) { FAIL(); }), 0u);
  EXPECT_EQ(table.in_use(), 1u);
}

}  // namespace
