// A put or get that takes longer than TSU_OFI_PEER_TIMEOUT on a slow link
// must complete, not declare its live peer lost.  Over tcp;ofi_rxm a
// keep-alive waits behind the transfer's data in the same stream (and the
// target's answer behind a get's data), so the only signs of life during a
// long transfer are its own completions: the transport posts a native put or
// get in pieces (TSU_OFI_RMA_PIECE) and counts each completed piece as
// hearing from the peer.
//
// Run on two hosts behind a tbf bottleneck with a short peer timeout (the
// CMake test sets them): 32 MiB at 50 Mbit/s take ~5.4 s, the timeout is 2 s.
// Rank 0 puts the block into rank 1's main segment, then rank 1 gets rank 0's
// block; both must end TSU_OK with every byte right.  With one piece per
// transfer (TSU_OFI_RMA_PIECE=1G) the put's origin declares its peer lost.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mp_util.hpp"

namespace {

constexpr std::size_t kBlock = 32u << 20;

uint8_t pattern(uint32_t rank, std::size_t i) {
  return static_cast<uint8_t>(rank * 59 + i * 13 + (i >> 11));
}

std::size_t wrong_bytes(const uint8_t* p, uint32_t from) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kBlock; ++i) wrong += p[i] != pattern(from, i);
  return wrong;
}

TEST(OfiLongTransfer, PutAndGetLongerThanThePeerTimeoutComplete) {
  const uint32_t me = mp::rank();
  ASSERT_EQ(mp::size(), 2u);
  uint32_t n0 = 0, n1 = 0;
  ASSERT_EQ(tsu_node_of(0, &n0), TSU_OK);
  ASSERT_EQ(tsu_node_of(1, &n1), TSU_OK);
  ASSERT_NE(n0, n1) << "the ranks must be on two hosts (the route under test is ofi)";
  void* base = nullptr;
  size_t size = 0;
  ASSERT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &size), TSU_OK);
  ASSERT_GE(size, 2 * kBlock);
  auto* mem = static_cast<uint8_t*>(base);
  // [0, kBlock): this rank's source block; [kBlock, 2 kBlock): landing area.
  for (std::size_t i = 0; i < kBlock; ++i) mem[i] = pattern(me, i);
  std::memset(mem + kBlock, 0, kBlock);
  mp::barrier();
  const uint32_t peer = me ^ 1u;
  if (me == 0) {
    mp::Done put;
    ASSERT_EQ(mp::issue([&] {
      return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, kBlock), tsu_laddr(TSU_SEG_MAIN, 0), kBlock,
                         put.cb());
    }),
              TSU_OK)
        << tsu_last_error();
    ASSERT_TRUE(put.wait("the long put"));
    EXPECT_EQ(put.st.load(), TSU_OK) << tsu_strerror(put.st.load());
  }
  mp::barrier();
  if (me == 1) {
    EXPECT_EQ(wrong_bytes(mem + kBlock, 0), 0u) << "put: bytes differ at the target";
    std::memset(mem + kBlock, 0, kBlock);
    mp::Done get;
    ASSERT_EQ(mp::issue([&] {
      return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kBlock), tsu_gaddr(peer, TSU_SEG_MAIN, 0), kBlock,
                         get.cb());
    }),
              TSU_OK)
        << tsu_last_error();
    ASSERT_TRUE(get.wait("the long get"));
    EXPECT_EQ(get.st.load(), TSU_OK) << tsu_strerror(get.st.load());
    EXPECT_EQ(wrong_bytes(mem + kBlock, 0), 0u) << "get: bytes differ at the origin";
  }
  mp::barrier();
}

}  // namespace
