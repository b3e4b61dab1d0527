// Address translation and bounds checks of a rank's own segments, and a peer
// reaching them through the shm transport (mapped in the same process here).
#include "core/segment_table.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "transport/self/self_transport.hpp"
#include "core/shared_memory.hpp"
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

  // Fresh indices come first: no reuse yet.
  tsu_seg_t b;
  void* bbase;
  ASSERT_EQ(table.allocate(64, b, bbase, error), TSU_OK);
  EXPECT_EQ(b, 3u);
  ASSERT_TRUE(table.find(bbase, seg, off));
  EXPECT_EQ(seg, b);
}

TEST(SegmentTable, IdsAreLayeredAsGenerationAndIndex) {
  EXPECT_EQ(kSegIndexBits + kSegGenerationBits, 32u);
  EXPECT_EQ(seg_make_id(0, 0), TSU_SEG_MAIN);
  EXPECT_EQ(seg_make_id(3, 5), (3u << kSegIndexBits) | 5u);
  EXPECT_EQ(seg_index(seg_make_id(3, 5)), 5u);
  EXPECT_EQ(seg_generation(seg_make_id(3, 5)), 3u);
  EXPECT_EQ(seg_make_id(kSegGenerationMask + 1, 7), 7u) << "the generation wraps";
  EXPECT_EQ(seg_generation(UINT32_MAX), kSegGenerationMask);
  EXPECT_EQ(kMaxLiveSegments, kMaxSegments - kSegQuarantine + 1);
}

// Registers and frees n times; returns the ids seen, in order.
std::vector<tsu_seg_t> cycle(SegmentTable& table, void* mem, std::size_t size, uint32_t n) {
  std::vector<tsu_seg_t> ids;
  std::string error;
  for (uint32_t i = 0; i < n; ++i) {
    tsu_seg_t s;
    EXPECT_EQ(table.register_memory(mem, size, s, error), TSU_OK) << error;
    ids.push_back(s);
    EXPECT_EQ(table.free(s, error), TSU_OK) << error;
  }
  return ids;
}

TEST(SegmentTable, IdsAreReusedWithANewGenerationAndStaleIdsFail) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  std::vector<char> mem(100);
  // kMaxSegments - 1 fresh indices, then reuse in FIFO order: index 1 first.
  const std::vector<tsu_seg_t> ids = cycle(table, mem.data(), mem.size(), kMaxSegments + 10);
  for (uint32_t i = 0; i + 1 < kMaxSegments; ++i) ASSERT_EQ(ids[i], i + 1);
  for (uint32_t i = 0; i < 10; ++i) {
    const tsu_seg_t id = ids[kMaxSegments - 1 + i];
    EXPECT_EQ(seg_index(id), i + 1) << "the oldest freed index comes back first";
    EXPECT_EQ(seg_generation(id), 1u);
  }
  // A segment live on a reused index; every older id of that index fails.
  tsu_seg_t live;
  void* base;
  ASSERT_EQ(table.allocate(4096, live, base, error), TSU_OK);
  const uint32_t index = seg_index(live);
  EXPECT_EQ(seg_generation(live), 1u);
  std::memset(base, 0x5a, 4096);
  std::byte* p;
  ASSERT_EQ(table.translate(live, 0, 4096, p), TSU_OK);
  EXPECT_EQ(p, base);
  const tsu_seg_t stale = seg_make_id(0, index);
  EXPECT_EQ(table.translate(stale, 0, 1, p), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(table.translate(seg_make_id(2, index), 0, 1, p), TSU_ERR_BAD_SEGMENT) << "future id";
  void* b2;
  std::size_t s2;
  EXPECT_FALSE(table.info(stale, b2, s2));
  EXPECT_EQ(table.free(stale, error), TSU_ERR_BAD_SEGMENT) << "a stale id cannot free the new one";
  ASSERT_TRUE(table.info(live, b2, s2));
  EXPECT_EQ(s2, 4096u);
  for (const tsu_seg_t old : ids) EXPECT_EQ(table.translate(old, 0, 1, p), TSU_ERR_BAD_SEGMENT);
  tsu_seg_t seg;
  uint64_t off;
  ASSERT_TRUE(table.find(static_cast<char*>(base) + 100, seg, off));
  EXPECT_EQ(seg, live);
  EXPECT_EQ(off, 100u);
  EXPECT_FALSE(table.find(mem.data(), seg, off)) << "freed registrations are not found";
  ASSERT_EQ(table.free(live, error), TSU_OK);
  EXPECT_EQ(table.translate(live, 0, 1, p), TSU_ERR_BAD_SEGMENT);
}

TEST(SegmentTable, QuarantineKeepsGenerationsSlow) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  char byte;
  // After all indices were used once, an index comes back only after every
  // other freed index did: with nothing else live, a generation step every
  // kMaxSegments - 1 cycles.
  const std::vector<tsu_seg_t> ids = cycle(table, &byte, 1, 3 * (kMaxSegments - 1));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(seg_index(ids[i]), i % (kMaxSegments - 1) + 1) << i;
    ASSERT_EQ(seg_generation(ids[i]), i / (kMaxSegments - 1)) << i;
  }
}

TEST(SegmentTable, LiveLimitGivesAnErrorAndFreeingOneAllowsAnother) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  char byte;
  std::vector<tsu_seg_t> live;
  tsu_seg_t seg;
  for (uint32_t i = 1; i < kMaxLiveSegments; ++i) {
    ASSERT_EQ(table.register_memory(&byte, 1, seg, error), TSU_OK) << i << ": " << error;
    live.push_back(seg);
  }
  EXPECT_EQ(table.live(), kMaxLiveSegments);
  // Fresh indices remain, so one more can come and go until they are used up
  // and the quarantine holds fewer than kSegQuarantine.
  uint32_t extra = 0;
  while (table.register_memory(&byte, 1, seg, error) == TSU_OK) {
    ASSERT_EQ(table.free(seg, error), TSU_OK);
    ASSERT_LT(++extra, kMaxSegments);
  }
  EXPECT_EQ(extra, kSegQuarantine - 1);
  error.clear();
  EXPECT_EQ(table.register_memory(&byte, 1, seg, error), TSU_ERR_LIMIT);
  EXPECT_NE(error.find("live"), std::string::npos) << error;
  void* base;
  EXPECT_EQ(table.allocate(64, seg, base, error), TSU_ERR_LIMIT);
  // Freeing one fills the quarantine: one more fits, then the limit again.
  ASSERT_EQ(table.free(live[1234], error), TSU_OK);
  ASSERT_EQ(table.allocate(64, seg, base, error), TSU_OK) << error;
  EXPECT_EQ(table.register_memory(&byte, 1, seg, error), TSU_ERR_LIMIT);
  for (const tsu_seg_t s : live)
    if (s != live[1234]) {
      ASSERT_EQ(table.free(s, error), TSU_OK);
    }
  EXPECT_EQ(table.live(), 2u);
}

TEST(SegmentTable, ReadsAreConsistentWhileIdsAreReused) {
  // Readers on other threads while the owner frees and reuses ids: a reader
  // gets TSU_ERR_BAD_SEGMENT or the base and size of the very id it asked
  // (base = buf + 64 * size here, so a torn read would show).
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  static char buf[64 * 64 + 64];
  std::atomic<tsu_seg_t> current{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, hits{0};
  auto reader = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const tsu_seg_t s = current.load(std::memory_order_relaxed);
      for (const tsu_seg_t probe : {s, s - (1u << kSegIndexBits), s + 1}) {
        if (seg_index(probe) == 0) continue;  // the main segment
        void* b;
        std::size_t size;
        if (table.info(probe, b, size)) {
          hits.fetch_add(1, std::memory_order_relaxed);
          if (b != buf + 64 * size && bad.fetch_add(1) < 3)
            std::fprintf(stderr, "probe %x: base +%td size %zu\n", probe, static_cast<char*>(b) - buf, size);
        }
        std::byte* p;
        const tsu_status_t st = table.translate(probe, 0, 1, p);
        if (st != TSU_OK && st != TSU_ERR_BAD_SEGMENT && bad.fetch_add(1) < 3)
          std::fprintf(stderr, "probe %x: status %d\n", probe, st);
      }
    }
  };
  std::thread t1(reader), t2(reader);
  // One id live at a time mostly (the newest is registered before the older
  // is freed), so readers hit live ids as well as ones being freed and reused.
  tsu_seg_t prev = TSU_SEG_MAIN;
  for (uint32_t i = 0; i < 200000; ++i) {
    const std::size_t size = 1 + i % 64;
    tsu_seg_t s;
    ASSERT_EQ(table.register_memory(buf + 64 * size, size, s, error), TSU_OK);
    current.store(s, std::memory_order_relaxed);
    if (prev != TSU_SEG_MAIN) {
      ASSERT_EQ(table.free(prev, error), TSU_OK);
    }
    prev = s;
  }
  ASSERT_EQ(table.free(prev, error), TSU_OK);
  stop = true;
  t1.join();
  t2.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
}

TEST(SegmentTable, OutOfDescriptorsIsALimitNamingRlimitNofile) {
  SegmentTable table;
  std::string error;
  ASSERT_EQ(table.init(0, 4096, error), TSU_OK);
  int highest = 2;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    highest = std::max(highest, std::stoi(e.path().filename().string()));
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(highest + 16);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<tsu_seg_t> segs;
  tsu_status_t st = TSU_OK;
  for (int i = 0; i < highest + 32 && st == TSU_OK; ++i) {
    tsu_seg_t seg;
    void* base;
    st = table.allocate(4096, seg, base, error);
    if (st == TSU_OK) segs.push_back(seg);
  }
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_EQ(st, TSU_ERR_LIMIT);
  EXPECT_NE(error.find("RLIMIT_NOFILE"), std::string::npos) << error;
  EXPECT_GT(segs.size(), 0u);
  for (const tsu_seg_t seg : segs) EXPECT_EQ(table.free(seg, error), TSU_OK);
  tsu_seg_t seg;
  void* base;
  EXPECT_EQ(table.allocate(4096, seg, base, error), TSU_OK) << "fine again with descriptors";
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

  tsu::transport::shm::ShmTransport shm;
  // The owner's layer area (the runtime creates it), and the transport's own
  // receive ring, published in the owner's control block, so add_peer maps
  // them back through /proc/self/fd.
  tsu::core::SharedRegion area;
  ASSERT_EQ(tsu::core::shared_region_create("test-area", 4096, area, error), TSU_OK) << error;
  owner.control_block()->layer_area_fd = area.fd;
  owner.control_block()->layer_area_size = area.size;
  ASSERT_EQ(shm.init(2, 0, owner.control_block(), 8, 128, error), TSU_OK) << error;
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

  // Use up the fresh indices; the next allocation reuses extra's index (the
  // oldest freed) with generation 1.  The peer's mapping of the old segment
  // is replaced, and the old id still fails.
  cycle(owner, user.data(), user.size(), kMaxSegments - 3);
  tsu_seg_t again;
  void* again_base;
  ASSERT_EQ(owner.allocate(8192, again, again_base, error), TSU_OK) << error;
  EXPECT_EQ(seg_index(again), seg_index(extra));
  EXPECT_EQ(seg_generation(again), 1u);
  std::memset(again_base, 0x77, 8192);
  EXPECT_EQ(shm.resolve(tsu_gaddr(1, extra, 0), 8, a), TSU_ERR_BAD_SEGMENT) << "stale id";
  ASSERT_EQ(shm.resolve(tsu_gaddr(1, again, 8000), 192, a), TSU_OK);
  ASSERT_EQ(a.kind, Access::kDirect);
  EXPECT_EQ(static_cast<unsigned char>(a.ptr[191]), 0x77u) << "the new segment's pages";
  EXPECT_EQ(shm.resolve(tsu_gaddr(1, extra, 0), 8, a), TSU_ERR_BAD_SEGMENT) << "still stale";
  ASSERT_EQ(owner.free(again, error), TSU_OK);
  EXPECT_EQ(shm.resolve(tsu_gaddr(1, again, 0), 8, a), TSU_ERR_BAD_SEGMENT);
  tsu::core::shared_region_destroy(area);
}

}  // namespace
