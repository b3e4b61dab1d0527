// The wait table's pthread sleep (core/wait_table.hpp, sleep_while): a
// sleeper is woken by notify, never misses one that races with its going to
// sleep, and leaves nothing behind that a later notify could touch.  The
// safety timeout is an hour here, so a lost wake-up hangs the test (CTest's
// timeout fails it) instead of hiding behind the timeout.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/wait_table.hpp"

namespace {

using tsu::core::wait_table::notify;
using tsu::core::wait_table::sleep_while;

constexpr uint64_t kHourNs = 3'600'000'000'000ull;

bool below(const void* a) {
  const auto* p = static_cast<const std::pair<const std::atomic<uint64_t>*, uint64_t>*>(a);
  return p->first->load(std::memory_order_seq_cst) < p->second;
}

// Waits until `word` reaches n, sleeping on `key` between checks.
void wait_for(const std::atomic<uint64_t>& word, uint64_t n, const void* key) {
  const std::pair<const std::atomic<uint64_t>*, uint64_t> arg{&word, n};
  while (word.load(std::memory_order_acquire) < n) sleep_while(key, below, &arg, kHourNs);
}

TEST(WaitTable, SleepReturnsAtOnceWhenTheConditionHolds) {
  std::atomic<uint64_t> word{5};
  const std::pair<const std::atomic<uint64_t>*, uint64_t> arg{&word, 5};
  sleep_while(&word, below, &arg, kHourNs);  // would hang an hour if it slept
  notify(&word);                             // nothing queued is left behind
}

TEST(WaitTable, EveryIncrementWakesTheSleeperInLockStep) {
  // Ping-pong: each side waits for the other's count, so every step is a
  // sleep racing with a notify; 20000 steps without a lost wake-up.
  constexpr uint64_t kSteps = 20000;
  std::atomic<uint64_t> ping{0}, pong{0};
  std::thread other([&] {
    for (uint64_t i = 1; i <= kSteps; ++i) {
      wait_for(ping, i, &ping);
      pong.fetch_add(1, std::memory_order_seq_cst);
      notify(&pong);
    }
  });
  for (uint64_t i = 1; i <= kSteps; ++i) {
    ping.fetch_add(1, std::memory_order_seq_cst);
    notify(&ping);
    wait_for(pong, i, &pong);
  }
  other.join();
  EXPECT_EQ(ping.load(), kSteps);
  EXPECT_EQ(pong.load(), kSteps);
}

TEST(WaitTable, ManySleepersOnOneKeyAndOnKeysSharingBuckets) {
  // 64 keys in 64 buckets collide (8 threads on each of 8 keys, adjacent
  // words): a notify must wake every sleeper of its key and none is missed.
  constexpr int kKeys = 8, kPerKey = 8;
  constexpr uint64_t kRounds = 200;
  std::vector<std::atomic<uint64_t>> words(kKeys);
  std::vector<std::thread> sleepers;
  std::atomic<uint64_t> finished{0};
  for (int k = 0; k < kKeys; ++k)
    for (int t = 0; t < kPerKey; ++t)
      sleepers.emplace_back([&, k] {
        for (uint64_t r = 1; r <= kRounds; ++r) wait_for(words[k], r, &words[k]);
        finished.fetch_add(1);
      });
  for (uint64_t r = 1; r <= kRounds; ++r)
    for (int k = 0; k < kKeys; ++k) {
      words[k].fetch_add(1, std::memory_order_seq_cst);
      notify(&words[k]);
    }
  for (auto& t : sleepers) t.join();
  EXPECT_EQ(finished.load(), uint64_t{kKeys * kPerKey});
}

TEST(WaitTable, ASleepThatTimesOutLeavesNothingQueued) {
  // A short timeout with no notify: the sleeper leaves; a notify afterwards
  // (which would touch a queued entry of a returned frame) finds nothing.
  std::atomic<uint64_t> word{0};
  const std::pair<const std::atomic<uint64_t>*, uint64_t> arg{&word, 1};
  for (int i = 0; i < 100; ++i) sleep_while(&word, below, &arg, 10'000);
  notify(&word);
  // A sleeper later on the same key is woken as usual.
  std::thread t([&] { wait_for(word, 1, &word); });
  word.store(1, std::memory_order_seq_cst);
  notify(&word);
  t.join();
}

}  // namespace
