// Helpers of the collective rank tests: a completion flag, team queries, and
// element values chosen so that every op's result is exact in every type
// (small integers: sums, products of <= 4 ranks, min/max and bit patterns).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "msg_util.hpp"
#include "tsunagi/tsunagi.h"

namespace coll_test {

// A collective's completion: exactly one callback, with TSU_OK.
struct Flag : mp::Done {
  void wait() {
    ASSERT_TRUE(Done::wait("collective"));
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(st.load(), TSU_OK);
  }
};

inline uint32_t team_size(tsu_team_t t) {
  uint32_t s = 0;
  EXPECT_EQ(tsu_team_size(t, &s), TSU_OK);
  return s;
}
inline uint32_t team_rank(tsu_team_t t) {
  uint32_t r = 0;
  EXPECT_EQ(tsu_team_rank(t, &r), TSU_OK);
  return r;
}

// Element value of team rank r at index i for op `op` (kept small: exact in
// every type, no overflow in products).
template <typename T>
T value(uint32_t r, std::size_t i, tsu_op_t op) {
  if (op == TSU_OP_PROD) return static_cast<T>((r + i) % 3 + 1);
  if (op == TSU_OP_BAND || op == TSU_OP_BOR) return static_cast<T>((r * 5 + i * 3) % 64);
  return static_cast<T>(static_cast<int>((r * 7 + i) % 13) - (std::is_signed_v<T> ? 6 : 0));
}
template <typename T>
T apply(tsu_op_t op, T a, T b) {
  switch (op) {
    case TSU_OP_SUM: return static_cast<T>(a + b);
    case TSU_OP_PROD: return static_cast<T>(a * b);
    case TSU_OP_MIN: return std::min(a, b);
    case TSU_OP_MAX: return std::max(a, b);
    case TSU_OP_BAND: if constexpr (std::is_integral_v<T>) return static_cast<T>(a & b); break;
    case TSU_OP_BOR: if constexpr (std::is_integral_v<T>) return static_cast<T>(a | b); break;
  }
  return a;
}

// This rank's input of a reduction over `n` ranks and the result every rank
// expects (folded in rank order, as the exact values make any order equal).
template <typename T>
void reduction_case(tsu_op_t op, uint32_t me, uint32_t n, std::size_t count, std::vector<T>& src,
                    std::vector<T>& expect) {
  src.resize(count);
  expect.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    src[i] = value<T>(me, i, op);
    T acc = value<T>(0, i, op);
    for (uint32_t r = 1; r < n; ++r) acc = apply(op, acc, value<T>(r, i, op));
    expect[i] = acc;
  }
}

template <typename T>
bool same(const T* a, const T* b, std::size_t count) {
  return count == 0 || std::memcmp(a, b, count * sizeof(T)) == 0;
}

}  // namespace coll_test
