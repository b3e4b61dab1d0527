// The C++ layer of the user-level threads (<tsunagi/ult.hpp>), on every rank
// of a job: typed joins of local threads (non-trivial, move-only and void
// results, exceptions), the mutex under contention from many ULTs and a
// pthread through std::lock_guard / std::unique_lock, the condition variable,
// and typed functions spawned across ranks.  Tests are collective (the
// registrations): every rank runs the same ones in the same order.
#include <gtest/gtest.h>
#include <tsunagi/ult.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

uint32_t g_rank = 0;
uint32_t g_size = 1;

// ---- Typed join of local threads ----------------------------------------------

TEST(UltCxx, JoinReturnsTheCallablesNonTrivialResult) {
  tsu::ult::thread t([] {
    std::vector<std::string> words;
    for (int i = 0; i < 100; ++i) {
      words.push_back("word " + std::to_string(i) + std::string(40, 'x'));  // heap strings
      if (i % 10 == 0) tsu_ult_yield();
    }
    return words;
  });
  static_assert(std::is_same_v<decltype(t), tsu::ult::thread<std::vector<std::string>>>);
  EXPECT_TRUE(t.joinable());
  const std::vector<std::string> words = t.join();
  EXPECT_FALSE(t.joinable());
  ASSERT_EQ(words.size(), 100u);
  EXPECT_EQ(words[0], "word 0" + std::string(40, 'x'));
  EXPECT_EQ(words[99], "word 99" + std::string(40, 'x'));
}

TEST(UltCxx, ThreadsJoinedInsideAThread) {
  // Fork/join from a ULT: the children's joins yield the parent's worker.
  tsu::ult::thread parent([] {
    std::vector<tsu::ult::thread<std::string>> kids;
    for (int i = 0; i < 32; ++i)
      kids.emplace_back([i] {
        tsu_ult_yield();
        return std::string(static_cast<std::size_t>(i), 'a');
      });
    std::string all;
    for (auto& k : kids) all += k.join();
    return all;
  });
  EXPECT_EQ(parent.join().size(), 31u * 32u / 2u);
}

TEST(UltCxx, MoveOnlyAndVoidResults) {
  tsu::ult::thread owned([] { return std::make_unique<std::string>("owned"); });
  const std::unique_ptr<std::string> p = owned.join();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, "owned");

  std::atomic<int> ran{0};
  tsu::ult::thread v([&] { ran.fetch_add(1); });
  static_assert(std::is_same_v<decltype(v), tsu::ult::thread<void>>);
  v.join();
  EXPECT_EQ(ran.load(), 1);
  // A result converted to the declared type.
  tsu::ult::thread<std::string> s([] { return "converted"; });
  EXPECT_EQ(s.join(), "converted");
}

TEST(UltCxx, JoinRethrowsWhatTheCallableThrew) {
  tsu::ult::thread t([]() -> int {
    tsu_ult_yield();
    throw std::runtime_error("thrown in a ULT");
  });
  try {
    t.join();
    ADD_FAILURE() << "join did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "thrown in a ULT");
  }
  EXPECT_FALSE(t.joinable());
  // Joining again is an error of the handle, not a C call on a freed one.
  try {
    t.join();
    ADD_FAILURE() << "a second join did not throw";
  } catch (const tsu::error& e) {
    EXPECT_EQ(e.code(), TSU_ERR_INVALID_ARG);
  }
}

TEST(UltCxx, DestructorJoinsAndDetachLetsItRun) {
  std::atomic<int> done{0};
  {
    tsu::ult::thread t([&] {
      for (int i = 0; i < 10; ++i) tsu_ult_yield();
      done.store(1);
    });
  }  // joined here
  EXPECT_EQ(done.load(), 1);

  std::atomic<int> detached_done{0};
  tsu::ult::thread d([&] {
    tsu_ult_yield();
    detached_done.store(1);
  });
  d.detach();
  EXPECT_FALSE(d.joinable());
  while (detached_done.load() == 0) std::this_thread::yield();
}

TEST(UltCxx, ManyThreadsMovedIntoAVector) {
  std::vector<tsu::ult::thread<std::string>> ts;
  for (int i = 0; i < 500; ++i) ts.emplace_back([i] { return std::to_string(i * 3); });
  int bad = 0;
  for (int i = 0; i < 500; ++i) bad += ts[static_cast<std::size_t>(i)].join() != std::to_string(i * 3);
  EXPECT_EQ(bad, 0);
}

// ---- Mutex and condition variable ---------------------------------------------

TEST(UltCxx, LockGuardUnderContention) {
  constexpr int kThreads = 64, kRounds = 300;
  tsu::ult::mutex mu;
  long counter = 0;               // guarded by mu, deliberately not atomic
  std::atomic<int> inside{0};     // holders at once: must never exceed 1
  std::atomic<int> overlaps{0};
  auto critical = [&] {
    std::lock_guard lock(mu);
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    const long seen = counter;
    tsu_ult_yield();  // hold the lock across a switch: the others queue on it
    counter = seen + 1;
    inside.fetch_sub(1);
  };
  std::vector<tsu::ult::thread<void>> ts;
  for (int i = 0; i < kThreads; ++i)
    ts.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) critical();
    });
  // A plain pthread contends too (it sleeps on the mutex's futex).
  std::thread pthread([&] {
    for (int r = 0; r < kRounds; ++r) critical();
  });
  for (auto& t : ts) t.join();
  pthread.join();
  EXPECT_EQ(counter, static_cast<long>(kThreads + 1) * kRounds);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(UltCxx, UniqueLockTryLockAndConditionVariable) {
  tsu::ult::mutex mu;
  tsu::ult::condition_variable cv;
  {
    std::unique_lock held(mu);
    tsu::ult::thread probe([&] { return std::unique_lock(mu, std::try_to_lock).owns_lock(); });
    EXPECT_FALSE(probe.join());  // held by this pthread
  }
  tsu::ult::thread probe([&] { return std::unique_lock(mu, std::try_to_lock).owns_lock(); });
  EXPECT_TRUE(probe.join());

  // 32 ULTs wait for `go`, then each counts itself.
  bool go = false;
  int arrived = 0, counted = 0;
  std::vector<tsu::ult::thread<void>> waiters;
  for (int i = 0; i < 32; ++i)
    waiters.emplace_back([&] {
      std::unique_lock lock(mu);
      ++arrived;
      cv.notify_all();
      cv.wait(lock, [&] { return go; });
      ++counted;
    });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return arrived == 32; });  // a pthread waiting on ULTs
    go = true;
  }
  cv.notify_all();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(counted, 32);
}

// ---- Typed functions across ranks -----------------------------------------------

struct Query {
  uint64_t x;
  uint32_t from;
};
struct Answer {
  uint64_t square;
  uint32_t from;
  uint32_t runner;
  double half;
  std::array<char, 24> label;
};
static_assert(tsu::ult::remote_argument<Query> && tsu::ult::remote_value<Answer>);
static_assert(tsu::ult::remote_value<void>);
static_assert(!tsu::ult::remote_argument<std::string>);  // not trivially copyable
static_assert(!tsu::ult::remote_argument<std::array<char, TSU_ULT_ARG_MAX + 1>>);
static_assert(tsu::ult::remote_value<std::array<char, TSU_ULT_VALUE_MAX>>);
static_assert(!tsu::ult::remote_value<std::array<char, TSU_ULT_VALUE_MAX + 1>>);

enum : uint32_t { kAnswer = 11, kNote = 12, kSmall = 13 };

Answer answer(const Query& q) {
  Answer a{};
  a.square = q.x * q.x;
  a.from = q.from;
  a.runner = g_rank;
  a.half = static_cast<double>(q.x) / 2;
  std::snprintf(a.label.data(), a.label.size(), "ran on %u", g_rank);
  return a;
}

std::atomic<uint32_t> g_noted{0};
void note(uint32_t) { g_noted.fetch_add(1); }

uint16_t small(Query q) { return static_cast<uint16_t>(q.x); }

TEST(UltCxx, TypedSpawnAcrossRanksReturnsAStruct) {
  const auto fn = tsu::ult::register_remote<answer>(kAnswer);  // collective
  static_assert(std::is_same_v<decltype(fn), const tsu::ult::remote_function<Query, Answer>>);
  EXPECT_EQ(fn.id(), kAnswer);

  // One at a time to each rank: a single thread is never handed to another
  // rank (the balancer asks only for more than TSU_ULT_LB_THRESHOLD).
  for (uint32_t r = 0; r < g_size; ++r) {
    const uint32_t to = (g_rank + 1 + r) % g_size;
    const uint64_t x = 1000u * g_rank + r + 7;
    tsu::ult::remote_thread<Answer> t = fn.spawn(to, Query{x, g_rank});
    const Answer a = t.join();
    EXPECT_EQ(a.square, x * x);
    EXPECT_EQ(a.from, g_rank);
    EXPECT_EQ(a.runner, to);
    EXPECT_EQ(a.half, static_cast<double>(x) / 2);
    EXPECT_EQ(std::string(a.label.data()), "ran on " + std::to_string(to));
  }

  // Many at once, placed by the balancer, joined from a ULT.
  tsu::ult::thread many([&] {
    std::vector<tsu::ult::remote_thread<Answer>> ts;
    for (uint64_t i = 0; i < 200; ++i) ts.push_back(fn.spawn(tsu::ult::any_rank, Query{i, g_rank}));
    int bad = 0;
    for (uint64_t i = 0; i < ts.size(); ++i) {
      const Answer a = ts[i].join();
      bad += a.square != i * i || a.from != g_rank || a.runner >= g_size;
    }
    return bad;
  });
  EXPECT_EQ(many.join(), 0);

  // A void function: joined for its end only.
  const auto noter = tsu::ult::register_remote<note>(kNote);
  for (uint32_t r = 0; r < g_size; ++r) noter.spawn(r, g_rank).join();
  tsu::runtime::barrier();  // every rank's spawns have ended
  EXPECT_EQ(g_noted.load(), g_size);

  // Errors: a bad rank, and an id whose function returns another type.
  try {
    fn.spawn(g_size, Query{1, g_rank});
    ADD_FAILURE() << "spawn to rank " << g_size << " did not throw";
  } catch (const tsu::error& e) {
    EXPECT_EQ(e.code(), TSU_ERR_BAD_RANK);
  }
  tsu::ult::register_remote<small>(kSmall);
  const tsu::ult::remote_function<Query, Answer> wrong(kSmall);
  try {
    wrong.spawn((g_rank + 1) % g_size, Query{5, g_rank}).join();
    ADD_FAILURE() << "a value of the wrong size was accepted";
  } catch (const tsu::error& e) {
    EXPECT_EQ(e.code(), TSU_ERR_INVALID_ARG);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(shuffle, false);  // collective tests: the same order everywhere
  if (tsu_init(nullptr) != TSU_OK || tsu_ult_init(nullptr) != TSU_OK) {
    std::fprintf(stderr, "init failed: %s\n", tsu_last_error());
    return 2;
  }
  tsu_rank(&g_rank);
  tsu_size(&g_size);
  const int failed = RUN_ALL_TESTS();
  if (tsu_ult_finalize() != TSU_OK || tsu_finalize() != TSU_OK) {
    std::fprintf(stderr, "finalize failed: %s\n", tsu_last_error());
    return 3;
  }
  return failed ? 1 : 0;
}
