// Collectives: every op on every type (integer and floating) checked against
// a local computation, every root, fragmented sizes, back to back and
// overlapped, on the world and on teams made by split.  Run on 1-4 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "coll_util.hpp"
#include "msg_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

using namespace coll_test;

template <typename T>
void check_reductions(tsu_team_t team, tsu_dtype_t dt, std::size_t count) {
  const uint32_t n = team_size(team), me = team_rank(team);
  const tsu_op_t ops[] = {TSU_OP_SUM, TSU_OP_PROD, TSU_OP_MIN, TSU_OP_MAX, TSU_OP_BAND, TSU_OP_BOR};
  for (tsu_op_t op : ops) {
    if (!std::is_integral_v<T> && (op == TSU_OP_BAND || op == TSU_OP_BOR)) {
      std::vector<T> a(1), b(1);
      EXPECT_EQ(tsu_try_allreduce(team, a.data(), b.data(), 1, dt, op, tsu_cb_none()),
                TSU_ERR_INVALID_ARG);
      continue;
    }
    std::vector<T> src, expect;
    reduction_case<T>(op, me, n, count, src, expect);
    // allreduce (out of place, then in place)
    std::vector<T> dst(count, T{});
    Flag f;
    ASSERT_EQ(tsu_try_allreduce(team, src.data(), dst.data(), count, dt, op, f.cb()), TSU_OK);
    f.wait();
    EXPECT_TRUE(same(dst.data(), expect.data(), count))
        << "allreduce type " << dt << " op " << op;
    std::vector<T> inplace = src;
    Flag g;
    ASSERT_EQ(tsu_try_allreduce(team, inplace.data(), inplace.data(), count, dt, op, g.cb()), TSU_OK);
    g.wait();
    EXPECT_TRUE(same(inplace.data(), expect.data(), count));
    // reduce to the first and the last rank
    for (uint32_t root : {0u, n - 1}) {
      std::vector<T> rd(count, T{});
      Flag h;
      ASSERT_EQ(tsu_try_reduce(team, src.data(), rd.data(), count, dt, op, root, h.cb()), TSU_OK);
      h.wait();
      if (me == root) {
        EXPECT_TRUE(same(rd.data(), expect.data(), count))
            << "reduce type " << dt << " op " << op << " root " << root;
      }
    }
  }
}

void all_types(tsu_team_t team, std::size_t count) {
  check_reductions<int8_t>(team, TSU_DT_INT8, count);
  check_reductions<uint8_t>(team, TSU_DT_UINT8, count);
  check_reductions<int16_t>(team, TSU_DT_INT16, count);
  check_reductions<uint16_t>(team, TSU_DT_UINT16, count);
  check_reductions<int32_t>(team, TSU_DT_INT32, count);
  check_reductions<uint32_t>(team, TSU_DT_UINT32, count);
  check_reductions<int64_t>(team, TSU_DT_INT64, count);
  check_reductions<uint64_t>(team, TSU_DT_UINT64, count);
  check_reductions<float>(team, TSU_DT_FLOAT, count);
  check_reductions<double>(team, TSU_DT_DOUBLE, count);
}

void data_movement(tsu_team_t team) {
  const uint32_t n = team_size(team), me = team_rank(team);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{20000}}) {
    // broadcast from every root
    for (uint32_t root = 0; root < n; ++root) {
      std::vector<unsigned char> buf(bytes);
      for (std::size_t i = 0; i < bytes; ++i)
        buf[i] = static_cast<unsigned char>(me == root ? root * 3 + i : 0xEE);
      Flag f;
      ASSERT_EQ(tsu_try_broadcast(team, buf.data(), bytes, root, f.cb()), TSU_OK);
      f.wait();
      for (std::size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(buf[i], static_cast<unsigned char>(root * 3 + i)) << "bcast root " << root;
    }
    std::vector<unsigned char> mine(bytes), all(bytes * n), a2a_in(bytes * n), a2a_out(bytes * n);
    for (std::size_t i = 0; i < bytes; ++i) mine[i] = static_cast<unsigned char>(me * 11 + i);
    for (uint32_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < bytes; ++i)
        a2a_in[j * bytes + i] = static_cast<unsigned char>(me * 17 + j * 5 + i);
    // gather to every root
    for (uint32_t root = 0; root < n; ++root) {
      std::fill(all.begin(), all.end(), 0xEE);
      Flag f;
      ASSERT_EQ(tsu_try_gather(team, mine.data(), all.data(), bytes, root, f.cb()), TSU_OK);
      f.wait();
      if (me == root) {
        for (uint32_t r = 0; r < n; ++r)
          for (std::size_t i = 0; i < bytes; ++i)
            ASSERT_EQ(all[r * bytes + i], static_cast<unsigned char>(r * 11 + i)) << "gather";
      }
    }
    std::fill(all.begin(), all.end(), 0xEE);
    Flag g, h;
    ASSERT_EQ(tsu_try_allgather(team, mine.data(), all.data(), bytes, g.cb()), TSU_OK);
    ASSERT_EQ(tsu_try_alltoall(team, a2a_in.data(), a2a_out.data(), bytes, h.cb()), TSU_OK);
    g.wait();
    h.wait();
    for (uint32_t r = 0; r < n; ++r)
      for (std::size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(all[r * bytes + i], static_cast<unsigned char>(r * 11 + i)) << "allgather";
        ASSERT_EQ(a2a_out[r * bytes + i], static_cast<unsigned char>(r * 17 + me * 5 + i)) << "alltoall";
      }
  }
}

TEST(Coll, BarriersBackToBackAndOverlapped) {
  for (int i = 0; i < 50; ++i) {
    Flag f;
    ASSERT_EQ(tsu_try_barrier(TSU_TEAM_WORLD, f.cb()), TSU_OK);
    f.wait();
  }
  std::vector<std::unique_ptr<Flag>> flags;
  for (int i = 0; i < 20; ++i) {
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_barrier(TSU_TEAM_WORLD, flags.back()->cb()), TSU_OK);
  }
  for (auto& f : flags) f->wait();
}

TEST(Coll, ReductionsEveryOpAndTypeWorld) {
  all_types(TSU_TEAM_WORLD, 5);
  check_reductions<double>(TSU_TEAM_WORLD, TSU_DT_DOUBLE, 3000);  // fragmented
  check_reductions<int32_t>(TSU_TEAM_WORLD, TSU_DT_INT32, 0);
}

TEST(Coll, DataMovementWorld) { data_movement(TSU_TEAM_WORLD); }

TEST(Coll, OverlappedDifferentCollectives) {
  const uint32_t n = mp::size(), me = mp::rank();
  constexpr int kRounds = 10;
  std::vector<std::unique_ptr<Flag>> flags;
  std::vector<std::vector<uint64_t>> sums(kRounds, std::vector<uint64_t>(64));
  std::vector<std::vector<uint32_t>> gathered(kRounds, std::vector<uint32_t>(n));
  std::vector<uint64_t> src(64);
  for (int i = 0; i < 64; ++i) src[i] = me + static_cast<uint64_t>(i);
  for (int r = 0; r < kRounds; ++r) {
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, src.data(), sums[r].data(), 64, TSU_DT_UINT64,
                                TSU_OP_SUM, flags.back()->cb()), TSU_OK);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_allgather(TSU_TEAM_WORLD, &me, gathered[r].data(), 4, flags.back()->cb()),
              TSU_OK);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_barrier(TSU_TEAM_WORLD, flags.back()->cb()), TSU_OK);
  }
  for (auto& f : flags) f->wait();
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < 64; ++i)
      EXPECT_EQ(sums[r][i], uint64_t{n} * (n - 1) / 2 + uint64_t{n} * static_cast<uint64_t>(i));
    for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(gathered[r][k], k);
  }
}

TEST(Coll, TeamsBySplit) {
  const uint32_t n = mp::size(), me = mp::rank();
  // Two teams by parity, ordered by descending job rank (key).
  tsu_team_t t = TSU_TEAM_NULL;
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, static_cast<int32_t>(me % 2), n - me, &t), TSU_OK);
  ASSERT_NE(t, TSU_TEAM_NULL);
  std::vector<uint32_t> members;
  for (uint32_t r = n; r-- > 0;)
    if (r % 2 == me % 2) members.push_back(r);
  ASSERT_EQ(team_size(t), members.size());
  EXPECT_EQ(members[team_rank(t)], me);
  for (uint32_t i = 0; i < members.size(); ++i) {
    uint32_t jr = 0;
    ASSERT_EQ(tsu_team_job_rank(t, i, &jr), TSU_OK);
    EXPECT_EQ(jr, members[i]);
  }
  all_types(t, 3);
  data_movement(t);
  // Team collectives interleaved with world ones.
  uint64_t one = 1, team_sum = 0, world_sum = 0;
  Flag a, b;
  ASSERT_EQ(tsu_try_allreduce(t, &one, &team_sum, 1, TSU_DT_UINT64, TSU_OP_SUM, a.cb()), TSU_OK);
  ASSERT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, &one, &world_sum, 1, TSU_DT_UINT64, TSU_OP_SUM, b.cb()),
            TSU_OK);
  a.wait();
  b.wait();
  EXPECT_EQ(team_sum, members.size());
  EXPECT_EQ(world_sum, n);
  // A split of the split, and a rank that opts out.
  tsu_team_t sub = 0;
  ASSERT_EQ(tsu_team_split(t, team_rank(t) == 0 ? -1 : 7, 0, &sub), TSU_OK);
  if (team_rank(t) == 0) {
    EXPECT_EQ(sub, TSU_TEAM_NULL);
  } else {
    ASSERT_NE(sub, TSU_TEAM_NULL);
    EXPECT_EQ(team_size(sub), team_size(t) - 1);
    Flag c;
    ASSERT_EQ(tsu_try_barrier(sub, c.cb()), TSU_OK);
    c.wait();
    EXPECT_EQ(tsu_team_free(sub), TSU_OK);
  }
  EXPECT_EQ(tsu_team_free(t), TSU_OK);
  EXPECT_EQ(tsu_team_free(t), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_team_free(TSU_TEAM_WORLD), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_barrier(12345, tsu_cb_none()), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_broadcast(TSU_TEAM_WORLD, &one, 8, n, tsu_cb_none()), TSU_ERR_BAD_RANK);
  mp::sync();
}

}  // namespace
