// Ranks posing as separate nodes (tsurun --ranks-per-node K sets TSU_NODE_ID):
// tsu_node_count / tsu_node_of describe the layout, node peers are reached
// through shared memory, ranks on other nodes through the udp transport (same
// API, same results), and only pointers to another node's memory are refused
// (TSU_ERR_UNREACHABLE).  MP_EXPECT_NODES, when set, is the node count the
// test must see.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "mp_util.hpp"

namespace {

using mp::barrier;

uint32_t node_of(uint32_t r) {
  uint32_t node = UINT32_MAX;
  EXPECT_EQ(tsu_node_of(r, &node), TSU_OK);
  return node;
}

// Runs first (before any other test makes ranks 1 and 2 talk): ranks 1 and 2
// sit in tsu_barrier while rank 0 asks for a third-party copy from rank 1 to
// rank 2.  Rank 1's progress thread then contacts rank 2 for the first time
// and looks its address up in the bootstrap service, whose connection rank
// 1's barrier is using: the lookup must not wait for the barrier (which waits
// for rank 0, which waits for the copy).
TEST(Nodes, FirstContactWhileTheRankWaitsInTheBarrier) {
  const uint32_t me = mp::rank(), n = mp::size();
  if (n < 3 || node_of(1) == node_of(2) || node_of(0) == node_of(1)) {
    barrier();
    GTEST_SKIP() << "needs ranks 0, 1 and 2 on three nodes";
  }
  if (me == 0) {
    uint8_t* base = mp::main_base();
    // High in the segment: the tests below use the first 20 KiB.
    constexpr uint64_t kSrc = 512 * 1024, kAt1 = 576 * 1024, kAt2 = 640 * 1024;
    mp::fill_pattern(base + kSrc, 4096, 0, 0, 31);
    ASSERT_EQ(mp::put_sync(tsu_gaddr(1, TSU_SEG_MAIN, kAt1), tsu_laddr(TSU_SEG_MAIN, kSrc), 4096),
              TSU_OK);
    EXPECT_EQ(mp::outcome([&](tsu_cb_t cb) {
                return tsu_try_copy(tsu_gaddr(2, TSU_SEG_MAIN, kAt2),
                                    tsu_gaddr(1, TSU_SEG_MAIN, kAt1), 4096, cb);
              }),
              TSU_OK)
        << tsu_last_error();
    std::memset(base + kSrc, 0, 4096);
    ASSERT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, kSrc), tsu_gaddr(2, TSU_SEG_MAIN, kAt2), 4096),
              TSU_OK);
    EXPECT_EQ(mp::check_pattern(base + kSrc, 4096, 0, 0, 31), SIZE_MAX);
  }
  barrier();
}

TEST(Nodes, Layout) {
  const uint32_t n = mp::size();
  uint32_t count = 0;
  ASSERT_EQ(tsu_node_count(&count), TSU_OK);
  if (const char* e = std::getenv("MP_EXPECT_NODES")) {
    EXPECT_EQ(count, static_cast<uint32_t>(std::atoi(e)));
  }
  std::set<uint32_t> nodes;
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t node = node_of(r);
    EXPECT_LT(node, count);
    nodes.insert(node);
    EXPECT_EQ(node_of(r), node) << "node_of is not stable";
  }
  EXPECT_EQ(nodes.size(), count);
  // TSU_NODE_ID, as tsurun sets it, makes equal ids share a node: ranks of one
  // node are contiguous (rank / K).
  for (uint32_t r = 1; r < n; ++r) EXPECT_GE(node_of(r), node_of(r - 1));
  barrier();
}

TEST(Nodes, OffNodeRequestsGoThroughTheNetwork) {
  const uint32_t me = mp::rank(), n = mp::size();
  uint8_t* base = mp::main_base();
  std::memset(base + 4096, static_cast<int>(me + 1), 4096);  // my source bytes
  std::memset(base + 8192, 0, 4096);
  std::memset(base + 12288, 0, 64u * n);
  barrier();
  for (uint32_t r = 0; r < n; ++r) {
    SCOPED_TRACE("target rank " + std::to_string(r));
    const bool local = node_of(r) == node_of(me);
    const tsu_gaddr_t there = tsu_gaddr(r, TSU_SEG_MAIN, 4096);
    uint64_t one = 1, res = 0;
    void* p = nullptr;
    std::memset(base + 8192, 0, 64);
    EXPECT_EQ(mp::get_sync(tsu_laddr(0, 8192), there, 64), TSU_OK);
    EXPECT_EQ(mp::check_fill(base + 8192, 64, static_cast<uint8_t>(r + 1)), SIZE_MAX);
    if (local) {
      EXPECT_EQ(tsu_gaddr_ptr(there, 64, &p), TSU_OK);
    } else {
      EXPECT_EQ(tsu_gaddr_ptr(there, 64, &p), TSU_ERR_UNREACHABLE);
      EXPECT_NE(std::string(tsu_last_error()).find("tsu_gaddr_ptr"), std::string::npos);
    }
    tsu_counter_t c;
    tsu_counter_init(&c);
    EXPECT_EQ(mp::issue([&] {
                return tsu_try_atomic(tsu_gaddr(r, 0, 16384 + 8u * me), TSU_AOP_FETCH_ADD,
                                      TSU_TYPE_UINT64, &one, nullptr, &res, tsu_counter_cb(&c));
              }),
              TSU_OK);
    EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
    EXPECT_EQ(res, 0u) << "each (rank, issuer) word is added to once";
    // Argument errors still come first.
    EXPECT_EQ(tsu_try_atomic(tsu_gaddr(n, 0, 16384), TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr,
                             nullptr, &res, tsu_cb_none()),
              TSU_ERR_BAD_RANK);
  }
  // Copies between any two ranks, on or off my node (third-party included):
  // b's slot for me receives a's source bytes.
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = 0; b < n; ++b) {
      tsu_counter_t c;
      tsu_counter_init(&c);
      EXPECT_EQ(mp::issue([&] {
                  return tsu_try_copy(tsu_gaddr(b, 0, 12288 + 64u * me), tsu_gaddr(a, 0, 4096), 64,
                                      tsu_counter_cb(&c));
                }),
                TSU_OK);
      EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK) << "copy " << a << " -> " << b;
    }
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  barrier();
  // The last copy into my slot for writer w came from a = n-1.
  for (uint32_t w = 0; w < n; ++w)
    EXPECT_EQ(mp::check_fill(base + 12288 + 64u * w, 64, static_cast<uint8_t>(n)), SIZE_MAX)
        << "slot of writer " << w;
  for (uint32_t w = 0; w < n; ++w) {
    uint64_t v;
    std::memcpy(&v, base + 16384 + 8u * w, 8);
    EXPECT_EQ(v, 1u) << "fetch-add from rank " << w;
  }
  barrier();
}

}  // namespace
