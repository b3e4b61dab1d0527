// A passive target over ofi: rank 0 sleeps (nanosleep, no tsunagi call at
// all) while every other rank does OFI_PASSIVE_OPS puts and atomics to its
// main segment (a million in all by default).  Only the target's progress
// engine, sleeping on the completion queue's descriptor (or polling it where
// the provider has none), can complete them: tcp;ofi_rxm advances RMA and the
// message-carried atomics only when the target reads its queue.  Checks:
// every put landed with its own value, every atomic counted exactly once,
// every fetch-add result is unique per issuer.
//
// Layout of rank 0's main segment: one put area per issuer (8 B per put,
// distinct slots), one counter word per issuer, a shared counter, and the
// "done" word each issuer increments after its tsu_quiet.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "mp_util.hpp"

namespace {

constexpr uint64_t kDoneOff = 0;
constexpr uint64_t kSharedOff = 64;
constexpr uint64_t kCounterOff = 128;  // + 64 * issuer
constexpr uint64_t kPutOff = 64 * 1024;
constexpr uint64_t kWindow = 4096;  // requests between tsu_quiet calls

uint64_t ops_per_issuer(uint32_t size) {
  const char* v = std::getenv("OFI_PASSIVE_OPS");
  const uint64_t total = v ? std::strtoull(v, nullptr, 10) : 1'000'000;
  return total / (size - 1);
}
uint64_t value_of(uint32_t issuer, uint64_t i) { return (uint64_t{issuer} << 40) ^ (i * 0x9e3779b97f4a7c15ull >> 24); }

uint64_t* main_words() {
  void* base = nullptr;
  std::size_t len = 0;
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &len), TSU_OK);
  return static_cast<uint64_t*>(base);
}

TEST(OfiPassiveTarget, SleepingTargetCompletesAMillionPutsAndAtomics) {
  const uint32_t me = mp::rank(), n = mp::size();
  ASSERT_GE(n, 2u);
  for (uint32_t r = 1; r < n; ++r)
    ASSERT_FALSE(mp::memory_peer(r) && me == 0) << "rank " << r << " must be on another node";
  if (mp::manual_mode()) GTEST_SKIP() << "a passive target needs the progress thread";
  const uint64_t per = ops_per_issuer(n);
  const uint64_t puts = per / 2, atomics = per - puts;
  void* base = nullptr;
  std::size_t seg = 0;
  ASSERT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &seg), TSU_OK);
  ASSERT_LE(kPutOff + (n - 1) * puts * 8, seg) << "TSU_SEGMENT_SIZE too small";
  auto* words = main_words();
  // Issuers' sources: value_of(me, i) at offset kPutOff + i * 8 of their own
  // segment (never changed while the puts run).
  if (me != 0) {
    ASSERT_LE(kPutOff + puts * 8, seg);
    for (uint64_t i = 0; i < puts; ++i) words[kPutOff / 8 + i] = value_of(me, i);
  }
  mp::barrier();
  const auto t0 = std::chrono::steady_clock::now();
  // OFI_PASSIVE_LONE_PUTS=N: first N puts one at a time, each waited for in
  // tsu_quiet (a latency loop: nothing else in flight, so each is a native
  // write the target's queue shows no completion for).  The main phase below
  // writes the same values to the same slots, and rank 0 checks them all.
  if (me != 0) {
    const char* v = std::getenv("OFI_PASSIVE_LONE_PUTS");
    const uint64_t lone = std::min<uint64_t>(v ? std::strtoull(v, nullptr, 10) : 0, puts);
    const uint64_t dst_base = kPutOff + (me - 1) * puts * 8;
    for (uint64_t i = 0; i < lone; ++i) {
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_put_nbi(tsu_gaddr(0, TSU_SEG_MAIN, dst_base + i * 8),
                                         tsu_laddr(TSU_SEG_MAIN, kPutOff + i * 8), 8);
                }),
                TSU_OK);
      ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
    }
  }
  if (me == 0) {
    // Passive: sleep until every issuer said done, reading only local memory.
    std::atomic_ref<uint64_t> done(words[kDoneOff / 8]);
    const auto deadline = t0 + std::chrono::seconds(240);
    while (done.load(std::memory_order_acquire) < n - 1) {
      timespec ts{0, 2'000'000};
      nanosleep(&ts, nullptr);
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "issuers did not finish";
    }
    // Every put landed with its value, every atomic counted once.
    for (uint32_t r = 1; r < n; ++r) {
      const uint64_t* area = words + (kPutOff + (r - 1) * puts * 8) / 8;
      uint64_t bad = 0;
      for (uint64_t i = 0; i < puts; ++i) bad += area[i] != value_of(r, i);
      EXPECT_EQ(bad, 0u) << "puts from rank " << r << " missing or wrong";
      EXPECT_EQ(std::atomic_ref<uint64_t>(words[(kCounterOff + 64 * r) / 8]).load(),
                atomics - atomics / 2)
          << "adds from rank " << r;
    }
    EXPECT_EQ(std::atomic_ref<uint64_t>(words[kSharedOff / 8]).load(), (n - 1) * (atomics / 2));
    std::printf("passive target: %u issuers, %llu puts + %llu atomics each, %.1f s\n", n - 1,
                static_cast<unsigned long long>(puts), static_cast<unsigned long long>(atomics),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } else {
    const uint64_t dst_base = kPutOff + (me - 1) * puts * 8;
    // Half the atomics are fetch-adds on the shared word (their results must
    // be unique), half plain adds on this issuer's own word.
    std::vector<uint64_t> fetched(atomics / 2, ~0ull);
    uint64_t issued = 0, f = 0;
    for (uint64_t i = 0; i < std::max(puts, atomics); ++i) {
      if (i < puts)
        ASSERT_EQ(mp::issue([&] {
                    return tsu_try_put_nbi(tsu_gaddr(0, TSU_SEG_MAIN, dst_base + i * 8),
                                           tsu_laddr(TSU_SEG_MAIN, kPutOff + i * 8), 8);
                  }),
                  TSU_OK);
      if (i < atomics) {
        const uint64_t one = 1;
        tsu_status_t st;
        if (i % 2 == 0 && f < fetched.size()) {
          st = mp::issue([&] {
            return tsu_try_atomic_nbi(tsu_gaddr(0, TSU_SEG_MAIN, kSharedOff), TSU_AOP_FETCH_ADD,
                                      TSU_TYPE_UINT64, &one, nullptr, &fetched[f]);
          });
          ++f;
        } else {
          st = mp::issue([&] {
            return tsu_try_atomic_nbi(tsu_gaddr(0, TSU_SEG_MAIN, kCounterOff + 64 * me),
                                      TSU_AOP_ADD, TSU_TYPE_UINT64, &one, nullptr, nullptr);
          });
        }
        ASSERT_EQ(st, TSU_OK);
      }
      if (++issued % kWindow == 0) ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
    }
    ASSERT_EQ(tsu_quiet(), TSU_OK) << tsu_last_error();
    ASSERT_EQ(f, fetched.size());
    // Results unique (one issuer's share of a permutation of 0..total-1).
    std::sort(fetched.begin(), fetched.end());
    EXPECT_TRUE(std::adjacent_find(fetched.begin(), fetched.end()) == fetched.end());
    EXPECT_LT(fetched.back(), (n - 1) * (atomics / 2));
    const uint64_t one = 1;
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_atomic_nbi(tsu_gaddr(0, TSU_SEG_MAIN, kDoneOff), TSU_AOP_ADD,
                                          TSU_TYPE_UINT64, &one, nullptr, nullptr);
              }),
              TSU_OK);
    ASSERT_EQ(tsu_quiet(), TSU_OK);
  }
  mp::barrier();
}

}  // namespace
