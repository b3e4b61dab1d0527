// Atomics on one word from every kind of issuer at once (seed 002: one
// executor per word): the owner's own threads (tsu atomics on its own
// memory, executed by its CPU), its node peers (CPU atomics through shared
// memory) and ranks on other nodes over ofi (carried as messages, executed by
// the owner's progress engine).  Exact final values: fetch-adds form a
// permutation, CAS increment loops lose nothing, XOR of per-issuer bits
// leaves exactly the bits flipped an odd number of times.
//
// Run with 2 pseudo-nodes of 2 ranks: rank 0 owns the words, rank 1 is its
// node peer, ranks 2 and 3 reach it through ofi.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "mp_util.hpp"

namespace {

constexpr unsigned kThreads = 2;
constexpr uint64_t kAdds = 4000;   // fetch-adds per thread
constexpr uint64_t kCas = 500;     // CAS increments per thread
constexpr uint64_t kXors = 1001;   // XORs of the thread's own bit (odd: the bit ends set)
constexpr uint64_t kAddWord = 4096, kCasWord = 4096 + 64, kXorWord = 4096 + 128;
constexpr uint64_t kGatherOff = 64 * 1024;  // on rank 0: every thread's fetched values

// TSU_TEST_NIC_ATOMICS=1: the words are in rank 0's segment allocated with
// TSU_SEG_NIC_ATOMICS, so every issuer's atomics (the owner's threads and
// its node peer's included) are executed by the adapter instead.
bool nic_mode() {
  const char* v = std::getenv("TSU_TEST_NIC_ATOMICS");
  return v && std::strcmp(v, "1") == 0;
}
tsu_seg_t g_word_seg = TSU_SEG_MAIN;  // rank 0's segment holding the words
uint64_t* g_word_base = nullptr;      // this rank's own segment of that kind

uint64_t* words() {
  void* base = nullptr;
  std::size_t len = 0;
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &len), TSU_OK);
  return static_cast<uint64_t*>(base);
}

tsu_status_t atomic(uint64_t off, tsu_aop_t op, uint64_t operand, uint64_t compare,
                    uint64_t* result) {
  mp::Done d;
  const tsu_status_t st = mp::issue([&] {
    return tsu_try_atomic(tsu_gaddr(0, g_word_seg, off), op, TSU_TYPE_UINT64, &operand,
                          op == TSU_AOP_CAS ? &compare : nullptr, result, d.cb());
  });
  if (st != TSU_OK) return st;
  if (!d.wait("atomic")) return TSU_ERR_SYSTEM;
  return d.st.load();
}

TEST(OfiMixedAtomics, LocalCpuNodePeersAndOfiIssuersOnOneWord) {
  const uint32_t me = mp::rank(), n = mp::size();
  ASSERT_EQ(n, 4u);
  ASSERT_TRUE(mp::node_of(0) == mp::node_of(1) && mp::node_of(2) != mp::node_of(0) &&
              mp::node_of(3) != mp::node_of(0))
      << "expects 2 pseudo-nodes of 2 ranks";
  g_word_base = words();
  if (nic_mode()) {
    tsu_seg_t seg = 0;
    void* base = nullptr;
    ASSERT_EQ(tsu_segment_alloc_ex(64 * 1024, TSU_SEG_NIC_ATOMICS, &seg, &base), TSU_OK)
        << tsu_last_error();
    tsu_atomic_site_t site = TSU_ATOMIC_SITE_CPU;
    ASSERT_EQ(tsu_segment_atomic_site(seg, &site), TSU_OK);
    ASSERT_EQ(site, TSU_ATOMIC_SITE_NIC);
    g_word_base = static_cast<uint64_t*>(base);
    g_word_seg = mp::allgather_u32(seg, 0, 256)[0];
  }
  mp::barrier();
  const uint32_t issuers = n * kThreads;
  std::vector<std::thread> th;
  std::vector<std::vector<uint64_t>> fetched(kThreads);
  for (unsigned t = 0; t < kThreads; ++t) {
    th.emplace_back([&, t] {
      const uint32_t id = me * kThreads + t;
      auto& mine = fetched[t];
      for (uint64_t i = 0; i < std::max({kAdds, kCas, kXors}); ++i) {
        uint64_t r = 0;
        if (i < kAdds) {
          ASSERT_EQ(atomic(kAddWord, TSU_AOP_FETCH_ADD, 1, 0, &r), TSU_OK) << tsu_last_error();
          mine.push_back(r);
        }
        if (i < kCas) {
          // Increment by CAS until it took: nothing may be lost.
          uint64_t seen = 0;
          ASSERT_EQ(atomic(kCasWord, TSU_AOP_LOAD, 0, 0, &seen), TSU_OK);
          for (;;) {
            ASSERT_EQ(atomic(kCasWord, TSU_AOP_CAS, seen + 1, seen, &r), TSU_OK);
            if (r == seen) break;
            seen = r;
          }
        }
        if (i < kXors) ASSERT_EQ(atomic(kXorWord, TSU_AOP_XOR, 1ull << id, 0, nullptr), TSU_OK);
      }
    });
  }
  for (auto& x : th) x.join();
  // Every thread's fetch-add results go to rank 0, which checks that all of
  // them together are exactly 0 .. total-1.
  std::vector<uint64_t> all;
  for (auto& f : fetched) all.insert(all.end(), f.begin(), f.end());
  ASSERT_EQ(all.size(), kThreads * kAdds);
  auto* w = words();
  const uint64_t gather = kGatherOff + me * kThreads * kAdds * 8;
  // Rank 0's own share goes straight to its place; the others stage theirs
  // at kGatherOff of their own segment and put it to rank 0.
  std::copy(all.begin(), all.end(), w + (me == 0 ? gather : kGatherOff) / 8);
  if (me != 0) {
    mp::Done d;
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_put(tsu_gaddr(0, TSU_SEG_MAIN, gather),
                                   tsu_laddr(TSU_SEG_MAIN, kGatherOff), all.size() * 8, d.cb());
              }),
              TSU_OK);
    ASSERT_TRUE(d.wait("gather put"));
    ASSERT_EQ(d.st.load(), TSU_OK);
  }
  mp::barrier();
  if (me == 0) {
    const uint64_t total = uint64_t{issuers} * kAdds;
    uint64_t* ws = g_word_base;
    std::atomic_ref<uint64_t> add(ws[kAddWord / 8]), cas(ws[kCasWord / 8]), x(ws[kXorWord / 8]);
    EXPECT_EQ(add.load(), total);
    EXPECT_EQ(cas.load(), uint64_t{issuers} * kCas);
    EXPECT_EQ(x.load(), (issuers >= 64 ? ~0ull : (1ull << issuers) - 1));
    std::vector<uint64_t> got(w + kGatherOff / 8, w + kGatherOff / 8 + total);
    std::sort(got.begin(), got.end());
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < total; ++i) wrong += got[i] != i;
    EXPECT_EQ(wrong, 0u) << "fetch-add results are not a permutation of 0.." << total - 1;
  }
  mp::barrier();
}

}  // namespace
