// Conformance: TSU_EAGAIN on every route, run with a two-slot command ring
// (TSU_RING_SIZE=2, set for every route by tests/conformance/CMakeLists.txt):
// requests are refused when the ring is full, a refused request does nothing
// and never calls back, and after progress the same request can be issued
// again; nothing is lost or duplicated.  Requests that complete inline
// (bypass to the rank itself or a node peer) never meet the ring; those to
// other nodes, or with TSU_BYPASS=0, do.  Targets are checked through a
// pointer where this process maps them, with tsu_try_get / atomics otherwise,
// and by their owner in its own memory after a barrier.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "mp_util.hpp"

namespace {

using mp::barrier;

constexpr unsigned kThreads = 4;
constexpr std::size_t kCount = 3000;        // requests per thread and kind
constexpr uint64_t kSrcOff = 0;             // 64 KiB pattern of the owner
constexpr uint64_t kSrcLen = 64 * 1024;
constexpr uint64_t kPutOff = 128 * 1024;    // [writer][thread][i] 8 B each
constexpr uint64_t kGetOff = 1024 * 1024;   // [thread][i] 8 B each (local)
constexpr uint64_t kWordOff = 2048 * 1024;  // [writer][thread] words
constexpr uint64_t kMiscOff = 3072 * 1024;
constexpr uint64_t kPutSrcOff = kMiscOff + 64 * 1024;  // [thread][i] 8 B each: my put sources
constexpr uint64_t kLandOff = kMiscOff + 512 * 1024;   // read-back landing area

uint64_t put_off(uint32_t writer, unsigned tid, std::size_t i) {
  return kPutOff + ((writer * kThreads + tid) * kCount + i) * 8;
}

class Eagain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mp::fill_pattern(mp::main_base() + kSrcOff, kSrcLen, mp::rank(), 0, 5);
    std::memset(mp::main_base() + kPutOff, 0, kGetOff - kPutOff);
    std::memset(mp::main_base() + kWordOff, 0, 4096);
    mp::barrier();
  }
};

// Manual progress: nothing runs behind our back, so a 2-slot ring refuses the
// third request until tsu_progress().  The target is one reached through the
// engine: the next rank with TSU_BYPASS=0, else a rank on another node.
TEST_F(Eagain, ThirdRequestRefusedUntilProgress) {
  if (!mp::manual_mode()) GTEST_SKIP() << "needs TSU_PROGRESS=manual";
  const uint32_t me = mp::rank(), n = mp::size();
  uint32_t next = n;
  for (uint32_t k = 1; k <= n && next == n; ++k)
    if (mp::through_engine((me + k) % n)) next = (me + k) % n;
  // Every rank takes part in the barriers below, with or without a target.
  const bool have_target = next < n;
  const bool mapped = have_target && mp::memory_peer(next);
  const uint64_t slot = kMiscOff + 4096 + 64u * me;    // my slot at the target
  const uint64_t word_off = kMiscOff + 8192 + 64u * me;
  // Every rank prepares the slots aimed at it (by any writer).
  std::memset(mp::main_base() + kMiscOff + 4096, 0xCC, 64u * n);
  for (uint32_t w = 0; w < n; ++w) {
    uint64_t hundred = 100;
    std::memcpy(mp::main_base() + kMiscOff + 8192 + 64u * w, &hundred, 8);
  }
  barrier();
  if (have_target) {
    uint8_t* local = mp::main_base() + kMiscOff;
    mp::fill_pattern(local, 24, me, 0, 77);
    uint8_t* remote = mapped ? mp::gptr(tsu_gaddr(next, TSU_SEG_MAIN, slot), 24) : nullptr;
    // The target's 24 bytes as they are now (read back when not mapped).
    auto target_bytes = [&]() -> const uint8_t* {
      if (mapped) return remote;
      uint8_t* land = mp::main_base() + kLandOff;
      std::memset(land, 0, 24);
      EXPECT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, kLandOff), tsu_gaddr(next, TSU_SEG_MAIN, slot), 24),
                TSU_OK);
      return land;
    };
    mp::Completion c[3];
    auto put = [&](int i) {
      return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, slot + 8u * static_cast<unsigned>(i)),
                         tsu_laddr(TSU_SEG_MAIN, kMiscOff + 8u * static_cast<unsigned>(i)), 8,
                         tsu_cb(mp::completion_cb, &c[i]));
    };
    ASSERT_EQ(put(0), TSU_OK);
    ASSERT_EQ(put(1), TSU_OK);
    EXPECT_EQ(put(2), TSU_EAGAIN) << "a full 2-slot ring accepted a third request";
    EXPECT_EQ(put(2), TSU_EAGAIN);
    // Nothing has run yet (visible only where the target is mapped: reading it
    // back from another node would itself drive progress).
    if (mapped) {
      EXPECT_EQ(mp::check_fill(remote, 24, 0xCC), SIZE_MAX);
    }
    for (auto& x : c) {
      EXPECT_EQ(x.calls.load(), 0u);
    }
    // Progress runs the two accepted requests only.
    mp::wait_until([&] { return c[0].calls.load() == 1 && c[1].calls.load() == 1; }, "first two");
    EXPECT_EQ(c[2].calls.load(), 0u) << "a refused request called back";
    {
      const uint8_t* now = target_bytes();
      EXPECT_EQ(mp::check_pattern(now, 16, me, 0, 77), SIZE_MAX);
      EXPECT_EQ(mp::check_fill(now + 16, 8, 0xCC), SIZE_MAX) << "a refused put wrote";
    }
    EXPECT_EQ(c[2].calls.load(), 0u) << "a refused request called back";
    // Retried, it is accepted and runs once.
    ASSERT_EQ(mp::issue([&] { return put(2); }), TSU_OK);
    EXPECT_EQ(tsu_quiet(), TSU_OK);
    for (auto& x : c) {
      EXPECT_EQ(x.calls.load(), 1u);
      EXPECT_EQ(x.status.load(), TSU_OK);
    }
    EXPECT_EQ(mp::check_pattern(target_bytes(), 24, me, 0, 77), SIZE_MAX);

    // The same for atomics: a refused fetch-add neither adds nor writes its result.
    const tsu_gaddr_t w = tsu_gaddr(next, TSU_SEG_MAIN, word_off);
    auto word_now = [&] {
      if (mapped) return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(mp::gptr(w, 8))).load();
      uint64_t v = 0;
      tsu_counter_t lc;
      tsu_counter_init(&lc);
      EXPECT_EQ(mp::issue([&] {
                  return tsu_try_atomic(w, TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr, nullptr, &v,
                                        tsu_counter_cb(&lc));
                }),
                TSU_OK);
      EXPECT_EQ(tsu_counter_wait(&lc, 1), TSU_OK);
      return v;
    };
    EXPECT_EQ(word_now(), 100u);
    uint64_t res[3] = {7, 7, 7};
    uint64_t one = 1;
    mp::Completion a[3];
    auto fadd = [&](int i) {
      return tsu_try_atomic(w, TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &one, nullptr, &res[i],
                            tsu_cb(mp::completion_cb, &a[i]));
    };
    ASSERT_EQ(fadd(0), TSU_OK);
    ASSERT_EQ(fadd(1), TSU_OK);
    EXPECT_EQ(fadd(2), TSU_EAGAIN);
    mp::wait_until([&] { return a[0].calls.load() == 1 && a[1].calls.load() == 1; }, "two atomics");
    EXPECT_EQ(word_now(), 102u) << "a refused atomic was applied";
    EXPECT_EQ(res[2], 7u) << "a refused atomic wrote its result";
    EXPECT_EQ(a[2].calls.load(), 0u);
    ASSERT_EQ(mp::issue([&] { return fadd(2); }), TSU_OK);
    EXPECT_EQ(tsu_quiet(), TSU_OK);
    EXPECT_EQ(word_now(), 103u);
    uint64_t sorted[3] = {res[0], res[1], res[2]};
    std::sort(sorted, sorted + 3);
    EXPECT_EQ(sorted[0], 100u);
    EXPECT_EQ(sorted[1], 101u);
    EXPECT_EQ(sorted[2], 102u);
  }
  barrier();
  // The owner's view: each writer that aimed at me left exactly its 24 bytes
  // and three adds; slots of writers that did not stay untouched.
  const uint8_t* base = mp::main_base();
  for (uint32_t w = 0; w < n; ++w) {
    uint32_t wt = n;
    for (uint32_t k = 1; k <= n && wt == n; ++k) {
      const uint32_t t = (w + k) % n;
      const bool inline_route = !mp::engine_mode() && mp::node_of(t) == mp::node_of(w);
      if (!inline_route) wt = t;
    }
    const uint8_t* s = base + kMiscOff + 4096 + 64u * w;
    uint64_t v;
    std::memcpy(&v, base + kMiscOff + 8192 + 64u * w, 8);
    if (wt == me) {
      EXPECT_EQ(mp::check_pattern(s, 24, w, 0, 77), SIZE_MAX) << "puts of rank " << w;
      EXPECT_EQ(mp::check_fill(s + 24, 40, 0xCC), SIZE_MAX) << "past the puts of rank " << w;
      EXPECT_EQ(v, 103u) << "atomics of rank " << w;
    } else {
      EXPECT_EQ(mp::check_fill(s, 64, 0xCC), SIZE_MAX) << "slot of rank " << w;
      EXPECT_EQ(v, 100u);
    }
  }
  barrier();
  if (!have_target) GTEST_SKIP() << "no rank is reached through the engine (all complete inline)";
}

// Four threads hammer a tiny ring with puts, gets and fetch-adds, retrying on
// TSU_EAGAIN: every accepted request calls back exactly once, every byte lands,
// the fetch-add results are exactly 0..N-1.
TEST_F(Eagain, StressNothingLostOrDuplicated) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  std::atomic<uint64_t> eagains{0};
  mp::run_threads(kThreads, [&](unsigned tid) {
    uint8_t* base = mp::main_base();
    // Local source of my puts: 8 B per request, pattern of (me, tid).
    std::vector<uint8_t> expect_put(kCount * 8);
    mp::fill_pattern(expect_put.data(), expect_put.size(), me, 0, 100 + tid);
    const uint64_t src_off = kPutSrcOff + tid * kCount * 8;
    std::memcpy(base + src_off, expect_put.data(), expect_put.size());
    std::memset(base + kGetOff + tid * kCount * 8, 0, kCount * 8);
    const tsu_gaddr_t w = tsu_gaddr(next, TSU_SEG_MAIN, kWordOff + 64u * (me * kThreads + tid));
    std::vector<uint64_t> results(kCount, ~uint64_t{0});
    mp::Tracker tracker(3 * kCount);
    uint64_t refused = 0;
    const uint64_t one = 1;
    for (std::size_t i = 0; i < kCount; ++i) {
      // put: my source slot -> my slot (writer me) in next's put area
      EXPECT_EQ(tracker.issue([&](tsu_cb_t cb) {
                  return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, put_off(me, tid, i)),
                                     tsu_laddr(TSU_SEG_MAIN, src_off + i * 8), 8, cb);
                }, &refused),
                TSU_OK);
      // get: 8 B of next's pattern area
      const uint64_t src = (i * 8 + tid * 8 + 3) % (kSrcLen - 8);
      EXPECT_EQ(tracker.issue([&](tsu_cb_t cb) {
                  return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kGetOff + (tid * kCount + i) * 8),
                                     tsu_gaddr(next, TSU_SEG_MAIN, kSrcOff + src), 8, cb);
                }, &refused),
                TSU_OK);
      EXPECT_EQ(tracker.issue([&](tsu_cb_t cb) {
                  return tsu_try_atomic(w, TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &one, nullptr,
                                        &results[i], cb);
                }, &refused),
                TSU_OK);
    }
    tracker.wait_all();
    tracker.expect_all(TSU_OK);
    eagains.fetch_add(refused);
    // Gets brought next's pattern.
    for (std::size_t i = 0; i < kCount; ++i) {
      const uint64_t src = (i * 8 + tid * 8 + 3) % (kSrcLen - 8);
      if (mp::check_pattern(base + kGetOff + (tid * kCount + i) * 8, 8, next, src, 5) != SIZE_MAX) {
        ADD_FAILURE() << "get " << i << " of thread " << tid << " brought wrong data";
        break;
      }
    }
    // Fetch-adds: a permutation of 0..kCount-1.
    std::sort(results.begin(), results.end());
    for (std::size_t i = 0; i < kCount; ++i)
      if (results[i] != i) {
        ADD_FAILURE() << "fetch-add results are not 0..N-1 (position " << i << ": " << results[i] << ")";
        break;
      }
  });
  barrier();  // every rank's requests into my memory have completed
  // The owner checks what its writer (the previous rank) left: every put
  // landed, the words hold kCount, the sentinels (0) around them are intact.
  {
    const uint32_t writer = (me + n - 1) % n;
    const uint8_t* base = mp::main_base();
    for (unsigned tid = 0; tid < kThreads; ++tid) {
      std::vector<uint8_t> expect_put(kCount * 8);
      mp::fill_pattern(expect_put.data(), expect_put.size(), writer, 0, 100 + tid);
      EXPECT_EQ(std::memcmp(base + put_off(writer, tid, 0), expect_put.data(), kCount * 8), 0)
          << "puts of rank " << writer << " thread " << tid;
      const uint64_t word = kWordOff + 64u * (writer * kThreads + tid);
      uint64_t v;
      std::memcpy(&v, base + word, 8);
      EXPECT_EQ(v, kCount) << "fetch-adds of rank " << writer << " thread " << tid;
      EXPECT_EQ(mp::check_fill(base + word + 8, 56, 0), SIZE_MAX);
    }
    // Slots of other writers stay zero.
    for (uint32_t w = 0; w < n; ++w) {
      if (w == writer) continue;
      EXPECT_EQ(mp::check_fill(base + put_off(w, 0, 0), kThreads * kCount * 8, 0), SIZE_MAX)
          << "put area of rank " << w;
    }
  }
  RecordProperty("eagains", static_cast<int>(std::min<uint64_t>(eagains.load(), 1u << 30)));
  std::printf("rank %u: %llu TSU_EAGAIN refusals\n", me,
              static_cast<unsigned long long>(eagains.load()));
  // With manual progress nobody drains the ring before a refusal: it must
  // happen wherever the requests go through the engine.
  if (mp::manual_mode() && mp::through_engine(next)) {
    EXPECT_GT(eagains.load(), 0u);
  }
  barrier();
}

}  // namespace
