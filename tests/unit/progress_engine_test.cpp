// The progress engine on its own: a fake executor and poller stand in for
// the runtime and the transports.  Checks the engine's contract: every
// accepted command is started once, in ring order, its callback runs exactly
// once with the executor's status (now, or after finish() for pending ones);
// a full ring refuses; one thread at a time holds the consumer role;
// callbacks run in progress context; the progress thread sleeps when idle
// and a submit wakes it.
#include "runtime/progress_engine.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/config.hpp"
#include "core/doorbell.hpp"
#include "core/thread_context.hpp"
#include "transport/transport.hpp"

namespace {

using namespace tsu::core;
using namespace tsu::runtime;
using namespace std::chrono_literals;

// Starts commands by their `len` field: len % 3 == 1 fails at once with
// OUT_OF_BOUNDS, len % 3 == 2 stays pending (finished later by the test),
// otherwise completes with TSU_OK.  Records the order and checks that no two
// threads execute at once.
class FakeExecutor final : public CommandExecutor {
 public:
  tsu_status_t execute(const Command& cmd, uint32_t completion_id) noexcept override {
    if (inside_.fetch_add(1) != 0) overlapped_.store(true);
    {
      std::lock_guard lock(mu_);
      order_.push_back(cmd.len);
      if (cmd.len % 3 == 2) pending_.push_back(completion_id);
    }
    inside_.fetch_sub(1);
    if (cmd.len % 3 == 1) return TSU_ERR_OUT_OF_BOUNDS;
    return cmd.len % 3 == 2 ? tsu::core::kStarted : TSU_OK;
  }
  std::size_t continue_pending() noexcept override {
    continued_.fetch_add(1);
    return 0;
  }
  bool may_sleep() noexcept override { return sleep_ok_.load(); }

  std::vector<uint64_t> order() {
    std::lock_guard lock(mu_);
    return order_;
  }
  std::vector<uint32_t> take_pending() {
    std::lock_guard lock(mu_);
    return std::exchange(pending_, {});
  }
  std::atomic<bool> overlapped_{false};
  std::atomic<bool> sleep_ok_{true};
  std::atomic<uint64_t> continued_{0};

 private:
  std::atomic<int> inside_{0};
  std::mutex mu_;
  std::vector<uint64_t> order_;
  std::vector<uint32_t> pending_;
};

class CountingPoller final : public Poller {
 public:
  std::size_t poll() noexcept override {
    polls.fetch_add(1);
    return 0;
  }
  bool idle() const noexcept override { return idle_.load(); }
  std::atomic<uint64_t> polls{0};
  std::atomic<bool> idle_{true};
};

// A transport whose prepare_sleep refuses: with `busy` it says it always
// will (busy_polling, as ofi with TSU_OFI_WAIT=none), else it lets the
// engine sleep.
class RefusingTransport final : public tsu::transport::Transport {
 public:
  const char* name() const noexcept override { return "refusing"; }
  tsu::transport::Parts parts() noexcept override { return {}; }
  std::size_t poll(const tsu::core::MessageHandlerTable&) noexcept override { return 0; }
  bool prepare_sleep() noexcept override {
    asked.fetch_add(1);
    return !busy.load();
  }
  bool busy_polling() const noexcept override { return busy.load(); }
  std::atomic<uint64_t> asked{0};
  std::atomic<bool> busy{true};
};

struct Calls {
  std::atomic<int> n{0};
  std::atomic<int> last{1};
  std::atomic<bool> in_context{true};
};
void record(tsu_status_t st, void* arg) {
  auto* c = static_cast<Calls*>(arg);
  if (!in_progress_context()) c->in_context.store(false);
  c->last.store(st);
  c->n.fetch_add(1);
}

struct EngineFixture {
  explicit EngineFixture(tsu_progress_mode_t mode, uint32_t ring = 64) {
    cfg.ring_size = ring;
    cfg.progress_mode = mode;
    cfg.spin_us = 0;  // sleep at once when idle
    engine = std::make_unique<ProgressEngine>(cfg, exec, Doorbell(&shared, -1));
    engine->add_poller(&poller);
  }
  ~EngineFixture() { engine->stop(); }
  bool submit(uint64_t len, Calls* c) {
    Command cmd{};
    cmd.len = len;
    cmd.cb = tsu_cb(record, c);
    cmd.issuer = &tc;
    tc.issued.fetch_add(1, std::memory_order_relaxed);
    if (engine->submit(cmd)) return true;
    tc.issued.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  Config cfg;
  DoorbellShared shared{};
  FakeExecutor exec;
  CountingPoller poller;
  ThreadContext tc;
  std::unique_ptr<ProgressEngine> engine;
};

template <typename Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

TEST(ProgressEngine, ManualPassStartsInOrderAndRunsEachCallbackOnce) {
  EngineFixture f(TSU_PROGRESS_MANUAL);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  std::vector<Calls> calls(30);
  for (uint64_t i = 0; i < calls.size(); ++i) ASSERT_TRUE(f.submit(i * 3 + (i % 2), &calls[i]));
  EXPECT_EQ(calls[0].n.load(), 0) << "nothing runs before a pass";
  while (f.engine->progress()) {
  }
  const std::vector<uint64_t> order = f.exec.order();
  ASSERT_EQ(order.size(), calls.size());
  for (uint64_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(order[i], i * 3 + (i % 2)) << "started out of ring order";
    EXPECT_EQ(calls[i].n.load(), 1) << "command " << i;
    EXPECT_EQ(calls[i].last.load(), i % 2 ? TSU_ERR_OUT_OF_BOUNDS : TSU_OK) << "command " << i;
    EXPECT_TRUE(calls[i].in_context.load()) << "callback outside progress context";
  }
  EXPECT_EQ(f.tc.outstanding(), 0u);
  EXPECT_GE(f.poller.polls.load(), 1u);
  EXPECT_GE(f.exec.continued_.load(), 1u);
}

TEST(ProgressEngine, PendingCommandsCompleteWhenFinished) {
  EngineFixture f(TSU_PROGRESS_MANUAL);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  Calls a, b;
  ASSERT_TRUE(f.submit(2, &a));
  ASSERT_TRUE(f.submit(5, &b));
  f.engine->progress();
  EXPECT_EQ(a.n.load() + b.n.load(), 0) << "pending commands completed early";
  EXPECT_EQ(f.tc.outstanding(), 2u);
  const std::vector<uint32_t> ids = f.exec.take_pending();
  ASSERT_EQ(ids.size(), 2u);
  // finish() belongs to the consumer role: a pass's executor or poller calls
  // it.  Here the test holds no pass, so it runs it from the poller's place:
  // the records are finished, then the next pass runs their callbacks.
  f.engine->finish(ids[1], TSU_ERR_PEER_LOST);
  f.engine->progress();
  EXPECT_EQ(a.n.load(), 0);
  EXPECT_EQ(b.n.load(), 1);
  EXPECT_EQ(b.last.load(), TSU_ERR_PEER_LOST);
  f.engine->finish(ids[0], TSU_OK);
  f.engine->progress();
  EXPECT_EQ(a.n.load(), 1);
  EXPECT_EQ(a.last.load(), TSU_OK);
  EXPECT_EQ(f.tc.outstanding(), 0u);
}

TEST(ProgressEngine, FullRingRefusesUntilAPassDrainsIt) {
  EngineFixture f(TSU_PROGRESS_MANUAL, 4);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  std::vector<Calls> calls(5);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(f.submit(0, &calls[i])) << i;
  EXPECT_FALSE(f.submit(0, &calls[4])) << "a full ring accepted a command";
  EXPECT_EQ(calls[4].n.load(), 0);
  f.engine->progress();
  EXPECT_TRUE(f.submit(0, &calls[4]));
  f.engine->progress();
  for (auto& c : calls) EXPECT_EQ(c.n.load(), 1);
}

TEST(ProgressEngine, OneConsumerAtATime) {
  EngineFixture f(TSU_PROGRESS_MANUAL, 1024);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  constexpr int kThreads = 4, kPerThread = 2000;
  std::vector<Calls> calls(kThreads);
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  std::mutex submit_mu;  // the fixture's ThreadContext is shared: count under a lock
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      while (!go.load()) sched_yield();
      for (int i = 0; i < kPerThread;) {
        bool ok;
        {
          std::lock_guard lock(submit_mu);
          ok = f.submit(3, &calls[t]);
        }
        if (ok) ++i;
        f.engine->progress();  // every thread competes for the consumer role
      }
    });
  }
  go.store(true);
  for (auto& t : ts) t.join();
  while (f.engine->progress()) {
  }
  for (auto& c : calls) EXPECT_EQ(c.n.load(), kPerThread);
  EXPECT_FALSE(f.exec.overlapped_.load()) << "two threads executed commands at once";
}

TEST(ProgressEngine, ThreadModeSleepsWhenIdleAndASubmitWakesIt) {
  EngineFixture f(TSU_PROGRESS_THREAD);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  ASSERT_TRUE(eventually([&] { return f.engine->stats().sleeps.load() > 0; }))
  << "an idle progress thread never slept";
  // Each round submits to a thread that has gone (back) to sleep: the
  // submit must ring the doorbell (its word changes) and the command
  // complete.  (A submit that happens to find the thread awake after a
  // safety-net timeout rings nothing, so rings are counted over all rounds.)
  const uint32_t word_before = f.shared.word.load();
  for (int round = 0; round < 20; ++round) {
    const uint64_t sleeps = f.engine->stats().sleeps.load();
    Calls c;
    ASSERT_TRUE(f.submit(0, &c));
    ASSERT_TRUE(eventually([&] { return c.n.load() == 1; })) << "round " << round;
    ASSERT_TRUE(eventually([&] { return f.engine->stats().sleeps.load() > sleeps; }));
  }
  EXPECT_NE(f.shared.word.load(), word_before) << "no submit rang the sleeping engine's doorbell";
}

TEST(ProgressEngine, BusyPollerOrExecutorKeepsTheThreadAwake) {
  EngineFixture f(TSU_PROGRESS_THREAD);
  f.poller.idle_.store(false);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.engine->stats().sleeps.load(), 0u) << "slept with poller work pending";
  // Executor busy first, and the poller idle only after two more full passes:
  // a pass that read the executor's old "may sleep" has found the poller
  // still busy by then, so the engine never sees both idle in between.
  f.exec.sleep_ok_.store(false);
  const uint64_t polls = f.poller.polls.load();
  ASSERT_TRUE(eventually([&] { return f.poller.polls.load() >= polls + 2; }));
  f.poller.idle_.store(true);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.engine->stats().sleeps.load(), 0u) << "slept with executor work pending";
  f.exec.sleep_ok_.store(true);
  EXPECT_TRUE(eventually([&] { return f.engine->stats().sleeps.load() > 0; }));
}



// A busy-polling transport keeps the progress thread awake (it never
// sleeps, and comes back to ask again and again: it yields between passes
// rather than blocking), and commands still run; once the transport lets it,
// the idle engine sleeps.
TEST(ProgressEngine, BusyPollingTransportKeepsTheThreadAwake) {
  RefusingTransport t;  // outlives the engine (the fixture stops it)
  EngineFixture f(TSU_PROGRESS_THREAD);
  f.engine->add_transport(&t);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  ASSERT_TRUE(eventually([&] { return t.asked.load() >= 1000; }));
  EXPECT_EQ(f.engine->stats().sleeps.load(), 0u) << "slept with a busy-polling transport";
  Calls c;
  ASSERT_TRUE(f.submit(3, &c));
  ASSERT_TRUE(eventually([&] { return c.n.load() == 1; }));
  EXPECT_EQ(c.last.load(), TSU_OK);
  const uint64_t asked = t.asked.load();
  ASSERT_TRUE(eventually([&] { return t.asked.load() >= asked + 1000; }));
  EXPECT_EQ(f.engine->stats().sleeps.load(), 0u);
  t.busy.store(false);
  EXPECT_TRUE(eventually([&] { return f.engine->stats().sleeps.load() > 0; }));
}

// Thread rings (submit_own): each issuing thread gets its own ring, made on
// its first request, possibly while the engine sleeps; that request must wake
// it, every command must start once, and each thread's commands in its order.
TEST(ProgressEngine, ThreadRingsKeepEachThreadsOrderAndWakeTheSleepingEngine) {
  EngineFixture f(TSU_PROGRESS_THREAD);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 3000;
  // Contexts outlive the engine's use of them (as in the runtime, where they
  // live until finalize): the completer may still be in count_completed()
  // when the test sees the last completion.
  std::vector<std::unique_ptr<ThreadContext>> all_ctx;
  std::vector<std::unique_ptr<std::vector<std::vector<Calls>>>> all_calls;
  // Waves of threads, each started once the engine has gone back to sleep:
  // their first push lands in a ring the sleeping consumer has never seen.
  for (int wave = 0; wave < 3; ++wave) {
    ASSERT_TRUE(eventually([&] { return f.engine->stats().sleeps.load() > 0; }));
    const uint64_t sleeps = f.engine->stats().sleeps.load();
    ASSERT_TRUE(eventually([&] { return f.engine->stats().sleeps.load() > sleeps; }))
        << "the idle engine did not go back to sleep";
    const std::size_t started_before = f.exec.order().size();
    std::vector<ThreadContext*> ctx;
    all_calls.push_back(std::make_unique<std::vector<std::vector<Calls>>>(kThreads));
    std::vector<std::vector<Calls>>& calls = *all_calls.back();
    for (int t = 0; t < kThreads; ++t) {
      all_ctx.push_back(std::make_unique<ThreadContext>());
      ctx.push_back(all_ctx.back().get());
      calls[static_cast<std::size_t>(t)] = std::vector<Calls>(kPerThread);
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ThreadContext& tc = *ctx[static_cast<std::size_t>(t)];
        for (uint64_t i = 0; i < kPerThread; ++i) {
          Command cmd{};
          // len % 3 == 0: completes at once; the value names thread and index.
          cmd.len = 3 * ((static_cast<uint64_t>(wave * kThreads + t) << 20) | i);
          cmd.cb = tsu_cb(record, &calls[static_cast<std::size_t>(t)][i]);
          cmd.issuer = &tc;
          tc.issued.fetch_add(1, std::memory_order_relaxed);
          while (!f.engine->submit_own(tc, cmd)) std::this_thread::yield();  // ring full
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t)
      ASSERT_TRUE(eventually([&] { return ctx[static_cast<std::size_t>(t)]->outstanding() == 0; }))
          << "wave " << wave << " thread " << t << ": requests never completed";
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_NE(ctx[static_cast<std::size_t>(t)]->ring, nullptr) << "no thread ring was made";
      for (uint64_t i = 0; i < kPerThread; ++i)
        ASSERT_EQ(calls[static_cast<std::size_t>(t)][i].n.load(), 1) << "thread " << t << " #" << i;
    }
    const std::vector<uint64_t> order = f.exec.order();
    ASSERT_EQ(order.size() - started_before, kThreads * kPerThread);
    std::vector<int64_t> last(kThreads, -1);
    for (std::size_t k = started_before; k < order.size(); ++k) {
      const uint64_t v = order[k] / 3;
      const int t = static_cast<int>((v >> 20) - static_cast<uint64_t>(wave * kThreads));
      ASSERT_GE(t, 0);
      ASSERT_LT(t, kThreads);
      const auto i = static_cast<int64_t>(v & ((1u << 20) - 1));
      ASSERT_EQ(i, last[static_cast<std::size_t>(t)] + 1) << "thread " << t << " started out of order";
      last[static_cast<std::size_t>(t)] = i;
    }
  }
  EXPECT_FALSE(f.exec.overlapped_.load());
  f.engine->stop();
}

// More issuing threads than the engine gives rings to: the rest share the
// common ring, and every request still completes.
TEST(ProgressEngine, ThreadsBeyondTheRingLimitUseTheSharedRing) {
  EngineFixture f(TSU_PROGRESS_MANUAL);
  std::string error;
  ASSERT_EQ(f.engine->start(error), TSU_OK) << error;
  constexpr int kThreads = 200;  // above ProgressEngine's per-engine ring limit
  std::vector<std::unique_ptr<ThreadContext>> ctx;
  std::vector<Calls> calls(kThreads);
  int with_ring = 0;
  for (int t = 0; t < kThreads; ++t) {
    ctx.push_back(std::make_unique<ThreadContext>());
    ThreadContext& tc = *ctx.back();
    Command cmd{};
    cmd.len = 3 * static_cast<uint64_t>(t);
    cmd.cb = tsu_cb(record, &calls[static_cast<std::size_t>(t)]);
    cmd.issuer = &tc;
    tc.issued.fetch_add(1, std::memory_order_relaxed);
    ASSERT_TRUE(f.engine->submit_own(tc, cmd)) << t;
    with_ring += tc.ring != nullptr;
    while (f.engine->progress()) {
    }
  }
  f.engine->stop();
  EXPECT_GT(with_ring, 0);
  EXPECT_LT(with_ring, kThreads) << "every thread got a ring: the limit is not kept";
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(calls[static_cast<std::size_t>(t)].n.load(), 1) << t;
    EXPECT_EQ(ctx[static_cast<std::size_t>(t)]->outstanding(), 0u) << t;
  }
}

// A command packed for a thread ring comes back as it went in.
TEST(ProgressEngine, RingCommandRoundTrip) {
  ThreadContext tc;
  Command copy{};
  copy.dst = tsu_gaddr(3, 7, 1ull << 40);
  copy.src = tsu_gaddr(1, 2, 12345);
  copy.len = (1ull << 33) + 5;
  copy.cb = tsu_cb(record, &tc);
  copy.kind = CommandKind::kCopy;
  Command back = unpack(ring_tag(copy), pack(copy), &tc);
  EXPECT_EQ(back.kind, CommandKind::kCopy);
  EXPECT_EQ(back.dst.rank, 3u);
  EXPECT_EQ(back.dst.seg, 7u);
  EXPECT_EQ(back.dst.offset, 1ull << 40);
  EXPECT_EQ(back.src.rank, 1u);
  EXPECT_EQ(back.src.seg, 2u);
  EXPECT_EQ(back.src.offset, 12345u);
  EXPECT_EQ(back.len, (1ull << 33) + 5);
  EXPECT_EQ(back.cb.fn, &record);
  EXPECT_EQ(back.cb.arg, &tc);
  EXPECT_EQ(back.issuer, &tc);

  uint64_t result = 0;
  Command atomic{};
  atomic.dst = tsu_gaddr(2, 0, 64);
  atomic.operand = ~0ull;
  atomic.compare = 0x8000000000000001ull;
  atomic.result = &result;
  atomic.kind = CommandKind::kAtomic;
  atomic.aop = static_cast<uint8_t>(TSU_AOP_CAS);
  atomic.atype = static_cast<uint8_t>(TSU_TYPE_INT32);
  back = unpack(ring_tag(atomic), pack(atomic), nullptr);
  EXPECT_EQ(back.kind, CommandKind::kAtomic);
  EXPECT_EQ(back.aop, static_cast<uint8_t>(TSU_AOP_CAS));
  EXPECT_EQ(back.atype, static_cast<uint8_t>(TSU_TYPE_INT32));
  EXPECT_EQ(back.dst.offset, 64u);
  EXPECT_EQ(back.operand, ~0ull);
  EXPECT_EQ(back.compare, 0x8000000000000001ull);
  EXPECT_EQ(back.result, &result);
  EXPECT_EQ(back.len, 0u);
}

}  // namespace
