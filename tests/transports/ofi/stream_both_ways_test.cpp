// Both ranks of a pair stream large puts and gets at each other at the same
// time, on an allocated segment (carried as 64 KiB messages over ofi: native
// RMA serves the main segment only), several requests in flight.  Every
// request must complete OK and every byte land.
//
// Written for udp;ofi_rxd (libfabric 1.17): there this traffic lost messages
// inside the provider.  Its fi_send returned success and dropped the message
// once injected replies held all its transmit entries, and its default
// window of 128 unacknowledged packets outran the receive buffers it keeps
// posted, after which it completed receives short (FI_ETRUNC).  The pair's
// message sequence then stopped at the gap and the requests behind it
// never completed (docs/ofi.md, "Provider matrix").  Runs on any route.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mp_util.hpp"

namespace {

constexpr std::size_t kBlock = 1 << 20;  // one request
constexpr unsigned kInFlight = 8;         // requests issued before waiting
constexpr unsigned kRounds = 3;
// Segment layout: [source blocks][put landing blocks][get landing blocks]
constexpr std::size_t kArea = kBlock * kInFlight;

uint8_t pattern(uint32_t rank, unsigned round, std::size_t i) {
  return static_cast<uint8_t>(rank * 131 + round * 17 + i * 7 + (i >> 12));
}

TEST(OfiStreamBothWays, LargePutsAndGetsEachWayAtOnce) {
  const uint32_t me = mp::rank(), n = mp::size();
  ASSERT_GE(n, 2u);
  tsu_seg_t seg = 0;
  void* base = nullptr;
  ASSERT_EQ(tsu_segment_alloc(3 * kArea, &seg, &base), TSU_OK) << tsu_last_error();
  const std::vector<tsu_seg_t> segs = mp::allgather_u32(seg, 0, 4096);
  auto* mem = static_cast<uint8_t*>(base);
  // Rank r pairs with r + n/2: with the ranks packed onto pseudo-nodes of
  // up to n/2, every pair spans two nodes (the traffic goes over ofi, not
  // shared memory).  An odd last rank only joins the barriers.
  const uint32_t half = n / 2;
  const bool paired = me < 2 * half;
  const uint32_t peer = !paired ? me : me < half ? me + half : me - half;
  for (unsigned round = 0; round < kRounds; ++round) {
    for (std::size_t i = 0; i < kArea; ++i) mem[i] = pattern(me, round, i);
    std::memset(mem + kArea, 0, 2 * kArea);
    mp::barrier();
    mp::Tracker tracker(2 * kInFlight);
    for (unsigned k = 0; paired && k < kInFlight; ++k) {
      const uint64_t off = uint64_t{k} * kBlock;
      ASSERT_EQ(tracker.issue([&](tsu_cb_t cb) {
        return tsu_try_put(tsu_gaddr(peer, segs[peer], kArea + off), tsu_laddr(seg, off), kBlock,
                           cb);
      }),
                TSU_OK)
          << tsu_last_error();
      ASSERT_EQ(tracker.issue([&](tsu_cb_t cb) {
        return tsu_try_get(tsu_laddr(seg, 2 * kArea + off), tsu_gaddr(peer, segs[peer], off),
                           kBlock, cb);
      }),
                TSU_OK)
          << tsu_last_error();
    }
    ASSERT_TRUE(tracker.wait_all()) << "round " << round;
    tracker.expect_all(TSU_OK);
    mp::barrier();  // every put into me has completed
    for (std::size_t i = 0; paired && i < kArea; ++i) {
      if (mem[2 * kArea + i] != pattern(peer, round, i)) {
        ADD_FAILURE() << "round " << round << ": got byte " << i << " from rank " << peer
                      << " wrong";
        break;
      }
    }
    for (std::size_t i = 0; paired && i < kArea; ++i) {
      if (mem[kArea + i] != pattern(peer, round, i)) {
        ADD_FAILURE() << "round " << round << ": byte " << i << " put by rank " << peer
                      << " wrong";
        break;
      }
    }
    mp::barrier();  // nobody rewrites its source while a peer may still read it
  }
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
  mp::barrier();
}

}  // namespace
