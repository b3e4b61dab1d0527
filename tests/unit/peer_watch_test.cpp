// PeerWatches (transport/peer_watch.hpp): counted watches from any thread,
// and a poller that learns of every count crossing zero.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "transport/peer_watch.hpp"

namespace {

using tsu::transport::PeerWatches;

// The poller's view: which ranks it treats as watched (what ofi keeps in
// its watching_ list).
struct View {
  std::vector<bool> watched;
  uint32_t changes = 0;
  explicit View(uint32_t n) : watched(n, false) {}
  void drain(PeerWatches& w) {
    w.drain([&](uint32_t r, bool now) {
      ++changes;
      watched[r] = now;
    });
  }
};

TEST(PeerWatches, CountsWatchesAndReportsOnlyZeroCrossings) {
  PeerWatches w(8);
  View v(8);
  EXPECT_FALSE(w.changed());
  w.watch(3);
  w.watch(3);  // a second wait on the same rank: no new change
  ASSERT_TRUE(w.changed());
  v.drain(w);
  EXPECT_FALSE(w.changed());
  EXPECT_EQ(v.changes, 1u);
  EXPECT_TRUE(v.watched[3]);
  w.unwatch(3);  // one wait still open
  EXPECT_FALSE(w.changed());
  EXPECT_TRUE(w.watched(3));
  w.unwatch(3);
  ASSERT_TRUE(w.changed());
  v.drain(w);
  EXPECT_FALSE(v.watched[3]);
  EXPECT_FALSE(w.watched(3));
}

TEST(PeerWatches, UnpairedUnwatchAndOutOfRangeRanksAreIgnored) {
  PeerWatches w(4);
  w.unwatch(1);
  w.watch(4);
  w.unwatch(4);
  EXPECT_FALSE(w.changed());
  w.watch(1);
  EXPECT_TRUE(w.watched(1));
  View v(4);
  v.drain(w);
  EXPECT_TRUE(v.watched[1]);
}

TEST(PeerWatches, EndedAndRestartedBeforeTheDrainIsStillWatched) {
  PeerWatches w(4);
  View v(4);
  w.watch(2);
  v.drain(w);
  w.unwatch(2);
  w.watch(2);
  v.drain(w);  // reads the count now: watched
  EXPECT_TRUE(v.watched[2]);
  w.unwatch(2);
  v.drain(w);
  EXPECT_FALSE(v.watched[2]);
}

TEST(PeerWatches, ManyRanksOnTheStackAtOnce) {
  constexpr uint32_t kRanks = 1000;
  PeerWatches w(kRanks);
  View v(kRanks);
  for (uint32_t r = 0; r < kRanks; r += 3) w.watch(r);
  v.drain(w);
  for (uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(v.watched[r], r % 3 == 0) << r;
  for (uint32_t r = 0; r < kRanks; r += 3) w.unwatch(r);
  v.drain(w);
  for (uint32_t r = 0; r < kRanks; ++r) EXPECT_FALSE(v.watched[r]) << r;
}

// Threads watch and unwatch (each pair balanced) while a poller drains;
// once they stop, one last drain leaves the poller's view equal to the
// counts (no crossing was missed), and every count is back to zero.
TEST(PeerWatches, ConcurrentWatchersAndPollerAgreeAtTheEnd) {
  constexpr uint32_t kRanks = 16;
  constexpr int kThreads = 4, kRounds = 20000;
  constexpr uint32_t kHeld = 0;
  PeerWatches w(kRanks);
  View v(kRanks);
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 1);
      for (int i = 0; i < kRounds; ++i) {
        const uint32_t r = rng() % kRanks;
        w.watch(r);
        if (rng() % 4 == 0) std::this_thread::yield();
        w.unwatch(r);
      }
      running.fetch_sub(1);
    });
  // One watch held throughout by the test: must never read as unwatched
  // after the first drain that saw it.
  w.watch(kHeld);
  bool saw_held = false;
  while (running.load() > 0) {
    v.drain(w);
    if (saw_held) {
      EXPECT_TRUE(v.watched[kHeld]);
    }
    saw_held = saw_held || v.watched[kHeld];
  }
  for (auto& th : threads) th.join();
  v.drain(w);
  for (uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(v.watched[r], r == kHeld) << r;
  w.unwatch(kHeld);
  v.drain(w);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_FALSE(v.watched[r]) << r;
    EXPECT_FALSE(w.watched(r)) << r;
  }
  EXPECT_FALSE(w.changed());
}

}  // namespace
