// Allreduce algorithms for large data: reduce-scatter + allgather (recursive
// halving/doubling), and for teams on one node the shared-memory path.  The
// thresholds come from the environment (CTest runs this program with each
// path forced), so the same checks cover every algorithm: every op and type,
// element counts that no rank count divides, in place and out of place, on
// the world and on teams (by parity and by node), back to back and
// overlapped with other collectives.  Results are compared bit for bit.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "coll_util.hpp"
#include "msg_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

using namespace coll_test;

constexpr std::size_t kLargeBytes = 20000;  // many fragments; the env picks the algorithm

template <typename T>
void check_allreduce(tsu_team_t team, tsu_dtype_t dt, std::size_t count) {
  const uint32_t n = team_size(team), me = team_rank(team);
  const tsu_op_t ops[] = {TSU_OP_SUM, TSU_OP_PROD, TSU_OP_MIN, TSU_OP_MAX, TSU_OP_BAND, TSU_OP_BOR};
  for (tsu_op_t op : ops) {
    if (!std::is_integral_v<T> && (op == TSU_OP_BAND || op == TSU_OP_BOR)) continue;
    std::vector<T> src, expect;
    reduction_case<T>(op, me, n, count, src, expect);
    std::vector<T> dst(count, T{});
    Flag f;
    ASSERT_EQ(tsu_try_allreduce(team, src.data(), dst.data(), count, dt, op, f.cb()), TSU_OK);
    f.wait();
    EXPECT_TRUE(same(dst.data(), expect.data(), count))
        << "allreduce type " << dt << " op " << op << " count " << count;
    std::vector<T> inplace = src;
    Flag g;
    ASSERT_EQ(tsu_try_allreduce(team, inplace.data(), inplace.data(), count, dt, op, g.cb()),
              TSU_OK);
    g.wait();
    EXPECT_TRUE(same(inplace.data(), expect.data(), count))
        << "in place, type " << dt << " op " << op << " count " << count;
  }
}

// A count of about `bytes` that 2, 3 and 4 do not divide.
template <typename T>
std::size_t odd_count(std::size_t bytes) {
  std::size_t c = bytes / sizeof(T);
  while (c % 2 == 0 || c % 3 == 0) ++c;
  return c;
}

template <typename T>
void sizes_for(tsu_team_t team, tsu_dtype_t dt) {
  // Small counts matter when the environment forces the large algorithms
  // down to 0 bytes: empty slices, fewer elements than ranks.
  for (std::size_t c : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                        std::size_t{5}, odd_count<T>(kLargeBytes)})
    check_allreduce<T>(team, dt, c);
}

void every_type(tsu_team_t team) {
  sizes_for<int8_t>(team, TSU_DT_INT8);
  sizes_for<uint8_t>(team, TSU_DT_UINT8);
  sizes_for<int16_t>(team, TSU_DT_INT16);
  sizes_for<uint16_t>(team, TSU_DT_UINT16);
  sizes_for<int32_t>(team, TSU_DT_INT32);
  sizes_for<uint32_t>(team, TSU_DT_UINT32);
  sizes_for<int64_t>(team, TSU_DT_INT64);
  sizes_for<uint64_t>(team, TSU_DT_UINT64);
  sizes_for<float>(team, TSU_DT_FLOAT);
  sizes_for<double>(team, TSU_DT_DOUBLE);
}

TEST(CollLarge, EveryOpAndTypeWorld) { every_type(TSU_TEAM_WORLD); }

TEST(CollLarge, VeryLargeVector) {
  // Above the default TSU_COLL_LARGE_MIN.
  check_allreduce<double>(TSU_TEAM_WORLD, TSU_DT_DOUBLE, odd_count<double>(1u << 20));
}

TEST(CollLarge, Teams) {
  const uint32_t n = mp::size(), me = mp::rank();
  uint32_t node = 0;
  ASSERT_EQ(tsu_node_of(me, &node), TSU_OK);
  tsu_team_t by_parity = TSU_TEAM_NULL, by_node = TSU_TEAM_NULL;
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, static_cast<int32_t>(me % 2), n - me, &by_parity), TSU_OK);
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, static_cast<int32_t>(node), me, &by_node), TSU_OK);
  check_allreduce<int32_t>(by_parity, TSU_DT_INT32, odd_count<int32_t>(kLargeBytes));
  check_allreduce<double>(by_parity, TSU_DT_DOUBLE, odd_count<double>(kLargeBytes));
  check_allreduce<uint8_t>(by_node, TSU_DT_UINT8, odd_count<uint8_t>(kLargeBytes));
  check_allreduce<float>(by_node, TSU_DT_FLOAT, odd_count<float>(kLargeBytes));
  EXPECT_EQ(tsu_team_free(by_parity), TSU_OK);
  EXPECT_EQ(tsu_team_free(by_node), TSU_OK);
}

TEST(CollLarge, BackToBackReusesBuffers) {
  const uint32_t n = mp::size(), me = mp::rank();
  const std::size_t count = odd_count<uint64_t>(kLargeBytes);
  std::vector<uint64_t> src(count), dst(count);
  for (uint64_t round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < count; ++i) src[i] = round * 1000 + me + i;
    Flag f;
    ASSERT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, src.data(), dst.data(), count, TSU_DT_UINT64,
                                TSU_OP_SUM, f.cb()), TSU_OK);
    f.wait();
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(dst[i], n * (round * 1000 + i) + uint64_t{n} * (n - 1) / 2) << "round " << round;
  }
}

TEST(CollLarge, OverlappedWithOtherCollectives) {
  const uint32_t n = mp::size(), me = mp::rank();
  constexpr int kInFlight = 6;
  const std::size_t count = odd_count<int64_t>(kLargeBytes);
  std::vector<std::vector<int64_t>> src(kInFlight, std::vector<int64_t>(count)),
      dst(kInFlight, std::vector<int64_t>(count));
  std::vector<std::unique_ptr<Flag>> flags;
  std::vector<int64_t> small_sum(kInFlight);
  const int64_t one = 1;
  for (int k = 0; k < kInFlight; ++k) {
    for (std::size_t i = 0; i < count; ++i)
      src[k][i] = static_cast<int64_t>(k) * 7 - static_cast<int64_t>(me) + static_cast<int64_t>(i % 100);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, src[k].data(), dst[k].data(), count, TSU_DT_INT64,
                                k % 2 ? TSU_OP_MAX : TSU_OP_SUM, flags.back()->cb()), TSU_OK);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_barrier(TSU_TEAM_WORLD, flags.back()->cb()), TSU_OK);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, &one, &small_sum[k], 1, TSU_DT_INT64, TSU_OP_SUM,
                                flags.back()->cb()), TSU_OK);
  }
  for (auto& f : flags) f->wait();
  const auto sn = static_cast<int64_t>(n);
  for (int k = 0; k < kInFlight; ++k) {
    EXPECT_EQ(small_sum[k], sn);
    for (std::size_t i = 0; i < count; ++i) {
      const int64_t base = static_cast<int64_t>(k) * 7 + static_cast<int64_t>(i % 100);
      const int64_t want = k % 2 ? base : sn * base - sn * (sn - 1) / 2;
      ASSERT_EQ(dst[k][i], want) << "allreduce " << k << " element " << i;
    }
  }
}

TEST(CollLarge, BadArgumentsAreRefused) {
  std::vector<double> a(4096), b(4096);
  // Values outside the enums, as a C caller could pass them.
  const int not_a_type = 42 + static_cast<int>(a.size() % 2), not_an_op = 9 + static_cast<int>(b.size() % 2);
  EXPECT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, a.data(), b.data(), a.size(),
                              static_cast<tsu_dtype_t>(not_a_type), TSU_OP_SUM, tsu_cb_none()),
            TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, a.data(), b.data(), a.size(), TSU_DT_DOUBLE,
                              static_cast<tsu_op_t>(not_an_op), tsu_cb_none()),
            TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, nullptr, b.data(), a.size(), TSU_DT_DOUBLE,
                              TSU_OP_SUM, tsu_cb_none()),
            TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, a.data(), b.data(), a.size(), TSU_DT_DOUBLE,
                              TSU_OP_BOR, tsu_cb_none()),
            TSU_ERR_INVALID_ARG);
  mp::sync();
}

}  // namespace
