// RMA, third-party copy and atomics between ranks on different (pseudo-)nodes,
// i.e. over the udp transport.  Run with tsurun --ranks-per-node K: ranks of
// one node use shm among themselves, ranks of different nodes use udp.
// Under TSU_UDP_IMPAIR the same checks run through loss, reordering,
// duplication, corruption and delay: results must stay exact.  These are
// the udp protocol's fault tests (tests/transports/udp/CMakeLists.txt: impairments,
// network namespaces, three nodes, a small MTU); the same features without
// faults, on every route, are the conformance suite (tests/conformance/).
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "mp_util.hpp"

namespace {

using mp::node_of;
using mp::remote_peer;

constexpr uint64_t kArea = 8u << 20;  // per-rank test area in the main segment

// UDP_TEST_LIGHT=1 (heavily impaired runs): fewer and smaller requests, so a
// run through 10% loss and 2 ms delay stays well inside the test timeout.
bool light() {
  const char* v = std::getenv("UDP_TEST_LIGHT");
  return v && *v == '1';
}

TEST(Udp, RanksSpanNodes) {
  uint32_t nodes = 0;
  ASSERT_EQ(tsu_node_count(&nodes), TSU_OK);
  ASSERT_GE(nodes, 2u) << "run with tsurun --ranks-per-node so ranks pose as several nodes";
  mp::barrier();
}

TEST(Udp, PutGetSizes) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t peer = remote_peer(me, n);
  uint8_t* base = mp::main_base();
  // Source area [0, kArea), the peer writes into our [kArea, 2kArea) slot.
  mp::fill_pattern(base, kArea, me, 0, 1);
  std::memset(base + kArea, 0, kArea);
  mp::barrier();
  std::vector<std::size_t> sizes = {0, 1, 8, 100, 1400, 1500, 4096, 65536, 300000, 4u << 20};
  if (light()) sizes.back() = 600000;
  mp::Tracker puts(sizes.size());
  uint64_t off = 0;
  for (std::size_t s : sizes) {
    ASSERT_EQ(puts.issue([&](tsu_cb_t cb) {
      return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, kArea + off), tsu_laddr(TSU_SEG_MAIN, off), s, cb);
    }), TSU_OK) << tsu_last_error();
    off += s;
  }
  ASSERT_TRUE(puts.wait_all());
  puts.expect_all();
  mp::barrier();
  // Whoever wrote into us: the rank whose remote_peer is me.
  for (uint32_t w = 0; w < n; ++w) {
    if (remote_peer(w, n) != me) continue;
    EXPECT_EQ(mp::check_pattern(base + kArea, off, w, 0, 1), SIZE_MAX) << "data put by rank " << w;
  }
  mp::barrier();
  // Get the peer's source area back into [2kArea, ...).
  std::memset(base + 2 * kArea, 0, kArea);
  mp::Tracker gets(sizes.size());
  off = 0;
  for (std::size_t s : sizes) {
    ASSERT_EQ(gets.issue([&](tsu_cb_t cb) {
      return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 2 * kArea + off), tsu_gaddr(peer, TSU_SEG_MAIN, off), s, cb);
    }), TSU_OK);
    off += s;
  }
  ASSERT_TRUE(gets.wait_all());
  gets.expect_all();
  EXPECT_EQ(mp::check_pattern(base + 2 * kArea, off, peer, 0, 1), SIZE_MAX);
  mp::barrier();
}

TEST(Udp, ThirdPartyCopy) {
  const uint32_t me = mp::rank(), n = mp::size();
  uint8_t* base = mp::main_base();
  const uint64_t src_off = 3 * kArea, dst_off = 4 * kArea;
  const std::size_t len = 200000;
  mp::fill_pattern(base + src_off, len, me, 0, 2);
  std::memset(base + dst_off, 0, len);
  mp::barrier();
  // Rank 0 copies every rank r's source into rank (r+1)%n's destination.
  if (me == 0) {
    mp::Tracker t(n);
    for (uint32_t r = 0; r < n; ++r) {
      ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
        return tsu_try_copy(tsu_gaddr((r + 1) % n, TSU_SEG_MAIN, dst_off),
                            tsu_gaddr(r, TSU_SEG_MAIN, src_off), len, cb);
      }), TSU_OK);
    }
    ASSERT_TRUE(t.wait_all());
    t.expect_all();
  }
  mp::barrier();
  EXPECT_EQ(mp::check_pattern(base + dst_off, len, (me + n - 1) % n, 0, 2), SIZE_MAX);
  mp::barrier();
}

TEST(Udp, AtomicsExactUnderContention) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint64_t word = 5 * kArea;  // on rank 0
  uint8_t* base = mp::main_base();
  if (me == 0) std::memset(base + word, 0, 64);
  mp::barrier();
  const int kOps = light() ? 300 : 2000;
  std::vector<uint64_t> fetched(kOps, ~0ull);
  mp::Tracker t(kOps + 1);
  for (int i = 0; i < kOps; ++i) {
    ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
      return tsu_try_fetch_add_u64(tsu_gaddr(0, TSU_SEG_MAIN, word), 1, &fetched[i], cb);
    }), TSU_OK);
  }
  // 32-bit adds and an xor on the neighbouring words.
  uint32_t one = 1;
  ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
    return tsu_try_atomic(tsu_gaddr(0, TSU_SEG_MAIN, word + 8), TSU_AOP_ADD, TSU_TYPE_UINT32, &one,
                          nullptr, nullptr, cb);
  }), TSU_OK);
  ASSERT_TRUE(t.wait_all());
  t.expect_all();
  // Fetched values are distinct (no add applied twice or lost).
  std::sort(fetched.begin(), fetched.end());
  EXPECT_TRUE(std::adjacent_find(fetched.begin(), fetched.end()) == fetched.end());
  EXPECT_LT(fetched.back(), static_cast<uint64_t>(kOps) * n);
  mp::barrier();
  if (me == 0) {
    uint64_t v;
    std::memcpy(&v, base + word, 8);
    EXPECT_EQ(v, static_cast<uint64_t>(kOps) * n);
    uint32_t v32;
    std::memcpy(&v32, base + word + 8, 4);
    EXPECT_EQ(v32, n);
  }
  mp::barrier();
  // CAS ring: every rank swaps in its id exactly once in turn.
  uint64_t expected = 0, result = 0;
  if (me == 0) std::memset(base + word + 16, 0, 8);
  mp::barrier();
  for (uint32_t turn = 0; turn < n; ++turn) {
    if (turn == me) {
      expected = turn;
      mp::Tracker c(1);
      ASSERT_EQ(c.issue([&](tsu_cb_t cb) {
        return tsu_try_cas_u64(tsu_gaddr(0, TSU_SEG_MAIN, word + 16), expected, turn + 1, &result, cb);
      }), TSU_OK);
      ASSERT_TRUE(c.wait_all());
      c.expect_all();
      EXPECT_EQ(result, expected);
    }
    mp::barrier();
  }
  if (me == 0) {
    uint64_t v;
    std::memcpy(&v, base + word + 16, 8);
    EXPECT_EQ(v, n);
  }
  mp::barrier();
}

TEST(Udp, TargetErrorsAreCompletionStatus) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t peer = remote_peer(me, n);
  void* base;
  std::size_t seg_size;
  ASSERT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &seg_size), TSU_OK);
  mp::Tracker oob(1), badseg(1), atom(1);
  ASSERT_EQ(oob.issue([&](tsu_cb_t cb) {
    return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, seg_size - 4), tsu_laddr(TSU_SEG_MAIN, 0), 64, cb);
  }), TSU_OK);
  ASSERT_EQ(badseg.issue([&](tsu_cb_t cb) {
    return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 0), tsu_gaddr(peer, 77, 0), 8, cb);
  }), TSU_OK);
  uint64_t r;
  ASSERT_EQ(atom.issue([&](tsu_cb_t cb) {
    return tsu_try_fetch_add_u64(tsu_gaddr(peer, TSU_SEG_MAIN, seg_size), 1, &r, cb);
  }), TSU_OK);
  ASSERT_TRUE(oob.wait_all() && badseg.wait_all() && atom.wait_all());
  oob.expect_all(TSU_ERR_OUT_OF_BOUNDS);
  badseg.expect_all(TSU_ERR_BAD_SEGMENT);
  atom.expect_all(TSU_ERR_OUT_OF_BOUNDS);
  mp::barrier();
}

TEST(Udp, ManyThreadsManyPuts) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t peer = remote_peer(me, n);
  constexpr int kThreads = 3;
  const int kPer = light() ? 60 : 300;
  uint8_t* base = mp::main_base();
  const uint64_t area = 6 * kArea;
  mp::fill_pattern(base + area, kThreads * kPer * 8, me, 0, 3);
  mp::barrier();
  std::vector<std::thread> th;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    th.emplace_back([&, t] {
      mp::Tracker tr(kPer);
      for (int i = 0; i < kPer; ++i) {
        const uint64_t o = (uint64_t(t) * kPer + i) * 8;
        if (tr.issue([&](tsu_cb_t cb) {
              return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, area + kArea + o),
                                 tsu_laddr(TSU_SEG_MAIN, area + o), 8, cb);
            }) != TSU_OK)
          ++bad;
      }
      if (!tr.wait_all()) ++bad;
      tr.expect_all();
    });
  }
  for (auto& x : th) x.join();
  EXPECT_EQ(bad.load(), 0);
  mp::barrier();
  for (uint32_t w = 0; w < n; ++w) {
    if (remote_peer(w, n) != me) continue;
    EXPECT_EQ(mp::check_pattern(base + area + kArea, kThreads * kPer * 8, w, 0, 3), SIZE_MAX);
  }
  mp::barrier();
}

}  // namespace
