// TSU_SEG_NIC_ATOMICS: the allocation's contract on every kind of job.
// NIC_TEST selects what this job must show:
//   refused: the job cannot give NIC atomics (udp, one node, TSU_OFI_RMA=0):
//            the flag is refused with TSU_ERR_UNSUPPORTED, and the checks of
//            bad input hold;
//   granted: ofi with FI_ATOMIC: the segment gets NIC atomics, the owner's
//            own atomics on it run (through its adapter), bad input fails
//            with clear statuses, and a freed segment's id is refused;
//   late:    TSU_OFI_TEST_FAULT=atomic_enosys_late: the first NIC atomic
//            (the allocation's) passes, later ones are refused: the caller
//            gets TSU_ERR_UNSUPPORTED and the word is not touched by a CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mp_util.hpp"

namespace {

std::string mode() {
  const char* v = std::getenv("NIC_TEST");
  return v ? v : "";
}

tsu_status_t amo(tsu_gaddr_t g, tsu_aop_t op, uint64_t operand, uint64_t* result) {
  return mp::outcome([&](tsu_cb_t cb) {
    return tsu_try_atomic(g, op, TSU_TYPE_UINT64, &operand, nullptr, result, cb);
  });
}

TEST(NicSegment, BadInput) {
  tsu_seg_t seg = 0;
  void* base = nullptr;
  EXPECT_EQ(tsu_segment_alloc_ex(4096, 0x2u, &seg, &base), TSU_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tsu_last_error()).find("unknown flags"), std::string::npos)
      << tsu_last_error();
  EXPECT_EQ(tsu_segment_alloc_ex(0, 0, &seg, &base), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_segment_alloc_ex(4, TSU_SEG_NIC_ATOMICS, &seg, &base), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_segment_alloc_ex(4096, 0, nullptr, &base), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_segment_alloc_ex(4096, 0, &seg, nullptr), TSU_ERR_NULL_POINTER);
  tsu_atomic_site_t site;
  EXPECT_EQ(tsu_segment_atomic_site(TSU_SEG_MAIN, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_segment_atomic_site(12345, &site), TSU_ERR_BAD_SEGMENT);
  ASSERT_EQ(tsu_segment_atomic_site(TSU_SEG_MAIN, &site), TSU_OK);
  EXPECT_EQ(site, TSU_ATOMIC_SITE_CPU);
  // flags 0 is tsu_segment_alloc.
  ASSERT_EQ(tsu_segment_alloc_ex(4096, 0, &seg, &base), TSU_OK) << tsu_last_error();
  ASSERT_EQ(tsu_segment_atomic_site(seg, &site), TSU_OK);
  EXPECT_EQ(site, TSU_ATOMIC_SITE_CPU);
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
  mp::barrier();
}

TEST(NicSegment, RefusedWhereTheJobCannot) {
  if (mode() != "refused") GTEST_SKIP() << "NIC_TEST=" << mode();
  tsu_seg_t seg = 0;
  void* base = nullptr;
  EXPECT_EQ(tsu_segment_alloc_ex(4096, TSU_SEG_NIC_ATOMICS, &seg, &base), TSU_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(tsu_last_error()).find("TSU_SEG_NIC_ATOMICS refused"), std::string::npos)
      << tsu_last_error();
  mp::barrier();
}

TEST(NicSegment, GrantedAndUsedByItsOwner) {
  if (mode() != "granted") GTEST_SKIP() << "NIC_TEST=" << mode();
  const uint32_t me = mp::rank();
  tsu_seg_t seg = 0;
  void* base = nullptr;
  ASSERT_EQ(tsu_segment_alloc_ex(4096, TSU_SEG_NIC_ATOMICS, &seg, &base), TSU_OK)
      << tsu_last_error();
  tsu_atomic_site_t site = TSU_ATOMIC_SITE_CPU;
  ASSERT_EQ(tsu_segment_atomic_site(seg, &site), TSU_OK);
  EXPECT_EQ(site, TSU_ATOMIC_SITE_NIC);
  // The owner's own atomics (through its adapter), then its plain view.
  uint64_t old = 99;
  EXPECT_EQ(amo(tsu_gaddr(me, seg, 8), TSU_AOP_FETCH_ADD, 5, &old), TSU_OK) << tsu_last_error();
  EXPECT_EQ(old, 0u);
  EXPECT_EQ(amo(tsu_gaddr(me, seg, 8), TSU_AOP_FETCH_ADD, 5, &old), TSU_OK);
  EXPECT_EQ(old, 5u);
  EXPECT_EQ(static_cast<uint64_t*>(base)[1], 10u);
  // Out of bounds fails at the target with a status; misaligned at the call.
  EXPECT_EQ(amo(tsu_gaddr(me, seg, 4096), TSU_AOP_FETCH_ADD, 1, &old), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(amo(tsu_gaddr(me, seg, 12), TSU_AOP_FETCH_ADD, 1, &old), TSU_ERR_MISALIGNED);
  // A node peer's or a remote rank's NIC segment: the next rank's.
  const auto ids = mp::allgather_u32(seg, 0, 256);
  const uint32_t next = (me + 1) % mp::size();
  mp::barrier();
  EXPECT_EQ(amo(tsu_gaddr(next, ids[next], 16), TSU_AOP_FETCH_ADD, 1, &old), TSU_OK)
      << tsu_last_error();
  EXPECT_EQ(old, 0u);
  EXPECT_EQ(amo(tsu_gaddr(next, ids[next], 4096), TSU_AOP_FETCH_ADD, 1, &old),
            TSU_ERR_OUT_OF_BOUNDS);
  mp::barrier();
  EXPECT_EQ(static_cast<uint64_t*>(base)[2], 1u);
  // Puts and gets keep their routes on a NIC segment.
  const uint64_t v = 0x1234;
  std::memcpy(mp::main_base() + 512, &v, 8);
  EXPECT_EQ(mp::put_sync(tsu_gaddr(next, ids[next], 24), tsu_laddr(TSU_SEG_MAIN, 512), 8),
            TSU_OK);
  mp::barrier();
  EXPECT_EQ(static_cast<uint64_t*>(base)[3], 0x1234u);
  // Freed: the owner's own stale id fails.
  ASSERT_EQ(tsu_segment_free(seg), TSU_OK);
  EXPECT_EQ(amo(tsu_gaddr(me, seg, 8), TSU_AOP_FETCH_ADD, 1, &old), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_segment_atomic_site(seg, &site), TSU_ERR_BAD_SEGMENT);
  mp::barrier();
}

TEST(NicSegment, RefusalAfterUseIsAnError) {
  if (mode() != "late") GTEST_SKIP() << "NIC_TEST=" << mode();
  const uint32_t me = mp::rank();
  tsu_seg_t seg = 0;
  void* base = nullptr;
  ASSERT_EQ(tsu_segment_alloc_ex(4096, TSU_SEG_NIC_ATOMICS, &seg, &base), TSU_OK)
      << tsu_last_error();
  tsu_atomic_site_t site = TSU_ATOMIC_SITE_CPU;
  ASSERT_EQ(tsu_segment_atomic_site(seg, &site), TSU_OK);
  EXPECT_EQ(site, TSU_ATOMIC_SITE_NIC) << "the allocation's NIC atomic was not refused";
  uint64_t old = 0;
  EXPECT_EQ(amo(tsu_gaddr(me, seg, 8), TSU_AOP_FETCH_ADD, 1, &old), TSU_ERR_UNSUPPORTED);
  EXPECT_EQ(static_cast<uint64_t*>(base)[1], 0u) << "a refused NIC atomic ran on a CPU";
  EXPECT_EQ(tsu_segment_atomic_site(seg, &site), TSU_OK);
  EXPECT_EQ(site, TSU_ATOMIC_SITE_NIC) << "a segment in use changed site";
  mp::barrier();
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
}

}  // namespace
