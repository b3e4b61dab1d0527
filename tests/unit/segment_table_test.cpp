// Address translation and bounds checks of a rank's own segments, and a peer
// reaching them through the shm transport (mapped in the same process here).
#include "core/segment_table.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "transport/self/self_transport.hpp"
#include "transport/shm/shm_transport.hpp"

namespace {

using namespace tsu::core;
using tsu::transport::Access;

TEST(SegmentTable, MainSegmentIsZeroAndTranslates) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 1 << 16, error), TSU_OK) << error;
  std::byte* p = nullptr;
  ASSERT_EQ(table.translate(TSU_SEG_MAIN, 0, 1 << 16, p), TSU_OK);
  void* base;
  std::size_t size;
  ASSERT_TRUE(table.info(TSU_SEG_MAIN, base, size));
  EXPECT_EQ(p, base);
  EXPECT_EQ(size, 1u << 16);
  ASSERT_EQ(table.translate(TSU_SEG_MAIN, 100, 8, p), TSU_OK);
  EXPECT_EQ(p, static_cast<std::byte*>(base) + 100);
}

TEST(SegmentTable, BoundsChecksIncludingOverflow) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  std::byte* p = nullptr;
  EXPECT_EQ(table.translate(0, 4096, 0, p), TSU_OK) << "empty range at the end is fine";
  EXPECT_EQ(table.translate(0, 4096, 1, p), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(table.translate(0, 4000, 97, p), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(table.translate(0, UINT64_MAX, 2, p), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(table.translate(0, 8, SIZE_MAX, p), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(table.translate(1, 0, 1, p), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(table.translate(kMaxSegments, 0, 1, p), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(table.translate(UINT32_MAX, 0, 1, p), TSU_ERR_BAD_SEGMENT);
}

TEST(SegmentTable, AllocateRegisterFindFree) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  tsu_seg_t a;
  void* abase;
  ASSERT_EQ(table.allocate(10000, a, abase, error), TSU_OK);
  EXPECT_EQ(a, 1u);
  std::vector<char> user(777);
  tsu_seg_t r;
  ASSERT_EQ(table.register_memory(user.data(), user.size(), r, error), TSU_OK);
  EXPECT_EQ(r, 2u);

  tsu_seg_t seg;
  uint64_t off;
  ASSERT_TRUE(table.find(static_cast<char*>(abase) + 9999, seg, off));
  EXPECT_EQ(seg, a);
  EXPECT_EQ(off, 9999u);
  ASSERT_TRUE(table.find(user.data() + 5, seg, off));
  EXPECT_EQ(seg, r);
  EXPECT_EQ(off, 5u);
  int outside;
  EXPECT_FALSE(table.find(&outside, seg, off));

  std::byte* p;
  uint32_t state;
  ASSERT_EQ(table.translate(r, 0, 777, p, &state), TSU_OK);
  EXPECT_EQ(state, kSegmentRegistered);
  EXPECT_EQ(table.translate(r, 0, 778, p), TSU_ERR_OUT_OF_BOUNDS);

  ASSERT_EQ(table.free(a, error), TSU_OK);
  EXPECT_EQ(table.translate(a, 0, 1, p), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(table.free(a, error), TSU_ERR_BAD_SEGMENT) << "double free is an error";
  EXPECT_EQ(table.free(TSU_SEG_MAIN, error), TSU_ERR_INVALID_ARG);
  EXPECT_FALSE(table.find(abase, seg, off));

  // Ids are never reused.
  tsu_seg_t b;
  void* bbase;
  ASSERT_EQ(table.allocate(64, b, bbase, error), TSU_OK);
  EXPECT_EQ(b, 3u);
}

TEST(SegmentTable, RunsOutOfIdsWithAnError) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  char byte;
  tsu_seg_t seg;
  for (uint32_t i = 1; i < kMaxSegments; ++i)
    ASSERT_EQ(table.register_memory(&byte, 1, seg, error), TSU_OK);
  EXPECT_EQ(table.register_memory(&byte, 1, seg, error), TSU_ERR_LIMIT);
  EXPECT_FALSE(error.empty());
}

// The shm transport maps the control block and segments of a "peer" — here
// ourselves, through /proc/self/fd — and checks against the owner's table.
TEST(ShmTransport, ResolvesPeerSegmentsAgainstOwnerTable) {
  SegmentTable owner;
  std::string error;
  ASSERT_EQ(owner.init(1, 8192, error), TSU_OK);
  tsu_seg_t extra;
  void* extra_base;
  ASSERT_EQ(owner.allocate(4096, extra, extra_base, error), TSU_OK);
  std::vector<char> user(100);
  tsu_seg_t reg;
  ASSERT_EQ(owner.register_memory(user.data(), user.size(), reg, error), TSU_OK);

  tsu::transport::ShmTransport shm;
  // Publishes the transport's own receive ring and layer area in the owner's
  // control block, so add_peer maps them back through /proc/self/fd.
  ASSERT_EQ(shm.init(2, 0, owner.control_block(), 8, 128, 4096, error), TSU_OK) << error;
  ASSERT_EQ(shm.add_peer(1, getpid(), owner.control_block_fd(), error), TSU_OK) << error;
  EXPECT_TRUE(shm.reaches(1));
  EXPECT_FALSE(shm.reaches(0));

  Access a;
  ASSERT_EQ(shm.resolve(tsu_gaddr(1, TSU_SEG_MAIN, 16), 8, a), TSU_OK);
  ASSERT_EQ(a.kind, Access::kDirect);
  std::memcpy(a.ptr, "mapped!", 8);  // a second mapping of the same pages
  std::byte* own;
  ASSERT_EQ(owner.translate(TSU_SEG_MAIN, 16, 8, own), TSU_OK);
  EXPECT_STREQ(reinterpret_cast<char*>(own), "mapped!");

  ASSERT_EQ(shm.resolve(tsu_gaddr(1, extra, 4088), 8, a), TSU_OK) << "mapped on first use";
  EXPECT_EQ(shm.resolve(tsu_gaddr(1, extra, 4089), 8, a), TSU_ERR_OUT_OF_BOUNDS);
  ASSERT_EQ(shm.resolve(tsu_gaddr(1, reg, 10), 90, a), TSU_OK);
  EXPECT_EQ(a.kind, Access::kCrossMemory);
  EXPECT_EQ(a.remote_addr, reinterpret_cast<uint64_t>(user.data() + 10));
  EXPECT_EQ(shm.resolve(tsu_gaddr(0, 0, 0), 1, a), TSU_ERR_UNREACHABLE);

  ASSERT_EQ(owner.free(extra, error), TSU_OK);
  EXPECT_EQ(shm.resolve(tsu_gaddr(1, extra, 0), 8, a), TSU_ERR_BAD_SEGMENT)
      << "a freed segment fails where the request is applied";
}

}  // namespace
