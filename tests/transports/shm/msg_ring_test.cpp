// The message ring in isolation (private memory, threads as producers):
// exactly-once delivery, FIFO per producer, kFull on a full ring, the asleep
// flag handshake.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "transport/msg_ring.hpp"

using tsu::core::MessageHeader;
using tsu::transport::MsgRing;

namespace {

struct RingMem {
  explicit RingMem(uint32_t slots, uint32_t slot_size)
      : mem(std::aligned_alloc(64, MsgRing::bytes_for(slots, slot_size))),
        ring(MsgRing::format(mem, slots, slot_size)) {}
  ~RingMem() { std::free(mem); }
  void* mem;
  MsgRing ring;
};

TEST(MsgRing, FullRingRefusesAndRecovers) {
  RingMem m(4, 128);
  MessageHeader h{};
  h.payload_len = 64;
  char payload[64] = "hello";
  for (int i = 0; i < 4; ++i) EXPECT_NE(m.ring.try_push(1, h, payload), MsgRing::Push::kFull);
  EXPECT_EQ(m.ring.try_push(1, h, payload), MsgRing::Push::kFull);
  int seen = 0;
  EXPECT_EQ(m.ring.drain(2, [&](uint32_t src, const MessageHeader& hh, const std::byte* p) {
    EXPECT_EQ(src, 1u);
    EXPECT_EQ(hh.payload_len, 64u);
    EXPECT_STREQ(reinterpret_cast<const char*>(p), "hello");
    ++seen;
  }), 2u);
  EXPECT_EQ(seen, 2);
  EXPECT_NE(m.ring.try_push(1, h, payload), MsgRing::Push::kFull);
  EXPECT_EQ(m.ring.drain(10, [](uint32_t, const MessageHeader&, const std::byte*) {}), 3u);
  EXPECT_FALSE(m.ring.has_pending());
  EXPECT_EQ(m.ring.max_payload(), 64u);
}

// Every payload size up to max_payload() arrives intact with its header, and
// a full-size payload does not spill into the next slot (payloads of up to 8
// bytes sit inside the 64-byte header area, larger ones after it).
TEST(MsgRing, PayloadsOfEverySizeStayInTheirSlot) {
  RingMem m(4, 192);
  const std::size_t max = m.ring.max_payload();
  ASSERT_EQ(max, 128u);
  std::vector<unsigned char> out(max);
  for (std::size_t len = 0; len <= max; ++len) {
    for (std::size_t i = 0; i < len; ++i) out[i] = static_cast<unsigned char>(len * 7 + i);
    MessageHeader h{};
    h.handler = 9;
    h.payload_len = static_cast<uint32_t>(len);
    h.args[3] = len;
    ASSERT_EQ(m.ring.try_push(2, h, out.data()), MsgRing::Push::kPushed);
    // A second message behind it: the first one's payload must not touch it.
    MessageHeader after{};
    after.handler = 10;
    after.args[0] = 0xfeedu;
    ASSERT_EQ(m.ring.try_push(3, after, out.data()), MsgRing::Push::kPushed);
    int seen = 0;
    m.ring.drain(2, [&](uint32_t src, const MessageHeader& hh, const std::byte* p) {
      if (seen++ == 0) {
        EXPECT_EQ(src, 2u);
        EXPECT_EQ(hh.handler, 9u);
        EXPECT_EQ(hh.args[3], len);
        ASSERT_EQ(hh.payload_len, len);
        for (std::size_t i = 0; i < len; ++i)
          ASSERT_EQ(static_cast<unsigned char>(p[i]), static_cast<unsigned char>(len * 7 + i));
      } else {
        EXPECT_EQ(src, 3u);
        EXPECT_EQ(hh.handler, 10u);
        EXPECT_EQ(hh.args[0], 0xfeedu);
      }
    });
    ASSERT_EQ(seen, 2) << len;
  }
}

TEST(MsgRing, AsleepFlagReportedOnce) {
  RingMem m(8, 128);
  MessageHeader h{};
  const char none = 0;
  EXPECT_TRUE(m.ring.prepare_sleep());
  EXPECT_EQ(m.ring.try_push(0, h, &none), MsgRing::Push::kPushedAsleep);
  EXPECT_EQ(m.ring.try_push(0, h, &none), MsgRing::Push::kPushed) << "only one producer rings";
  EXPECT_FALSE(m.ring.prepare_sleep()) << "messages are pending";
  m.ring.end_sleep();
  EXPECT_EQ(m.ring.drain(10, [](uint32_t, const MessageHeader&, const std::byte*) {}), 2u);
}

TEST(MsgRing, ManyProducersExactlyOnceInOrder) {
  constexpr int kThreads = 4, kPerThread = 20000;
  RingMem m(16, 128);  // tiny: producers hit kFull often
  std::atomic<bool> go{false};
  std::atomic<uint64_t> fulls{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      while (!go.load()) sched_yield();
      for (uint64_t i = 0; i < kPerThread; ++i) {
        MessageHeader h{};
        h.args[0] = static_cast<uint64_t>(t);
        h.args[1] = i;
        h.payload_len = 8;
        while (m.ring.try_push(static_cast<uint32_t>(t), h, &i) == MsgRing::Push::kFull) {
          fulls.fetch_add(1, std::memory_order_relaxed);
          sched_yield();
        }
      }
    });
  std::vector<uint64_t> next(kThreads, 0);
  uint64_t total = 0;
  go.store(true);
  while (total < uint64_t{kThreads} * kPerThread) {
    const std::size_t n = m.ring.drain(32, [&](uint32_t src, const MessageHeader& h,
                                               const std::byte* p) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      ASSERT_EQ(src, h.args[0]);
      ASSERT_EQ(h.args[1], next[src]) << "FIFO per producer";
      ASSERT_EQ(v, next[src]);
      ++next[src];
    });
    total += n;
    if (!n) sched_yield();
  }
  for (auto& p : producers) p.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], uint64_t{kPerThread});
  EXPECT_FALSE(m.ring.has_pending());
  EXPECT_GT(fulls.load(), 0u) << "the tiny ring exercised back-pressure";
}

}  // namespace
