// Conformance: ordered requests (seed 001's acp_copy handles) on every
// route.  A request naming an earlier handle starts only after that one
// completed; TSU_REQ_ALL after every earlier one; several naming the same
// handle run after it; a failed predecessor fails its followers with
// TSU_ERR_DEPENDENCY (transitively) and they change nothing; tsu_req_wait
// waits for a handle and everything before it and reports the first failure
// once; tsu_quiet waits for held requests too.  The issuing thread never
// waits between the links of a chain.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "mp_util.hpp"
#include "tsunagi/tsunagi.hpp"

namespace {

using mp::barrier;

constexpr unsigned kThreads = 3;
constexpr uint64_t kSlotOff = 1u << 18;   // per (writer, thread): 16 KiB
constexpr uint64_t kSlot = 16384;
constexpr uint64_t kLocalOff = 1u << 19;  // per thread: 64 KiB of local buffers
constexpr uint64_t kLocal = 65536;
constexpr uint64_t kWordOff = 3u << 18;   // per (writer, thread): one 64-bit word
constexpr uint64_t kPiece = 4000;         // unaligned on purpose

uint64_t slot(uint32_t writer, unsigned tid) { return kSlotOff + (writer * kThreads + tid) * kSlot; }
uint64_t local_buf(unsigned tid) { return kLocalOff + tid * kLocal; }
uint64_t word(uint32_t writer, unsigned tid) { return kWordOff + (writer * kThreads + tid) * 8; }

tsu_gaddr_t at(uint32_t r, uint64_t off) { return tsu_gaddr(r, TSU_SEG_MAIN, off); }
tsu_laddr_t mine(uint64_t off) { return tsu_laddr(TSU_SEG_MAIN, off); }

// Records the order in which callbacks ran.
struct Sequence {
  std::atomic<uint32_t> next{0};
  std::atomic<uint32_t> pos[16];
  std::atomic<int32_t> status[16];
  Sequence() {
    for (auto& p : pos) p = UINT32_MAX;
    for (auto& s : status) s = 1234;
  }
};
struct Step {
  Sequence* seq;
  unsigned index;
};
void step_cb(tsu_status_t st, void* arg) {
  auto* s = static_cast<Step*>(arg);
  s->seq->status[s->index].store(st);
  s->seq->pos[s->index].store(s->seq->next.fetch_add(1));
}

// Third-party chain A -> B -> C -> D -> back, across three other ranks (on
// every route: shm and udp pseudo-nodes mixed), each link after the previous
// one, then one wait: the bytes arrive intact and the callbacks ran in order.
TEST(Ordered, ThirdPartyChainGivesTheRightBytes) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t b = (me + 1) % n, c = (me + 2) % n, d = (me + 3) % n;
  mp::run_threads(kThreads, [&](unsigned tid) {
    uint8_t* base = mp::main_base();
    const uint64_t src = local_buf(tid), back = local_buf(tid) + kLocal / 2;
    for (uint32_t round = 0; round < 6; ++round) {
      const uint32_t salt = 100 + round * kThreads + tid;
      mp::fill_pattern(base + src, kPiece, me, 0, salt);
      std::memset(base + back, 0, kPiece);
      Sequence seq;
      Step steps[4] = {{&seq, 0}, {&seq, 1}, {&seq, 2}, {&seq, 3}};
      tsu_req_t h[4] = {};
      const uint64_t s = slot(me, tid);
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_put_ordered(at(b, s), mine(src), kPiece, TSU_REQ_NONE,
                                             tsu_cb(step_cb, &steps[0]), &h[0]);
                }),
                TSU_OK)
          << tsu_last_error();
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_copy_ordered(at(c, s + kPiece), at(b, s), kPiece, h[0],
                                              tsu_cb(step_cb, &steps[1]), &h[1]);
                }),
                TSU_OK)
          << tsu_last_error();
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_copy_ordered(at(d, s + 2 * kPiece), at(c, s + kPiece), kPiece,
                                              h[1], tsu_cb(step_cb, &steps[2]), &h[2]);
                }),
                TSU_OK)
          << tsu_last_error();
      ASSERT_EQ(mp::issue([&] {
                  return tsu_try_get_ordered(mine(back), at(d, s + 2 * kPiece), kPiece, h[2],
                                             tsu_cb(step_cb, &steps[3]), &h[3]);
                }),
                TSU_OK)
          << tsu_last_error();
      EXPECT_LT(h[0], h[1]);
      EXPECT_LT(h[2], h[3]);
      ASSERT_EQ(tsu_req_wait(h[3]), TSU_OK) << tsu_last_error();
      EXPECT_EQ(mp::check_pattern(base + back, kPiece, me, 0, salt), SIZE_MAX) << "round " << round;
      for (unsigned i = 0; i < 4; ++i) {
        EXPECT_EQ(seq.status[i].load(), TSU_OK) << "link " << i;
        EXPECT_EQ(seq.pos[i].load(), i) << "link " << i << " completed out of order";
      }
    }
  });
  barrier();
}

// Put then get after it, many rounds over one slot, no wait between rounds:
// each get sees exactly the put before it (the next put follows that get).
TEST(Ordered, ChainOverOneSlotNeedsNoWaitInBetween) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  constexpr uint32_t kRounds = 12;
  mp::run_threads(kThreads, [&](unsigned tid) {
    uint8_t* base = mp::main_base();
    const uint64_t s = slot(me, tid);
    // Source k and destination k for every round: 12 x 2 x 1 KiB.
    constexpr uint64_t kLen = 1021;
    auto src = [&](uint32_t k) { return local_buf(tid) + k * 1024; };
    auto dst = [&](uint32_t k) { return local_buf(tid) + (kRounds + k) * 1024; };
    for (uint32_t k = 0; k < kRounds; ++k) {
      mp::fill_pattern(base + src(k), kLen, me, 0, 7 * k + tid);
      std::memset(base + dst(k), 0, kLen);
    }
    tsu_req_t last = TSU_REQ_NONE;
    for (uint32_t k = 0; k < kRounds; ++k) {
      tsu_req_t put = 0;
      ASSERT_EQ(tsu::put_ordered(at(next, s), mine(src(k)), kLen, last, &put), TSU_OK)
          << tsu_last_error();
      ASSERT_EQ(tsu::get_ordered(mine(dst(k)), at(next, s), kLen, put, &last), TSU_OK)
          << tsu_last_error();
    }
    ASSERT_EQ(tsu::req_wait(last), TSU_OK) << tsu_last_error();
    for (uint32_t k = 0; k < kRounds; ++k)
      EXPECT_EQ(mp::check_pattern(base + dst(k), kLen, me, 0, 7 * k + tid), SIZE_MAX)
          << "round " << k;
  });
  barrier();
}

// Several requests naming the same handle all run after it; TSU_REQ_ALL
// waits for every earlier request, unordered ones included.
TEST(Ordered, SameHandleFansOutAndAllWaitsForEverything) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  uint8_t* base = mp::main_base();
  const uint64_t s = slot(me, 0), src = local_buf(0), back = local_buf(0) + kLocal / 2;
  mp::fill_pattern(base + src, kSlot, me, 0, 41);
  std::memset(base + back, 0, kSlot);
  tsu_req_t first = 0;
  ASSERT_EQ(tsu::put_ordered(at(next, s), mine(src), 4096, TSU_REQ_NONE, &first), TSU_OK);
  // Four gets of pieces of what `first` wrote, all after it.
  tsu_req_t fan[4] = {};
  for (unsigned i = 0; i < 4; ++i)
    ASSERT_EQ(tsu::get_ordered(mine(back + i * 1024), at(next, s + i * 1024), 1024, first, &fan[i]),
              TSU_OK);
  // Unordered puts of the rest of the slot, then one get of everything after all.
  for (uint64_t off = 4096; off < kSlot; off += 3000) {
    const uint64_t len = std::min<uint64_t>(3000, kSlot - off);
    ASSERT_EQ(tsu::put_ordered(at(next, s + off), mine(src + off), len, TSU_REQ_NONE), TSU_OK);
  }
  tsu_req_t all = 0;
  ASSERT_EQ(tsu::get_ordered(mine(back + 4096), at(next, s + 4096), kSlot - 4096, TSU_REQ_ALL, &all),
            TSU_OK);
  ASSERT_EQ(tsu::req_wait(all), TSU_OK) << tsu_last_error();
  EXPECT_EQ(mp::check_pattern(base + back, kSlot, me, 0, 41), SIZE_MAX);
  barrier();
}

// Atomics in the chain: store, then fetch-add after it, then a get of the
// word after that, then a CAS after the get.
TEST(Ordered, AtomicsFollowTheirPredecessors) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t target = (me + n - 1) % n;
  mp::run_threads(kThreads, [&](unsigned tid) {
    uint8_t* base = mp::main_base();
    const tsu_gaddr_t w = at(target, word(me, tid));
    const uint64_t res = local_buf(tid), readback = local_buf(tid) + 64;
    for (uint64_t round = 1; round <= 20; ++round) {
      tsu_req_t h1 = 0, h2 = 0, h3 = 0, h4 = 0;
      uint64_t fetched = 0, swapped = 0;
      ASSERT_EQ(tsu::atomic_ordered<uint64_t>(w, TSU_AOP_STORE, 1000 * round, TSU_REQ_NONE, &h1),
                TSU_OK)
          << tsu_last_error();
      ASSERT_EQ(tsu::atomic_ordered<uint64_t>(w, TSU_AOP_FETCH_ADD, round, h1, &h2, &fetched),
                TSU_OK);
      ASSERT_EQ(tsu::get_ordered(mine(readback), w, 8, h2, &h3), TSU_OK);
      ASSERT_EQ(tsu::atomic_ordered<uint64_t>(w, TSU_AOP_CAS, 7, h3, &h4, &swapped,
                                              1000 * round + round),
                TSU_OK);
      ASSERT_EQ(tsu::req_wait(h4), TSU_OK) << tsu_last_error();
      EXPECT_EQ(fetched, 1000 * round);
      uint64_t seen = 0;
      std::memcpy(&seen, base + readback, 8);
      EXPECT_EQ(seen, 1000 * round + round);
      EXPECT_EQ(swapped, 1000 * round + round);
      (void)res;
    }
    // The CAS of the last round applied.
    ASSERT_EQ(mp::get_sync(mine(readback), w, 8), TSU_OK);
    uint64_t last = 0;
    std::memcpy(&last, base + readback, 8);
    EXPECT_EQ(last, 7u);
  });
  barrier();
}

// A predecessor failing at the target fails its followers, transitively and
// for TSU_REQ_ALL, without running them; tsu_req_wait reports the first
// failure once; afterwards a request after the failed one runs.
TEST(Ordered, FailureFailsFollowersAndIsReportedOnce) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  uint8_t* base = mp::main_base();
  const uint64_t s = slot(me, 1), src = local_buf(0), back = local_buf(0) + kLocal / 2;
  // The target slot holds a known pattern.
  mp::fill_pattern(base + src, 2048, me, 0, 9);
  ASSERT_EQ(mp::put_sync(at(next, s), mine(src), 2048), TSU_OK);
  mp::fill_pattern(base + src, 2048, me, 0, 10);  // what the followers would write
  Sequence seq;
  Step steps[5] = {{&seq, 0}, {&seq, 1}, {&seq, 2}, {&seq, 3}, {&seq, 4}};
  tsu_req_t bad = 0, f1 = 0, f2 = 0, all = 0;
  // Out of bounds at the target: accepted, fails there.
  ASSERT_EQ(tsu_try_put_ordered(at(next, mp::main_size() - 8), mine(src), 64, TSU_REQ_NONE,
                                tsu_cb(step_cb, &steps[0]), &bad),
            TSU_OK);
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put_ordered(at(next, s), mine(src), 1024, bad,
                                         tsu_cb(step_cb, &steps[1]), &f1);
            }),
            TSU_OK);
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_copy_ordered(at(next, s + 1024), at(me, src + 1024), 1024, f1,
                                          tsu_cb(step_cb, &steps[2]), &f2);
            }),
            TSU_OK);
  uint64_t r = 0;
  const uint64_t one = 1;
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_atomic_ordered(at(next, word(me, 2)), TSU_AOP_FETCH_ADD,
                                            TSU_TYPE_UINT64, &one, nullptr, &r, TSU_REQ_ALL,
                                            tsu_cb(step_cb, &steps[3]), &all);
            }),
            TSU_OK);
  EXPECT_EQ(tsu_req_wait(all), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_NE(std::string(tsu_last_error()).find("ordered request " + std::to_string(bad)),
            std::string::npos)
      << tsu_last_error();
  EXPECT_EQ(seq.status[0].load(), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(seq.status[1].load(), TSU_ERR_DEPENDENCY);
  EXPECT_EQ(seq.status[2].load(), TSU_ERR_DEPENDENCY);
  EXPECT_EQ(seq.status[3].load(), TSU_ERR_DEPENDENCY);
  EXPECT_EQ(tsu_req_wait(all), TSU_OK);  // reported once
  // Nothing was written by the followers.
  ASSERT_EQ(mp::get_sync(mine(back), at(next, s), 2048), TSU_OK);
  EXPECT_EQ(mp::check_pattern(base + back, 2048, me, 0, 9), SIZE_MAX);
  // The failure was reported: a request after `bad` now runs.
  tsu_req_t again = 0;
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put_ordered(at(next, s), mine(src), 2048, bad,
                                         tsu_cb(step_cb, &steps[4]), &again);
            }),
            TSU_OK);
  EXPECT_EQ(tsu_req_wait(again), TSU_OK) << tsu_last_error();
  EXPECT_EQ(seq.status[4].load(), TSU_OK);
  ASSERT_EQ(mp::get_sync(mine(back), at(next, s), 2048), TSU_OK);
  EXPECT_EQ(mp::check_pattern(base + back, 2048, me, 0, 10), SIZE_MAX);
  barrier();
}

// A follower of a request that already failed (before the follower was
// issued) fails the same way as one that was waiting.
TEST(Ordered, FollowerOfAnAlreadyFailedRequestFails) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  tsu_req_t bad = 0;
  Sequence seq;
  Step steps[2] = {{&seq, 0}, {&seq, 1}};
  ASSERT_EQ(tsu_try_get_ordered(mine(local_buf(0)), tsu_gaddr(next, 4242, 0), 8, TSU_REQ_NONE,
                                tsu_cb(step_cb, &steps[0]), &bad),
            TSU_OK);
  ASSERT_TRUE(mp::wait_until([&] { return seq.status[0].load() != 1234; }, "the failing get"));
  EXPECT_EQ(seq.status[0].load(), TSU_ERR_BAD_SEGMENT);
  tsu_req_t f = 0;
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put_ordered(at(next, slot(me, 2)), mine(local_buf(0)), 8, bad,
                                         tsu_cb(step_cb, &steps[1]), &f);
            }),
            TSU_OK);
  EXPECT_EQ(tsu_req_wait(f), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(seq.status[1].load(), TSU_ERR_DEPENDENCY);
  barrier();
}

// tsu_quiet waits for held requests too; handles are per thread.
TEST(Ordered, QuietWaitsForHeldRequests) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  mp::run_threads(kThreads, [&](unsigned tid) {
    mp::Tracker t(32);
    uint8_t* base = mp::main_base();
    const uint64_t src = local_buf(tid), s = slot(me, tid);
    mp::fill_pattern(base + src, 16 * 512, me, 0, 55 + tid);
    tsu_req_t last = TSU_REQ_NONE;
    for (unsigned i = 0; i < 16; ++i)
      ASSERT_EQ(t.issue([&](tsu_cb_t cb) {
                  return tsu_try_put_ordered(at(next, s + i * 512), mine(src + i * 512), 512,
                                             last, cb, &last);
                }),
                TSU_OK);
    ASSERT_EQ(tsu_quiet(), TSU_OK);
    EXPECT_EQ(t.done(), 16u);  // no wait_all: quiet alone completed them
    t.expect_all(TSU_OK);
    EXPECT_EQ(tsu_req_test(last), TSU_OK);
  });
  barrier();
}

// Bad arguments: refused at the call with a message, no handle given out.
TEST(Ordered, BadArgumentsAreRefusedAtTheCall) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  // A fresh thread has no handles yet.
  std::thread([&] {
    tsu_req_t h = 77;
    EXPECT_EQ(tsu_try_put_ordered(at(next, 0), mine(0), 8, 1, tsu_cb_none(), &h),
              TSU_ERR_INVALID_ARG);
    EXPECT_NE(std::string(tsu_last_error()).find("tsu_try_put_ordered"), std::string::npos);
    EXPECT_EQ(h, 77u);
    EXPECT_EQ(tsu_req_wait(5), TSU_ERR_INVALID_ARG);
    EXPECT_EQ(tsu_req_wait(TSU_REQ_NONE), TSU_OK);
    EXPECT_EQ(tsu_req_wait(TSU_REQ_ALL), TSU_OK);
    EXPECT_EQ(tsu_req_test(TSU_REQ_ALL), TSU_OK);
    tsu_req_t first = 0, second = 0;
    ASSERT_EQ(tsu::put_ordered(at(next, slot(me, 2)), mine(local_buf(2)), 8, TSU_REQ_NONE, &first),
              TSU_OK);
    EXPECT_EQ(first, 1u);
    EXPECT_EQ(tsu_try_get_ordered(mine(local_buf(2)), at(n, 0), 8, first, tsu_cb_none(), &second),
              TSU_ERR_BAD_RANK);
    EXPECT_EQ(tsu_try_copy_ordered(at(next, 0), at(me, mp::main_size() - 4), 8, first,
                                   tsu_cb_none(), &second),
              TSU_ERR_OUT_OF_BOUNDS);
    const uint64_t v = 1;
    EXPECT_EQ(tsu_try_atomic_ordered(at(next, 3), TSU_AOP_ADD, TSU_TYPE_UINT64, &v, nullptr,
                                     nullptr, first, tsu_cb_none(), &second),
              TSU_ERR_MISALIGNED);
    EXPECT_EQ(tsu_try_atomic_ordered(at(next, 8), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &v, nullptr,
                                     nullptr, first, tsu_cb_none(), &second),
              TSU_ERR_NULL_POINTER);
    EXPECT_EQ(second, 0u);
    EXPECT_EQ(tsu_req_wait(2), TSU_ERR_INVALID_ARG);  // refused calls gave no handle
    ASSERT_EQ(tsu::put_ordered(at(next, slot(me, 2)), mine(local_buf(2)), 8, first, &second),
              TSU_OK);
    EXPECT_EQ(second, 2u);
    EXPECT_EQ(tsu_req_wait(TSU_REQ_ALL), TSU_OK) << tsu_last_error();
  }).join();
  barrier();
}

// Inside a completion callback tsu_req_wait refuses to block.
TEST(Ordered, WaitInsideACallbackIsRefused) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  struct Probe {
    tsu_req_t h = 0;
    std::atomic<int32_t> seen{1234};
  } probe;
  tsu_req_t h = 0;
  ASSERT_EQ(tsu::put_ordered(at(next, slot(me, 0)), mine(local_buf(0)), 64, TSU_REQ_NONE, &h),
            TSU_OK);
  probe.h = h + 1;  // the request below: not complete while its own callback runs
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put_ordered(
                  at(next, slot(me, 0)), mine(local_buf(0)), 64, h,
                  tsu_cb([](tsu_status_t, void* a) {
                           auto* p = static_cast<Probe*>(a);
                           p->seen = tsu_req_wait(p->h);
                         },
                         &probe),
                  nullptr);
            }),
            TSU_OK);
  ASSERT_TRUE(mp::wait_until([&] { return probe.seen.load() != 1234; }, "the callback"));
  // From another thread than the owner the handle is unknown; from the owner
  // (bypass runs the callback in this thread) it would block: both refused.
  EXPECT_NE(probe.seen.load(), TSU_OK);
  EXPECT_EQ(tsu_req_wait(TSU_REQ_ALL), TSU_OK);
  barrier();
}

}  // namespace
