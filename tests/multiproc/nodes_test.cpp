// Ranks posing as separate nodes (tsurun --ranks-per-node K sets TSU_NODE_ID):
// tsu_node_count / tsu_node_of describe the layout, node peers are reached
// through shared memory, and every request to a rank on another node is refused
// with TSU_ERR_UNREACHABLE (there is no network transport yet) without calling
// back.  MP_EXPECT_NODES, when set, is the node count the test must see.
#include <gtest/gtest.h>

#include <cstdlib>
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

struct Hit {
  std::atomic<int> calls{0};
};
void hit_cb(tsu_status_t, void* arg) { static_cast<Hit*>(arg)->calls.fetch_add(1); }

TEST(Nodes, OffNodeRequestsAreUnreachable) {
  const uint32_t me = mp::rank(), n = mp::size();
  uint8_t* base = mp::main_base();
  std::memset(base + 4096, static_cast<int>(me + 1), 4096);  // my source bytes
  std::memset(base + 8192, 0, 4096);
  barrier();
  Hit hit;
  const tsu_cb_t cb = tsu_cb(hit_cb, &hit);
  auto names = [](const char* fn) { return std::string(tsu_last_error()).find(fn) != std::string::npos; };
  for (uint32_t r = 0; r < n; ++r) {
    SCOPED_TRACE("target rank " + std::to_string(r));
    const bool local = node_of(r) == node_of(me);
    const tsu_gaddr_t there = tsu_gaddr(r, TSU_SEG_MAIN, 4096);
    uint64_t one = 1, res = 0;
    void* p = nullptr;
    if (local) {
      EXPECT_EQ(mp::get_sync(tsu_laddr(0, 8192), there, 64), TSU_OK);
      EXPECT_EQ(mp::check_fill(base + 8192, 64, static_cast<uint8_t>(r + 1)), SIZE_MAX);
      EXPECT_EQ(tsu_gaddr_ptr(there, 64, &p), TSU_OK);
      tsu_counter_t c;
      tsu_counter_init(&c);
      EXPECT_EQ(mp::issue([&] {
                  return tsu_try_atomic(tsu_gaddr(r, 0, 16384 + 8u * me), TSU_AOP_FETCH_ADD,
                                        TSU_TYPE_UINT64, &one, nullptr, &res, tsu_counter_cb(&c));
                }),
                TSU_OK);
      EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
      continue;
    }
    EXPECT_EQ(tsu_try_put(there, tsu_laddr(0, 4096), 64, cb), TSU_ERR_UNREACHABLE);
    EXPECT_TRUE(names("tsu_try_put")) << tsu_last_error();
    EXPECT_EQ(tsu_try_get(tsu_laddr(0, 8192), there, 64, cb), TSU_ERR_UNREACHABLE);
    EXPECT_TRUE(names("tsu_try_get")) << tsu_last_error();
    EXPECT_EQ(tsu_try_copy(tsu_gaddr(me, 0, 8192), there, 64, cb), TSU_ERR_UNREACHABLE);
    EXPECT_EQ(tsu_try_copy(there, tsu_gaddr(me, 0, 4096), 64, cb), TSU_ERR_UNREACHABLE);
    EXPECT_TRUE(names("tsu_try_copy")) << tsu_last_error();
    EXPECT_EQ(tsu_try_atomic(tsu_gaddr(r, 0, 16384), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &one,
                             nullptr, &res, cb),
              TSU_ERR_UNREACHABLE);
    EXPECT_TRUE(names("tsu_try_atomic")) << tsu_last_error();
    EXPECT_EQ(tsu_gaddr_ptr(there, 64, &p), TSU_ERR_UNREACHABLE);
    EXPECT_TRUE(names("tsu_gaddr_ptr")) << tsu_last_error();
    // Argument errors still come first.
    EXPECT_EQ(tsu_try_atomic(tsu_gaddr(n, 0, 16384), TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr,
                             nullptr, &res, cb),
              TSU_ERR_BAD_RANK);
    EXPECT_EQ(res, 0u);
  }
  // A copy between two node peers of mine, neither being me, still works when
  // both are on my node; with one of them off-node it is refused.
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = 0; b < n; ++b) {
      const bool ok = node_of(a) == node_of(me) && node_of(b) == node_of(me);
      tsu_counter_t c;
      tsu_counter_init(&c);
      const tsu_status_t st = mp::issue([&] {
        return tsu_try_copy(tsu_gaddr(b, 0, 12288 + 64u * me), tsu_gaddr(a, 0, 4096), 64,
                            tsu_counter_cb(&c));
      });
      if (ok) {
        EXPECT_EQ(st, TSU_OK);
        EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
      } else {
        EXPECT_EQ(st, TSU_ERR_UNREACHABLE) << "copy " << a << " -> " << b;
      }
    }
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  for (int i = 0; i < 10; ++i) tsu_progress();
  EXPECT_EQ(hit.calls.load(), 0) << "a refused request called back";
  // Nothing reached my receive area from off-node ranks: every byte of it is 0
  // or a value written by a node peer's copy (its source byte).
  barrier();
  for (uint32_t w = 0; w < n; ++w) {
    const uint8_t* area = base + 12288 + 64u * w;
    const bool writer_local = node_of(w) == node_of(me);
    for (int i = 0; i < 64; ++i) {
      if (!writer_local) {
        EXPECT_EQ(area[i], 0) << "off-node rank " << w << " wrote my memory";
      }
    }
  }
  barrier();
}

}  // namespace
