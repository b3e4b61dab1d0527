#include "core/atomic_exec.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <thread>
#include <vector>

namespace {

using namespace tsu::core;

TEST(AtomicExec, ValidCombinations) {
  EXPECT_TRUE(atomic_op_valid(TSU_AOP_FETCH_ADD, TSU_TYPE_DOUBLE));
  EXPECT_TRUE(atomic_op_valid(TSU_AOP_CAS, TSU_TYPE_DOUBLE));
  EXPECT_FALSE(atomic_op_valid(TSU_AOP_FETCH_AND, TSU_TYPE_DOUBLE));
  EXPECT_FALSE(atomic_op_valid(TSU_AOP_XOR, TSU_TYPE_DOUBLE));
  EXPECT_FALSE(atomic_op_valid(static_cast<tsu_aop_t>(12), TSU_TYPE_UINT64));
  EXPECT_FALSE(atomic_op_valid(TSU_AOP_ADD, static_cast<tsu_atype_t>(5)));
  EXPECT_TRUE(atomic_op_fetches(TSU_AOP_LOAD));
  EXPECT_FALSE(atomic_op_fetches(TSU_AOP_ADD));
}

TEST(AtomicExec, IntegerOps32And64) {
  alignas(8) uint64_t w64 = 10;
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, 5, 0), 10u);
  EXPECT_EQ(w64, 15u);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_CAS, TSU_TYPE_UINT64, 99, 14), 15u) << "failed CAS";
  EXPECT_EQ(w64, 15u);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_CAS, TSU_TYPE_UINT64, 99, 15), 15u);
  EXPECT_EQ(w64, 99u);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_SWAP, TSU_TYPE_UINT64, 0xF0, 0), 99u);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_FETCH_OR, TSU_TYPE_UINT64, 0x0F, 0), 0xF0u);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_FETCH_AND, TSU_TYPE_UINT64, 0x3C, 0), 0xFFu);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_FETCH_XOR, TSU_TYPE_UINT64, 0xFF, 0), 0x3Cu);
  EXPECT_EQ(w64, 0xC3u);
  atomic_execute(&w64, TSU_AOP_STORE, TSU_TYPE_UINT64, 7, 0);
  EXPECT_EQ(atomic_execute(&w64, TSU_AOP_LOAD, TSU_TYPE_UINT64, 0, 0), 7u);

  alignas(8) uint32_t w32[2] = {0xFFFFFFFFu, 0x12345678u};
  EXPECT_EQ(atomic_execute(&w32[0], TSU_AOP_ADD, TSU_TYPE_UINT32, 1, 0), 0xFFFFFFFFu);
  EXPECT_EQ(w32[0], 0u) << "32-bit wrap";
  EXPECT_EQ(w32[1], 0x12345678u) << "the neighbouring word is untouched";
  const int32_t minus_one = -1;
  atomic_execute(&w32[0], TSU_AOP_ADD, TSU_TYPE_INT32, atomic_load_operand(&minus_one, TSU_TYPE_INT32), 0);
  EXPECT_EQ(static_cast<int32_t>(w32[0]), -1);
}

TEST(AtomicExec, DoubleAddIsAtomicUnderContention) {
  alignas(8) uint64_t word = std::bit_cast<uint64_t>(0.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i)
        atomic_execute(&word, TSU_AOP_ADD, TSU_TYPE_DOUBLE, std::bit_cast<uint64_t>(0.5), 0);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::bit_cast<double>(word), 40000.0);
}

TEST(AtomicExec, OperandAndResultWidths) {
  uint64_t out = 0xFFFFFFFFFFFFFFFFull;
  atomic_store_result(&out, TSU_TYPE_UINT32, 0x1234);
  EXPECT_EQ(out & 0xFFFFFFFFu, 0x1234u);
  EXPECT_EQ(out >> 32, 0xFFFFFFFFu) << "a 32-bit result writes 4 bytes only";
}

}  // namespace
