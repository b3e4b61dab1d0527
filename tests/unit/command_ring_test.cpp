#include "core/command_ring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/doorbell.hpp"
#include "util/clock.hpp"

namespace {

using tsu::core::CommandRing;
using tsu::core::Doorbell;
using tsu::core::DoorbellShared;
using tsu::core::PushResult;

// The engine's sleep protocol (doorbell.hpp) in miniature.
template <typename Ring>
void sleep_once(Ring& ring, Doorbell& bell, const std::atomic<bool>* stop = nullptr) {
  if (!ring.prepare_sleep()) return;
  const uint32_t seen = bell.value();
  if (!ring.has_claimed() && !(stop && stop->load(std::memory_order_seq_cst)))
    bell.wait(seen, 5'000'000'000ull);
  ring.end_sleep();
}

template <typename Ring, typename T>
bool push(Ring& ring, Doorbell& bell, const T& v) {
  const PushResult r = ring.try_push(v);
  if (r == PushResult::kPushedConsumerAsleep) bell.ring();
  return r != PushResult::kFull;
}

struct Item {
  uint32_t producer;
  uint32_t seq;
};

TEST(CommandRing, CapacityIsRoundedToPowerOfTwo) {
  EXPECT_EQ(CommandRing<Item>(5).capacity(), 8u);
  EXPECT_EQ(CommandRing<Item>(1).capacity(), 2u);
  EXPECT_EQ(CommandRing<Item>(1024).capacity(), 1024u);
}

TEST(CommandRing, FifoAndFullAndEmpty) {
  CommandRing<Item> ring(4);
  Item out[8];
  EXPECT_EQ(ring.pop_batch(out, 8), 0u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(ring.try_push({0, i}), PushResult::kPushed);
  EXPECT_EQ(ring.try_push({0, 99}), PushResult::kFull) << "a full ring must refuse, not block";
  ASSERT_EQ(ring.pop_batch(out, 2), 2u);
  EXPECT_EQ(out[0].seq, 0u);
  EXPECT_EQ(out[1].seq, 1u);
  EXPECT_EQ(ring.try_push({0, 4}), PushResult::kPushed);
  EXPECT_EQ(ring.try_push({0, 5}), PushResult::kPushed);
  EXPECT_EQ(ring.try_push({0, 6}), PushResult::kFull);
  ASSERT_EQ(ring.pop_batch(out, 8), 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(out[i].seq, i + 2);
  EXPECT_FALSE(ring.has_ready());
}

TEST(CommandRing, WrapsManyTimes) {
  CommandRing<Item> ring(2);
  Item out[2];
  for (uint32_t i = 0; i < 100000; ++i) {
    ASSERT_EQ(ring.try_push({0, i}), PushResult::kPushed);
    ASSERT_EQ(ring.pop_batch(out, 2), 1u);
    ASSERT_EQ(out[0].seq, i);
  }
}

TEST(CommandRing, WaitingBitReportsTheSleeperOnce) {
  CommandRing<Item> ring(8);
  ASSERT_EQ(ring.try_push({0, 1}), PushResult::kPushed);
  EXPECT_FALSE(ring.prepare_sleep()) << "must not sleep with entries queued";
  Item out[8];
  ASSERT_EQ(ring.pop_batch(out, 8), 1u);
  ASSERT_TRUE(ring.prepare_sleep());
  EXPECT_EQ(ring.try_push({0, 2}), PushResult::kPushedConsumerAsleep);
  EXPECT_EQ(ring.try_push({0, 3}), PushResult::kPushed) << "only the first push pays the wake-up";
  ASSERT_EQ(ring.pop_batch(out, 8), 2u);
  ASSERT_TRUE(ring.prepare_sleep());
  ring.end_sleep();
  EXPECT_EQ(ring.try_push({0, 4}), PushResult::kPushed) << "an awake consumer is not reported";
}

TEST(CommandRing, SleeperIsWokenByPush) {
  CommandRing<Item> ring(8);
  DoorbellShared shared{};
  Doorbell bell(&shared, -1);
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    push(ring, bell, Item{0, 2});
  });
  const uint64_t t0 = tsu::util::now_ns();
  while (!ring.has_ready()) sleep_once(ring, bell);
  EXPECT_LT(tsu::util::now_ns() - t0, 4'000'000'000ull) << "the push must wake the sleeper";
  producer.join();
  Item out[8];
  EXPECT_EQ(ring.pop_batch(out, 8), 1u);
}

TEST(CommandRing, StopFlagAndRingWakeSleeper) {
  CommandRing<Item> ring(8);
  DoorbellShared shared{};
  Doorbell bell(&shared, -1);
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    while (!stop.load(std::memory_order_seq_cst)) sleep_once(ring, bell, &stop);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t t0 = tsu::util::now_ns();
  stop.store(true, std::memory_order_seq_cst);
  bell.ring();
  consumer.join();
  EXPECT_LT(tsu::util::now_ns() - t0, 4'000'000'000ull);
}

// Many producers, one consumer that sleeps when idle: every item arrives
// exactly once and each producer's items arrive in order.  Run under TSan.
TEST(CommandRing, ManyProducersStress) {
  constexpr uint32_t kProducers = 6;
  constexpr uint32_t kPerProducer = 40000;
  CommandRing<Item> ring(64);
  DoorbellShared shared{};
  Doorbell bell(&shared, -1);
  std::atomic<uint32_t> eagain{0};
  std::vector<std::thread> producers;
  for (uint32_t p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint32_t i = 0; i < kPerProducer;) {
        if (push(ring, bell, Item{p, i})) {
          ++i;
        } else {
          eagain.fetch_add(1, std::memory_order_relaxed);
          std::this_thread::yield();
        }
      }
    });
  }
  std::vector<uint32_t> next(kProducers, 0);
  uint64_t received = 0;
  Item batch[16];
  while (received < uint64_t{kProducers} * kPerProducer) {
    const std::size_t n = ring.pop_batch(batch, 16);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_LT(batch[i].producer, kProducers);
      ASSERT_EQ(batch[i].seq, next[batch[i].producer]) << "per-producer order broken";
      ++next[batch[i].producer];
    }
    received += n;
    if (n == 0) sleep_once(ring, bell);
  }
  for (auto& t : producers) t.join();
  for (uint32_t p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], kPerProducer);
  EXPECT_EQ(ring.pop_batch(batch, 16), 0u);
}

}  // namespace
