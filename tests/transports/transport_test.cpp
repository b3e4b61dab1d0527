// Message transports (self + shm, udp across nodes) through the runtime's message routes, below
// the AM layer: every rank's threads send to every rank (itself included);
// each message is delivered exactly once, in order per (sender thread,
// receiver), in progress context; a full ring says TSU_EAGAIN.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "msg_util.hpp"

namespace {

using tsu::core::MessageHeader;

constexpr uint16_t kTestHandler = 60000;  // an id no layer uses
constexpr int kThreads = 3;
constexpr uint64_t kPerThread = 2000;

struct Counts {
  std::vector<std::atomic<uint64_t>> next;  // [src * kThreads + thread]
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> errors{0};
  explicit Counts(uint32_t n) : next(n * kThreads) {}
};

void on_message(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept {
  auto& c = *static_cast<Counts*>(ctx);
  const uint64_t thread = h.args[0], seq = h.args[1];
  auto& next = c.next[src * kThreads + thread];
  bool ok = tsu::runtime::in_progress_context() && next.load() == seq && h.args[2] == src;
  for (uint32_t i = 0; ok && i < h.payload_len; ++i)
    ok = p[i] == static_cast<std::byte>((seq + i) & 0xff);
  if (!ok) c.errors.fetch_add(1);
  next.store(seq + 1);
  c.total.fetch_add(1);
}

TEST(Transport, AllToAllExactlyOnceInOrder) {
  auto* rt = tsu::runtime::g_runtime.load();
  ASSERT_NE(rt, nullptr);
  const uint32_t me = mp::rank(), n = mp::size();
  auto counts = std::make_unique<Counts>(n);
  rt->handlers().set(kTestHandler, on_message, counts.get());
  mp::barrier();  // every rank registered before anyone sends

  for (uint32_t r = 0; r < n; ++r) {
    auto* t = rt->message_route(r);
    ASSERT_NE(t, nullptr);
    ASSERT_GE(t->max_message_payload(), 64u);
  }
  std::atomic<uint64_t> eagains{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      std::vector<std::byte> buf(rt->message_route(me)->max_message_payload());
      for (uint64_t i = 0; i < kPerThread; ++i)
        for (uint32_t dst = 0; dst < n; ++dst) {
          auto* t = rt->message_route(dst);
          MessageHeader h{};
          h.handler = kTestHandler;
          h.args[0] = static_cast<uint64_t>(th);
          h.args[1] = i;
          h.args[2] = me;
          h.payload_len = static_cast<uint32_t>((i * 37) % (i % 100 == 0 ? buf.size() + 1 : 200));
          for (uint32_t k = 0; k < h.payload_len; ++k)
            buf[k] = static_cast<std::byte>((i + k) & 0xff);
          tsu_status_t st;
          while ((st = t->send_message(dst, h, buf.data())) == TSU_EAGAIN) {
            eagains.fetch_add(1);
            tsu_progress();
            sched_yield();
          }
          ASSERT_EQ(st, TSU_OK);
        }
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(mp::wait_until([&] { return counts->total.load() == uint64_t{n} * kThreads * kPerThread; },
                             "all messages"));
  EXPECT_EQ(counts->errors.load(), 0u);
  // A payload larger than a slot is refused, not truncated.
  // (Each route has its own maximum: udp's is larger than a ring slot.)
  const uint32_t next = (me + 1) % n;
  MessageHeader big{};
  big.handler = kTestHandler;
  big.payload_len = static_cast<uint32_t>(rt->message_route(next)->max_message_payload() + 1);
  std::vector<std::byte> huge(big.payload_len);
  EXPECT_EQ(rt->message_route(next)->send_message(next, big, huge.data()), TSU_ERR_INVALID_ARG);
  mp::barrier();  // nobody sends any more
  for (int k = 0; k < 50; ++k) tsu_progress();
  EXPECT_EQ(counts->total.load(), uint64_t{n} * kThreads * kPerThread) << "no duplicates";
  if (std::getenv("TSU_SHM_RING_SLOTS") && n > 1) {
    EXPECT_GT(eagains.load(), 0u) << "a 2-slot ring must push back";
  }
  rt->handlers().set(kTestHandler, nullptr, nullptr);
  mp::barrier();
}

}  // namespace
