// Pins the sizes of structures that are ABI or hot-path critical.
#include <gtest/gtest.h>

#include "core/command.hpp"
#include "core/control_block.hpp"
#include "core/thread_context.hpp"
#include "tsunagi/tsunagi.h"

TEST(StructLayout, PublicAbi) {
  EXPECT_EQ(sizeof(tsu_gaddr_t), 16u);
  EXPECT_EQ(sizeof(tsu_laddr_t), 16u);
  EXPECT_EQ(sizeof(tsu_cb_t), 16u);
  EXPECT_EQ(sizeof(tsu_counter_t), 16u);
  EXPECT_EQ(offsetof(tsu_config_t, struct_size), 0u);
  EXPECT_EQ(offsetof(tsu_config_t, field_mask), 8u);
}

TEST(StructLayout, HotStructures) {
  EXPECT_LE(sizeof(tsu::core::Command), 96u) << "ring slots stay within two cache lines";
  EXPECT_EQ(sizeof(tsu::core::SegmentSlot), 64u);
  EXPECT_EQ(alignof(tsu::core::ThreadContext), 64u);
  EXPECT_EQ(offsetof(tsu::core::ThreadContext, completed) % 64, 0u)
      << "completed (written by the completer) has its own cache line";
}
