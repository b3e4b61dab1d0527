// tsu_finalize with requests in flight: threads issue thousands of requests
// without ever waiting for them (some callbacks issue follow-up requests), exit,
// and the main thread calls tsu_finalize.  When it returns, every accepted
// request's callback must have run exactly once, with TSU_OK.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "tsunagi/tsunagi.h"

namespace {

constexpr unsigned kThreads = 4;
constexpr std::size_t kPerThread = 10000;
constexpr std::size_t kFollowUps = kThreads * kPerThread;  // at most one per request

struct Record {
  std::atomic<uint32_t> calls{0};
  std::atomic<int32_t> status{1234};
};

std::unique_ptr<Record[]> g_first;   // one per first-generation request
std::unique_ptr<Record[]> g_second;  // one per follow-up request
std::atomic<uint64_t> g_accepted_first{0};
std::atomic<uint64_t> g_accepted_second{0};
std::atomic<uint64_t> g_declined_second{0};
std::atomic<uint64_t> g_next_second{0};
std::atomic<uint64_t> g_callbacks{0};
uint32_t g_rank = 0, g_size = 1;

void second_cb(tsu_status_t st, void* arg) {
  auto* r = static_cast<Record*>(arg);
  r->status.store(st, std::memory_order_relaxed);
  r->calls.fetch_add(1, std::memory_order_relaxed);
  g_callbacks.fetch_add(1, std::memory_order_relaxed);
}

void first_cb(tsu_status_t st, void* arg) {
  auto* r = static_cast<Record*>(arg);
  r->status.store(st, std::memory_order_relaxed);
  r->calls.fetch_add(1, std::memory_order_relaxed);
  g_callbacks.fetch_add(1, std::memory_order_relaxed);
  const auto index = static_cast<std::size_t>(r - g_first.get());
  if (index % 8 != 0) return;
  // A follow-up from inside the callback (callbacks must not block: one try).
  const uint64_t k = g_next_second.fetch_add(1);
  Record* f = &g_second[k];
  uint64_t one = 1;
  const tsu_status_t s =
      tsu_try_atomic(tsu_gaddr((g_rank + 1) % g_size, TSU_SEG_MAIN, 4096 + 64u * g_rank),
                     TSU_AOP_ADD, TSU_TYPE_UINT64, &one, nullptr, nullptr, tsu_cb(second_cb, f));
  if (s == TSU_OK) {
    g_accepted_second.fetch_add(1);
  } else {
    EXPECT_EQ(s, TSU_EAGAIN);
    g_declined_second.fetch_add(1);
  }
}

TEST(Finalize, CompletesEverythingInFlight) {
  ASSERT_EQ(tsu_init(nullptr), TSU_OK) << tsu_last_error();
  ASSERT_EQ(tsu_rank(&g_rank), TSU_OK);
  ASSERT_EQ(tsu_size(&g_size), TSU_OK);
  g_first.reset(new Record[kThreads * kPerThread]);
  g_second.reset(new Record[kFollowUps]);
  const uint32_t next = (g_rank + 1) % g_size;
  void* base = nullptr;
  std::size_t seg_size = 0;
  ASSERT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &seg_size), TSU_OK);
  ASSERT_GE(seg_size, 1u << 20);
  ASSERT_EQ(tsu_barrier(), TSU_OK);

  std::vector<std::thread> threads;
  for (unsigned tid = 0; tid < kThreads; ++tid) {
    threads.emplace_back([tid, next] {
      for (std::size_t i = 0; i < kPerThread; ++i) {
        const std::size_t index = tid * kPerThread + i;
        const tsu_cb_t cb = tsu_cb(first_cb, &g_first[index]);
        for (;;) {
          tsu_status_t st;
          if (i % 2 == 0) {
            st = tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, 65536 + (tid * 1024u + i % 1024) * 64),
                             tsu_laddr(TSU_SEG_MAIN, 8192 + tid * 64u), 64, cb);
          } else {
            uint64_t v = index;
            st = tsu_try_atomic(tsu_gaddr(next, TSU_SEG_MAIN, 4096 + 64u * (g_size + tid)),
                                TSU_AOP_ADD, TSU_TYPE_UINT64, &v, nullptr, nullptr, cb);
          }
          if (st == TSU_OK) {
            g_accepted_first.fetch_add(1);
            break;
          }
          ASSERT_EQ(st, TSU_EAGAIN) << tsu_last_error();
          // Not a wait for completion: only room in the ring.
          tsu_progress();
          sched_yield();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const uint64_t seen_before = g_callbacks.load();
  std::printf("rank %u: %llu of %llu callbacks ran before tsu_finalize\n", g_rank,
              static_cast<unsigned long long>(seen_before),
              static_cast<unsigned long long>(g_accepted_first.load()));

  ASSERT_EQ(tsu_finalize(), TSU_OK) << tsu_last_error();
  EXPECT_EQ(tsu_initialized(), 0);

  // Nothing may run after finalize returned: give a stray callback a chance.
  const uint64_t at_return = g_callbacks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(g_callbacks.load(), at_return) << "a callback ran after tsu_finalize returned";

  EXPECT_EQ(g_accepted_first.load(), uint64_t{kThreads} * kPerThread);
  for (std::size_t i = 0; i < kThreads * kPerThread; ++i) {
    const uint32_t calls = g_first[i].calls.load();
    if (calls != 1 || g_first[i].status.load() != TSU_OK) {
      ADD_FAILURE() << "request " << i << ": callback ran " << calls << " times, status "
                    << g_first[i].status.load();
      break;
    }
  }
  const uint64_t seconds = g_next_second.load();
  EXPECT_EQ(seconds, uint64_t{kThreads} * kPerThread / 8);
  EXPECT_EQ(g_accepted_second.load() + g_declined_second.load(), seconds);
  uint64_t second_calls = 0;
  for (std::size_t k = 0; k < seconds; ++k) {
    second_calls += g_second[k].calls.load();
    if (g_second[k].calls.load() > 1) ADD_FAILURE() << "follow-up " << k << " called back twice";
    if (g_second[k].calls.load() == 1) {
      EXPECT_EQ(g_second[k].status.load(), TSU_OK);
    }
  }
  EXPECT_EQ(second_calls, g_accepted_second.load()) << "follow-up callbacks lost";
  EXPECT_EQ(g_callbacks.load(), g_accepted_first.load() + g_accepted_second.load());
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS() ? 1 : 0;
}
