// Conformance: implicit completion (tsu_try_put_nbi / get_nbi / copy_nbi /
// atomic_nbi) on every route.  Requests carry no callback; the issuing
// thread's tsu_quiet completes them: after it returns their data is at the
// target (put, copy), in the caller's memory (get), the atomics are applied
// and their results written.  tsu_quiet returns the first failure of the
// thread's implicit requests since its previous quiet (then TSU_OK again),
// and a failure of one thread is not reported to another.
#include <gtest/gtest.h>

#include <atomic>

#include "mp_util.hpp"
#include "tsunagi/tsunagi.hpp"

namespace {

using mp::barrier;

constexpr unsigned kThreads = 3;
constexpr uint64_t kRecvOff = 1u << 18;    // per (writer, thread) 16 KiB slots
constexpr uint64_t kSlot = 16384;
constexpr uint64_t kLocalOff = 3u << 18;   // per thread 32 KiB of local buffers
constexpr uint64_t kLocal = 32768;
constexpr uint64_t kWordOff = 7u << 17;    // per rank: one 64-bit counter
constexpr uint64_t kResultOff = 15u << 16; // per thread 1 KiB of atomic results

uint64_t recv_slot(uint32_t writer, unsigned tid) {
  return kRecvOff + (writer * kThreads + tid) * kSlot;
}
uint64_t local_buf(unsigned tid) { return kLocalOff + tid * kLocal; }

// Many puts of varied sizes to the next rank, one quiet: all landed.  Then
// gets of the same ranges back, one quiet: all read.
TEST(Implicit, PutsThenGetsCompleteWithQuiet) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  mp::run_threads(kThreads, [&](unsigned tid) {
    uint8_t* base = mp::main_base();
    const uint64_t src = local_buf(tid), back = local_buf(tid) + kLocal / 2;
    for (uint32_t round = 0; round < 8; ++round) {
      const uint32_t salt = round * kThreads + tid + 1;
      mp::fill_pattern(base + src, kSlot, me, 0, salt);
      std::memset(base + back, 0, kSlot);
      // 16 pieces of the slot, odd sizes and offsets, in one burst.
      uint64_t at = 0;
      for (uint32_t k = 0; k < 16 && at < kSlot; ++k) {
        const uint64_t len = std::min<uint64_t>(kSlot - at, 1 + (k * 331u + round * 97u) % 1500);
        ASSERT_EQ(mp::issue([&] {
                    return tsu_try_put_nbi(tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, tid) + at),
                                           tsu_laddr(TSU_SEG_MAIN, src + at), len);
                  }),
                  TSU_OK)
            << tsu_last_error();
        at += len;
      }
      ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_get_nbi(tsu_laddr(TSU_SEG_MAIN, back),
                                         tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, tid)), at);
                }),
                TSU_OK);
      ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
      EXPECT_EQ(mp::check_pattern(base + back, at, me, 0, salt), SIZE_MAX) << "round " << round;
    }
  });
  barrier();
}

// Fetch-adds without callbacks from every thread of every rank on rank 0's
// counter: the results are distinct and the total is exact after quiet.
TEST(Implicit, AtomicsCompleteWithQuiet) {
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t counter = tsu_gaddr(0, TSU_SEG_MAIN, kWordOff);
  if (me == 0) std::memset(mp::main_base() + kWordOff, 0, 8);
  barrier();
  constexpr uint32_t kPerThread = 100;
  mp::run_threads(kThreads, [&](unsigned tid) {
    auto* results = reinterpret_cast<uint64_t*>(mp::main_base() + kResultOff + tid * 1024);
    for (uint32_t i = 0; i < kPerThread; ++i) {
      const uint64_t one = 1;
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_atomic_nbi(counter, TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &one,
                                            nullptr, &results[i]);
                }),
                TSU_OK);
    }
    ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
    for (uint32_t i = 1; i < kPerThread; ++i) EXPECT_NE(results[i], results[i - 1]);
    // The C++ form: a non-fetching add.
    ASSERT_EQ(tsu::atomic_nbi<uint64_t>(counter, TSU_AOP_ADD, 0), TSU_OK);
    ASSERT_EQ(tsu::quiet(), TSU_OK);
  });
  barrier();
  uint64_t total = 0;
  ASSERT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, kResultOff + kThreads * 1024), counter, 8), TSU_OK);
  std::memcpy(&total, mp::main_base() + kResultOff + kThreads * 1024, 8);
  EXPECT_EQ(total, uint64_t{n} * kThreads * kPerThread);
  barrier();
}

// A third-party copy without callback: next's slot -> the rank after it.
TEST(Implicit, CopyCompletesWithQuiet) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t b = (me + 1) % n, c = (me + 2) % n;
  uint8_t* base = mp::main_base();
  const uint64_t src = local_buf(0);
  mp::fill_pattern(base + src, 5000, me, 0, 77);
  ASSERT_EQ(tsu::put_nbi(tsu_gaddr(b, TSU_SEG_MAIN, recv_slot(me, 1)),
                         tsu_laddr(TSU_SEG_MAIN, src), 5000),
            TSU_OK);
  ASSERT_EQ(tsu_quiet(), TSU_OK);
  ASSERT_EQ(tsu::copy_nbi(tsu_gaddr(c, TSU_SEG_MAIN, recv_slot(me, 2)),
                          tsu_gaddr(b, TSU_SEG_MAIN, recv_slot(me, 1)), 5000),
            TSU_OK);
  ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
  const uint64_t back = local_buf(0) + kLocal / 2;
  ASSERT_EQ(tsu::get_nbi(tsu_laddr(TSU_SEG_MAIN, back), tsu_gaddr(c, TSU_SEG_MAIN, recv_slot(me, 2)),
                         5000),
            TSU_OK);
  ASSERT_EQ(tsu_quiet(), TSU_OK);
  EXPECT_EQ(mp::check_pattern(base + back, 5000, me, 0, 77), SIZE_MAX);
  barrier();
}

// A failure at the target (out of bounds, unknown segment, misaligned
// registered memory is not needed here) is returned by the next quiet of the
// issuing thread only, once; the good requests of the burst still land.
TEST(Implicit, FailureIsReportedByQuietOnce) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  uint8_t* base = mp::main_base();
  const uint64_t src = local_buf(0);
  mp::fill_pattern(base + src, 512, me, 0, 5);
  const std::size_t seg = mp::main_size();
  ASSERT_EQ(tsu::put_nbi(tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, 0)),
                         tsu_laddr(TSU_SEG_MAIN, src), 512),
            TSU_OK);
  // Out of bounds at the target: accepted (the target checks), fails there.
  ASSERT_EQ(tsu::put_nbi(tsu_gaddr(next, TSU_SEG_MAIN, seg - 8), tsu_laddr(TSU_SEG_MAIN, src), 64),
            TSU_OK);
  std::atomic<int32_t> other{1234};
  std::thread t([&] { other = tsu_quiet(); });  // another thread: nothing of its own failed
  t.join();
  EXPECT_EQ(other.load(), TSU_OK);
  EXPECT_EQ(tsu_quiet(), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_NE(std::string(tsu_last_error()).find("tsu_quiet"), std::string::npos);
  EXPECT_EQ(tsu_quiet(), TSU_OK);  // reported once
  // A bad segment through an atomic.
  uint64_t r = 0;
  const uint64_t v = 1;
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_atomic_nbi(tsu_gaddr(next, 4242, 0), TSU_AOP_FETCH_ADD,
                                        TSU_TYPE_UINT64, &v, nullptr, &r);
            }),
            TSU_OK);
  EXPECT_EQ(tsu_quiet(), TSU_ERR_BAD_SEGMENT);
  // The good put landed.
  const uint64_t back = local_buf(0) + kLocal / 2;
  ASSERT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, back),
                         tsu_gaddr(next, TSU_SEG_MAIN, recv_slot(me, 0)), 512),
            TSU_OK);
  EXPECT_EQ(mp::check_pattern(base + back, 512, me, 0, 5), SIZE_MAX);
  // Rejected at the call: nothing to report later.
  EXPECT_EQ(tsu_try_put_nbi(tsu_gaddr(n, TSU_SEG_MAIN, 0), tsu_laddr(TSU_SEG_MAIN, src), 8),
            TSU_ERR_BAD_RANK);
  EXPECT_EQ(tsu_try_atomic_nbi(tsu_gaddr(next, TSU_SEG_MAIN, 3), TSU_AOP_ADD, TSU_TYPE_UINT64, &v,
                               nullptr, nullptr),
            TSU_ERR_MISALIGNED);
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  barrier();
}

}  // namespace
