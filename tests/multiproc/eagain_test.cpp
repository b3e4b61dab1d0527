// The TSU_EAGAIN path, run with a two-slot command ring (TSU_RING_SIZE=2,
// TSU_BYPASS=0, normally TSU_PROGRESS=manual): requests are refused when the
// ring is full, a refused request does nothing and never calls back, and after
// progress the same request can be issued again; nothing is lost or duplicated.
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
// third request until tsu_progress().
TEST_F(Eagain, ThirdRequestRefusedUntilProgress) {
  if (!mp::manual_mode() || !mp::engine_mode()) GTEST_SKIP() << "needs TSU_PROGRESS=manual TSU_BYPASS=0";
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  uint8_t* local = mp::main_base() + kMiscOff;
  mp::fill_pattern(local, 24, me, 0, 77);
  uint8_t* remote = mp::gptr(tsu_gaddr(next, TSU_SEG_MAIN, kMiscOff + 4096 + 64u * me), 24);
  ASSERT_NE(remote, nullptr);
  std::memset(remote, 0xCC, 24);
  mp::Completion c[3];
  auto put = [&](int i) {
    return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, kMiscOff + 4096 + 64u * me + 8u * static_cast<unsigned>(i)),
                       tsu_laddr(TSU_SEG_MAIN, kMiscOff + 8u * static_cast<unsigned>(i)), 8,
                       tsu_cb(mp::completion_cb, &c[i]));
  };
  ASSERT_EQ(put(0), TSU_OK);
  ASSERT_EQ(put(1), TSU_OK);
  EXPECT_EQ(put(2), TSU_EAGAIN) << "a full 2-slot ring accepted a third request";
  EXPECT_EQ(put(2), TSU_EAGAIN);
  // Nothing has run yet.
  EXPECT_EQ(mp::check_fill(remote, 24, 0xCC), SIZE_MAX);
  for (auto& x : c) {
    EXPECT_EQ(x.calls.load(), 0u);
  }
  // Progress runs the two accepted requests only.
  mp::wait_until([&] { return c[0].calls.load() == 1 && c[1].calls.load() == 1; }, "first two");
  EXPECT_EQ(c[2].calls.load(), 0u) << "a refused request called back";
  EXPECT_EQ(mp::check_pattern(remote, 16, me, 0, 77), SIZE_MAX);
  EXPECT_EQ(mp::check_fill(remote + 16, 8, 0xCC), SIZE_MAX) << "a refused put wrote";
  // Retried, it is accepted and runs once.
  ASSERT_EQ(mp::issue([&] { return put(2); }), TSU_OK);
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  for (auto& x : c) {
    EXPECT_EQ(x.calls.load(), 1u);
    EXPECT_EQ(x.status.load(), TSU_OK);
  }
  EXPECT_EQ(mp::check_pattern(remote, 24, me, 0, 77), SIZE_MAX);

  // The same for atomics: a refused fetch-add neither adds nor writes its result.
  const tsu_gaddr_t w = tsu_gaddr(next, TSU_SEG_MAIN, kMiscOff + 8192 + 64u * me);
  uint64_t* word = reinterpret_cast<uint64_t*>(mp::gptr(w, 8));
  ASSERT_NE(word, nullptr);
  std::atomic_ref<uint64_t>(*word).store(100);
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
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 102u) << "a refused atomic was applied";
  EXPECT_EQ(res[2], 7u) << "a refused atomic wrote its result";
  EXPECT_EQ(a[2].calls.load(), 0u);
  ASSERT_EQ(mp::issue([&] { return fadd(2); }), TSU_OK);
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 103u);
  uint64_t sorted[3] = {res[0], res[1], res[2]};
  std::sort(sorted, sorted + 3);
  EXPECT_EQ(sorted[0], 100u);
  EXPECT_EQ(sorted[1], 101u);
  EXPECT_EQ(sorted[2], 102u);
  barrier();
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
    // Puts read from my own put area slots of writer=me (never written by others).
    std::memcpy(base + put_off(me, tid, 0), expect_put.data(), expect_put.size());
    std::memset(base + kGetOff + tid * kCount * 8, 0, kCount * 8);
    const tsu_gaddr_t w = tsu_gaddr(next, TSU_SEG_MAIN, kWordOff + 64u * (me * kThreads + tid));
    std::vector<uint64_t> results(kCount, ~uint64_t{0});
    mp::Tracker tracker(3 * kCount);
    uint64_t refused = 0;
    const uint64_t one = 1;
    for (std::size_t i = 0; i < kCount; ++i) {
      // put: my slot -> the same slot in next's put area
      EXPECT_EQ(tracker.issue([&](tsu_cb_t cb) {
                  return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, put_off(me, tid, i)),
                                     tsu_laddr(TSU_SEG_MAIN, put_off(me, tid, i)), 8, cb);
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
    // Puts landed in next's memory.
    const uint8_t* remote = mp::gptr(tsu_gaddr(next, TSU_SEG_MAIN, put_off(me, tid, 0)), kCount * 8);
    ASSERT_NE(remote, nullptr);
    EXPECT_EQ(std::memcmp(remote, expect_put.data(), kCount * 8), 0);
    // Gets brought next's pattern.
    for (std::size_t i = 0; i < kCount; ++i) {
      const uint64_t src = (i * 8 + tid * 8 + 3) % (kSrcLen - 8);
      if (mp::check_pattern(base + kGetOff + (tid * kCount + i) * 8, 8, next, src, 5) != SIZE_MAX) {
        ADD_FAILURE() << "get " << i << " of thread " << tid << " brought wrong data";
        break;
      }
    }
    // Fetch-adds: a permutation of 0..kCount-1 and the word is kCount.
    std::sort(results.begin(), results.end());
    for (std::size_t i = 0; i < kCount; ++i)
      if (results[i] != i) {
        ADD_FAILURE() << "fetch-add results are not 0..N-1 (position " << i << ": " << results[i] << ")";
        break;
      }
    const auto* word = reinterpret_cast<const uint64_t*>(mp::gptr(w, 8));
    ASSERT_NE(word, nullptr);
    EXPECT_EQ(std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(word)).load(), kCount);
  });
  RecordProperty("eagains", static_cast<int>(std::min<uint64_t>(eagains.load(), 1u << 30)));
  std::printf("rank %u: %llu TSU_EAGAIN refusals\n", me,
              static_cast<unsigned long long>(eagains.load()));
  // With manual progress nobody drains the ring before a refusal: it must happen.
  if (mp::manual_mode() && mp::engine_mode()) {
    EXPECT_GT(eagains.load(), 0u);
  }
  barrier();
}

}  // namespace
