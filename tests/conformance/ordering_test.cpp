// Conformance: ordering (tsu_fence, tsu_quiet) on every route.  After a fence
// the calling thread's later requests are refused (TSU_EAGAIN) until its
// earlier ones completed, so a put, fence, get of the same location reads the
// put's data; after tsu_quiet every request of the thread has completed, its
// effects are visible at the target and its callback ran.  Also: blocking
// calls inside a callback are refused.  The target is the next rank (the
// rank itself in a job of one); its memory is read back with tsu_try_get
// unless this process maps it (itself or a node peer).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "mp_util.hpp"

namespace {

using mp::barrier;

constexpr unsigned kThreads = 4;
constexpr uint64_t kRecvOff = 1u << 20;   // per (writer, thread) 8 KiB slots
constexpr uint64_t kSlot = 8192;
constexpr uint64_t kLocalOff = 4u << 20;  // per thread 32 KiB of local buffers
constexpr uint64_t kLocal = 32768;
constexpr uint64_t kWordOff = 6u << 20;   // per (writer, thread) words
constexpr uint64_t kCheckOff = 7u << 20;  // per thread 16 KiB: read-back landing area

uint64_t recv_slot(uint32_t writer, unsigned tid) { return kRecvOff + (writer * kThreads + tid) * kSlot; }
uint64_t local_buf(unsigned tid) { return kLocalOff + tid * kLocal; }
uint64_t word_off(uint32_t writer, unsigned tid) { return kWordOff + (writer * kThreads + tid) * 64u; }

// put, fence, get of the same location (several sizes, fresh data each time):
// the get returns the put's data and is accepted only after the put completed.
TEST(Fence, PutFenceGetReadsThePut) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  std::atomic<uint64_t> eagains{0};
  mp::run_threads(kThreads, [&](unsigned tid) {
    uint8_t* base = mp::main_base();
    const uint64_t src = local_buf(tid), dst = local_buf(tid) + kLocal / 2;
    const tsu_gaddr_t target = tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, tid) + 3);
    for (uint32_t it = 0; it < 60; ++it) {
      const std::size_t len = 1 + (it * 977u) % 8000;
      mp::fill_pattern(base + src, len, me, 0, it * kThreads + tid + 1);
      std::memset(base + dst, 0, len);
      mp::Completion put_done, get_done;
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_put(target, tsu_laddr(TSU_SEG_MAIN, src), len,
                                     tsu_cb(mp::completion_cb, &put_done));
                }),
                TSU_OK);
      ASSERT_EQ(tsu_fence(), TSU_OK);
      uint64_t refused = 0;
      ASSERT_EQ(mp::issue(
                    [&] {
                      return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, dst), target, len,
                                         tsu_cb(mp::completion_cb, &get_done));
                    },
                    &refused),
                TSU_OK);
      // Accepted only once the put had completed (its callback returned).
      EXPECT_EQ(put_done.calls.load(std::memory_order_acquire), 1u) << "iteration " << it;
      mp::wait_until([&] { return get_done.calls.load(std::memory_order_acquire) == 1; }, "get");
      EXPECT_EQ(put_done.status.load(), TSU_OK);
      EXPECT_EQ(get_done.status.load(), TSU_OK);
      EXPECT_EQ(mp::check_pattern(base + dst, len, me, 0, it * kThreads + tid + 1), SIZE_MAX)
          << "iteration " << it << " len " << len << ": the get did not see the put";
      eagains.fetch_add(refused, std::memory_order_relaxed);
      EXPECT_EQ(put_done.calls.load(), 1u);
      EXPECT_EQ(get_done.calls.load(), 1u);
    }
    EXPECT_EQ(tsu_quiet(), TSU_OK);
  });
  // Bypass completes every request to a memory peer inline: a fence never
  // has anything to wait for (requests to other nodes go through the engine).
  if (mp::completes_inline(next)) {
    EXPECT_EQ(eagains.load(), 0u);
  }
  barrier();
}

// Atomic add, fence, load: the load sees every earlier add.
TEST(Fence, AtomicAddFenceLoad) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  mp::run_threads(kThreads, [&](unsigned tid) {
    const tsu_gaddr_t w = tsu_gaddr(next, TSU_SEG_MAIN, word_off(me, tid));
    uint64_t zero = 0;
    tsu_counter_t c;
    tsu_counter_init(&c);
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_atomic(w, TSU_AOP_STORE, TSU_TYPE_UINT64, &zero, nullptr, nullptr,
                                      tsu_counter_cb(&c));
              }),
              TSU_OK);
    ASSERT_EQ(tsu_fence(), TSU_OK);  // the reset lands before the adds
    uint64_t expected_calls = 1, total = 0;
    for (uint64_t it = 1; it <= 50; ++it) {
      const uint64_t k = it % 5 + 1;  // several adds before each fence
      for (uint64_t j = 0; j < k; ++j) {
        uint64_t one = 1;
        ASSERT_EQ(mp::issue([&] {
                    return tsu_try_atomic(w, TSU_AOP_ADD, TSU_TYPE_UINT64, &one, nullptr, nullptr,
                                          tsu_counter_cb(&c));
                  }),
                  TSU_OK);
        ++expected_calls;
      }
      ASSERT_EQ(tsu_fence(), TSU_OK);
      uint64_t seen = 0;
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_atomic(w, TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr, nullptr, &seen,
                                        tsu_counter_cb(&c));
                }),
                TSU_OK);
      // Everything before the fence had completed when the load was accepted.
      EXPECT_GE(tsu_counter_value(&c), expected_calls);
      ++expected_calls;
      EXPECT_EQ(tsu_counter_wait(&c, expected_calls), TSU_OK);
      total += k;
      EXPECT_EQ(seen, total) << "iteration " << it;
    }
  });
  barrier();
}

// Third-party ordering: put to rank B, fence, copy B -> C, fence, get from C.
TEST(Fence, PutCopyGetChain) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t b = (me + 1) % n, c = (me + 2) % n;
  uint8_t* base = mp::main_base();
  const uint64_t src = local_buf(0), dst = local_buf(0) + kLocal / 2;
  // Slots addressed as writer=me, tid=1 (B) and tid=2 (C), unused by others here.
  const tsu_gaddr_t at_b = tsu_gaddr(b, TSU_SEG_MAIN, recv_slot(me, 1));
  const tsu_gaddr_t at_c = tsu_gaddr(c, TSU_SEG_MAIN, recv_slot(me, 2));
  for (uint32_t it = 0; it < 40; ++it) {
    const std::size_t len = 1 + (it * 1237u) % 8000;
    mp::fill_pattern(base + src, len, me, 0, 1000 + it);
    std::memset(base + dst, 0, len);
    tsu_counter_t cnt;
    tsu_counter_init(&cnt);
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_put(at_b, tsu_laddr(TSU_SEG_MAIN, src), len, tsu_counter_cb(&cnt));
              }),
              TSU_OK);
    ASSERT_EQ(tsu_fence(), TSU_OK);
    ASSERT_EQ(mp::issue([&] { return tsu_try_copy(at_c, at_b, len, tsu_counter_cb(&cnt)); }), TSU_OK);
    EXPECT_GE(tsu_counter_value(&cnt), 1u);
    ASSERT_EQ(tsu_fence(), TSU_OK);
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, dst), at_c, len, tsu_counter_cb(&cnt));
              }),
              TSU_OK);
    EXPECT_GE(tsu_counter_value(&cnt), 2u);
    EXPECT_EQ(tsu_counter_wait(&cnt, 3), TSU_OK);
    EXPECT_EQ(mp::check_pattern(base + dst, len, me, 0, 1000 + it), SIZE_MAX) << "iteration " << it;
  }
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  barrier();
}

// Many requests, a fence, then a new request: refused until all earlier ones
// completed (checked at the moment it is accepted).  Another thread is not held
// back by this thread's fence (checked in manual mode, where nothing progresses
// behind the test's back).
TEST(Fence, RefusesUntilEarlierRequestsComplete) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  constexpr std::size_t kMany = 96;
  mp::Tracker earlier(kMany);
  const uint64_t src = local_buf(0);
  for (std::size_t i = 0; i < kMany; ++i)
    ASSERT_EQ(earlier.issue([&](tsu_cb_t cb) {
                return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, 0) + (i % 64) * 64),
                                   tsu_laddr(TSU_SEG_MAIN, src), 64, cb);
              }),
              TSU_OK);
  ASSERT_EQ(tsu_fence(), TSU_OK);
  tsu_counter_t other_done;
  tsu_counter_init(&other_done);
  if (mp::manual_mode()) {
    // Nothing has progressed: another thread's request is still accepted
    // (the fence is per thread).  It does not wait, so nothing progresses.
    std::thread other([&] {
      EXPECT_EQ(tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, 3)),
                            tsu_laddr(TSU_SEG_MAIN, src), 8, tsu_counter_cb(&other_done)),
                TSU_OK)
          << "a fence of another thread held this thread back";
    });
    other.join();
  } else {
    tsu_counter_init(&other_done);
    other_done.completed = 1;
  }
  mp::Completion later;
  uint64_t refused = 0;
  for (;;) {
    const tsu_status_t st = tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, 1)),
                                        tsu_laddr(TSU_SEG_MAIN, src), 8,
                                        tsu_cb(mp::completion_cb, &later));
    if (st == TSU_OK) break;
    ASSERT_EQ(st, TSU_EAGAIN);
    ++refused;
    // A refused request did nothing.
    EXPECT_EQ(later.calls.load(), 0u);
    if (refused > 10'000'000) {
      ADD_FAILURE() << "fence never lifted";
      break;
    }
    tsu_progress();
    sched_yield();
  }
  RecordProperty("refused_after_fence", static_cast<int>(std::min<uint64_t>(refused, 1u << 30)));
  EXPECT_EQ(tsu_counter_wait(&other_done, 1), TSU_OK);
  // Accepted: every earlier request had completed and run its callback.
  EXPECT_EQ(earlier.done(), kMany);
  earlier.expect_all(TSU_OK);
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  EXPECT_EQ(later.calls.load(), 1u);
  EXPECT_EQ(later.status.load(), TSU_OK);
  // With nothing outstanding, a fence refuses nothing.
  ASSERT_EQ(tsu_fence(), TSU_OK);
  tsu_counter_t c;
  tsu_counter_init(&c);
  EXPECT_EQ(tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, 1)),
                        tsu_laddr(TSU_SEG_MAIN, src), 8, tsu_counter_cb(&c)),
            TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
  barrier();
}

// After tsu_quiet, every request of the thread has completed: callbacks ran
// (exactly once) and the data and atomics are visible in the target's memory.
TEST(Quiet, CompletesEverythingOfTheThread) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  for (int round = 0; round < 10; ++round) {
    mp::run_threads(kThreads, [&](unsigned tid) {
      uint8_t* base = mp::main_base();
      const uint64_t src = local_buf(tid);
      const auto salt = static_cast<uint32_t>(round * 100 + static_cast<int>(tid) + 7);
      mp::fill_pattern(base + src, kLocal, me, 0, salt);
      const uint64_t slot = recv_slot(me, tid);
      const tsu_gaddr_t w = tsu_gaddr(next, TSU_SEG_MAIN, word_off(me, tid));
      constexpr std::size_t kPuts = 64, kAdds = 100;
      mp::Tracker t(kPuts + kAdds + 1);
      uint64_t zero = 0;
      ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
                  return tsu_try_atomic(w, TSU_AOP_STORE, TSU_TYPE_UINT64, &zero, nullptr, nullptr, cb);
                }),
                TSU_OK);
      ASSERT_EQ(tsu_quiet(), TSU_OK);  // the reset lands before the adds
      for (std::size_t i = 0; i < kPuts; ++i)  // 64 x 128 B covering the slot
        ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
                    return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, slot + i * 128),
                                       tsu_laddr(TSU_SEG_MAIN, src + i * 128), 128, cb);
                  }),
                  TSU_OK);
      uint64_t three = 3;
      for (std::size_t i = 0; i < kAdds; ++i)
        ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
                    return tsu_try_atomic(w, TSU_AOP_ADD, TSU_TYPE_UINT64, &three, nullptr, nullptr, cb);
                  }),
                  TSU_OK);
      ASSERT_EQ(tsu_quiet(), TSU_OK);
      // No progress call since: everything must already be done.
      EXPECT_EQ(t.done(), t.issued());
      t.expect_all(TSU_OK);
      if (mp::memory_peer(next)) {  // look at the target's memory itself
        const uint8_t* remote = mp::gptr(tsu_gaddr(next, TSU_SEG_MAIN, slot), kPuts * 128);
        ASSERT_NE(remote, nullptr);
        EXPECT_EQ(mp::check_pattern(remote, kPuts * 128, me, 0, salt), SIZE_MAX);
        uint64_t* word = reinterpret_cast<uint64_t*>(mp::gptr(w, 8));
        ASSERT_NE(word, nullptr);
        EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 3 * kAdds);
      } else {  // another node: read it back (a get is served at the target)
        const uint64_t landing = kCheckOff + tid * 16384;
        std::memset(base + landing, 0, kPuts * 128 + 8);
        EXPECT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, landing),
                               tsu_gaddr(next, TSU_SEG_MAIN, slot), kPuts * 128),
                  TSU_OK);
        EXPECT_EQ(mp::check_pattern(base + landing, kPuts * 128, me, 0, salt), SIZE_MAX);
        uint64_t seen = 0;
        tsu_counter_t c;
        tsu_counter_init(&c);
        ASSERT_EQ(mp::issue([&] {
                    return tsu_try_atomic(w, TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr, nullptr,
                                          &seen, tsu_counter_cb(&c));
                  }),
                  TSU_OK);
        EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
        EXPECT_EQ(seen, 3 * kAdds);
      }
      // Nothing outstanding: quiet returns at once.
      EXPECT_EQ(tsu_quiet(), TSU_OK);
    });
    barrier();
  }
}

// Blocking calls are refused inside a completion callback (they could never
// return); non-blocking ones work there.
struct InCallback {
  std::atomic<int> ran{0};
  tsu_status_t quiet = 99, wait = 99, barrier = 99, finalize = 99, progress = 99;
  int initialized = -1;
};
void blocking_in_cb(tsu_status_t, void* arg) {
  auto* r = static_cast<InCallback*>(arg);
  r->quiet = tsu_quiet();
  tsu_counter_t c;
  tsu_counter_init(&c);
  r->wait = tsu_counter_wait(&c, 1);
  r->barrier = tsu_barrier();
  r->finalize = tsu_finalize();
  r->progress = tsu_progress();
  r->initialized = tsu_initialized();
  r->ran.fetch_add(1, std::memory_order_release);
}

TEST(Quiet, BlockingCallsRefusedInCallbacks) {
  const uint32_t me = mp::rank(), n = mp::size();
  InCallback r;
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put(tsu_gaddr((me + 1) % n, TSU_SEG_MAIN, recv_slot(me, 0)),
                                 tsu_laddr(TSU_SEG_MAIN, local_buf(0)), 16,
                                 tsu_cb(blocking_in_cb, &r));
            }),
            TSU_OK);
  mp::wait_until([&] { return r.ran.load(std::memory_order_acquire) == 1; }, "callback");
  EXPECT_EQ(r.quiet, TSU_ERR_UNSUPPORTED);
  EXPECT_EQ(r.wait, TSU_ERR_UNSUPPORTED);
  EXPECT_EQ(r.barrier, TSU_ERR_UNSUPPORTED);
  EXPECT_EQ(r.finalize, TSU_ERR_UNSUPPORTED);
  EXPECT_EQ(r.initialized, 1);
  EXPECT_EQ(r.progress, TSU_OK);
  EXPECT_EQ(tsu_initialized(), 1);
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  EXPECT_EQ(r.ran.load(), 1);
  barrier();
}

}  // namespace
