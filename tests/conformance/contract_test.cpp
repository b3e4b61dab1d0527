// The API contract, the same on every route.  One program, instantiated by
// tests/conformance/CMakeLists.txt over every route a request can take: the
// rank itself, node peers with bypass, node peers through the progress
// engine, manual progress, and other (pseudo-)nodes over udp.  Every test
// aims each request at every rank of the job (itself included), so one run
// covers every route the job has.
//
// Sentinels: every byte a request must not touch is filled with a known value
// by its owner first and checked by its owner afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mp_util.hpp"

namespace {

constexpr uint8_t kTargetSentinel = 0xA5;  // main segments, outside the scratch area
constexpr uint8_t kLocalSentinel = 0x5A;   // the issuer's own landing buffers
constexpr uint64_t kScratch = 64 << 10;    // [0, kScratch) of main: exchange slots

using mp::outcome;

// Every rank fills its main segment past the scratch area with the sentinel.
void fill_main_sentinel() {
  std::memset(mp::main_base() + kScratch, kTargetSentinel, mp::main_size() - kScratch);
  mp::barrier();
}
void expect_main_sentinel(const char* what) {
  mp::barrier();  // every request of every rank has completed
  const std::size_t bad =
      mp::check_fill(mp::main_base() + kScratch, mp::main_size() - kScratch, kTargetSentinel);
  EXPECT_EQ(bad, SIZE_MAX) << what << ": rank " << mp::rank() << "'s main segment was written at "
                           << "offset " << (bad == SIZE_MAX ? 0 : bad + kScratch);
}

// The issuer's own memory: a segment of its own for sources and landing
// buffers, so the main segments hold nothing but sentinels.
struct LocalBuffer {
  tsu_seg_t seg = 0;
  uint8_t* base = nullptr;
  std::size_t size = 0;
  explicit LocalBuffer(std::size_t bytes) : size(bytes) {
    void* b = nullptr;
    EXPECT_EQ(tsu_segment_alloc(bytes, &seg, &b), TSU_OK) << tsu_last_error();
    base = static_cast<uint8_t*>(b);
    std::memset(base, kLocalSentinel, bytes);
  }
  ~LocalBuffer() { EXPECT_EQ(tsu_segment_free(seg), TSU_OK); }
};

// Requests that run past the end of the target's main segment, in sizes that
// fit in one message, span several, and fill many udp pieces (256 KiB each).
struct Overrun {
  uint64_t offset;  // from the segment's end: offset = size - back
  uint64_t back;
  std::size_t len;
};
std::vector<Overrun> overruns() {
  return {{50, 50, 100},           // one byte past the end
          {0, 0, 1},               // starts at the end
          {1000, 1000, 3000},      // a few messages' worth
          {300000, 300000, 400000} /* the outside program's case: 300,000 B fit */};
}

TEST(Contract, OutOfBoundsPutWritesNothing) {
  fill_main_sentinel();
  const uint32_t n = mp::size();
  const uint64_t size = mp::main_size();
  LocalBuffer src(512 << 10);
  mp::fill_pattern(src.base, src.size, mp::rank(), 0);
  for (uint32_t t = 0; t < n; ++t) {
    for (const Overrun& o : overruns()) {
      const tsu_status_t st = outcome([&](tsu_cb_t cb) {
        return tsu_try_put(tsu_gaddr(t, TSU_SEG_MAIN, size - o.back), tsu_laddr(src.seg, 0), o.len,
                           cb);
      });
      EXPECT_EQ(st, TSU_ERR_OUT_OF_BOUNDS) << "put of " << o.len << " B at size-" << o.back
                                           << " to rank " << t;
    }
    // A range whose end overflows 64 bits (offset near UINT64_MAX).
    EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                return tsu_try_put(tsu_gaddr(t, TSU_SEG_MAIN, UINT64_MAX - 10),
                                   tsu_laddr(src.seg, 0), 100, cb);
              }),
              TSU_ERR_OUT_OF_BOUNDS)
        << "put whose range end overflows, to rank " << t;
    // An offset past the end, even for zero bytes.
    EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                return tsu_try_put(tsu_gaddr(t, TSU_SEG_MAIN, size + 1), tsu_laddr(src.seg, 0), 0,
                                   cb);
              }),
              TSU_ERR_OUT_OF_BOUNDS)
        << "empty put past the end of rank " << t;
  }
  expect_main_sentinel("out-of-bounds puts");
}

TEST(Contract, OutOfBoundsGetWritesNothing) {
  fill_main_sentinel();
  const uint32_t n = mp::size();
  const uint64_t size = mp::main_size();
  LocalBuffer dst(512 << 10);
  for (uint32_t t = 0; t < n; ++t) {
    for (const Overrun& o : overruns()) {
      const tsu_status_t st = outcome([&](tsu_cb_t cb) {
        return tsu_try_get(tsu_laddr(dst.seg, 0), tsu_gaddr(t, TSU_SEG_MAIN, size - o.back), o.len,
                           cb);
      });
      EXPECT_EQ(st, TSU_ERR_OUT_OF_BOUNDS) << "get of " << o.len << " B at size-" << o.back
                                           << " from rank " << t;
      const std::size_t bad = mp::check_fill(dst.base, dst.size, kLocalSentinel);
      EXPECT_EQ(bad, SIZE_MAX) << "a failed get of " << o.len << " B from rank " << t
                               << " wrote the caller's buffer at " << bad;
    }
  }
  expect_main_sentinel("out-of-bounds gets");
}

// Copies between every pair of ranks (third-party ones included), with the
// destination running past its end, or the source running past its end.
TEST(Contract, OutOfBoundsCopyWritesNothing) {
  fill_main_sentinel();
  const uint32_t n = mp::size();
  const uint64_t size = mp::main_size();
  for (uint32_t s = 0; s < n; ++s) {
    for (uint32_t d = 0; d < n; ++d) {
      // The outside program's case: the whole segment copied to offset 16.
      EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                  return tsu_try_copy(tsu_gaddr(d, TSU_SEG_MAIN, 16), tsu_gaddr(s, TSU_SEG_MAIN, 0),
                                      size, cb);
                }),
                TSU_ERR_OUT_OF_BOUNDS)
          << "copy of the whole segment from rank " << s << " to rank " << d << " offset 16";
      for (const Overrun& o : overruns()) {
        EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                    return tsu_try_copy(tsu_gaddr(d, TSU_SEG_MAIN, size - o.back),
                                        tsu_gaddr(s, TSU_SEG_MAIN, kScratch), o.len, cb);
                  }),
                  TSU_ERR_OUT_OF_BOUNDS)
            << "copy of " << o.len << " B from rank " << s << " to rank " << d << " at size-"
            << o.back;
        // Source past its end: the in-bounds destination stays untouched.
        EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                    return tsu_try_copy(tsu_gaddr(d, TSU_SEG_MAIN, kScratch),
                                        tsu_gaddr(s, TSU_SEG_MAIN, size - o.back), o.len, cb);
                  }),
                  TSU_ERR_OUT_OF_BOUNDS)
            << "copy of " << o.len << " B from rank " << s << " at size-" << o.back
            << " to rank " << d;
      }
    }
  }
  expect_main_sentinel("out-of-bounds copies");
}

// Lengths no segment can hold.  Put and get refuse them at the call (their
// local side); copy does too whenever a side is the caller's, or when the
// length exceeds any possible segment.  A copy between two other ranks of a
// length that only their segments can refute fails at the target.
TEST(Contract, ImpossibleLengthsAreRefused) {
  fill_main_sentinel();
  const uint32_t n = mp::size(), me = mp::rank();
  const std::size_t lengths[] = {SIZE_MAX, std::size_t{1} << 40};
  for (uint32_t t = 0; t < n; ++t) {
    for (std::size_t len : lengths) {
      bool at_call = false;
      EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                  return tsu_try_put(tsu_gaddr(t, TSU_SEG_MAIN, 16), tsu_laddr(TSU_SEG_MAIN, 0),
                                     len, cb);
                }, &at_call),
                TSU_ERR_OUT_OF_BOUNDS);
      EXPECT_TRUE(at_call) << "put of " << len << " B accepted";
      EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                  return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 16), tsu_gaddr(t, TSU_SEG_MAIN, 0),
                                     len, cb);
                }, &at_call),
                TSU_ERR_OUT_OF_BOUNDS);
      EXPECT_TRUE(at_call) << "get of " << len << " B accepted";
      EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                  return tsu_try_copy(tsu_gaddr(t, TSU_SEG_MAIN, 16), tsu_gaddr(me, TSU_SEG_MAIN, 0),
                                      len, cb);
                }, &at_call),
                TSU_ERR_OUT_OF_BOUNDS);
      EXPECT_TRUE(at_call) << "copy of " << len << " B from the caller's memory accepted";
      EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                  return tsu_try_copy(tsu_gaddr(me, TSU_SEG_MAIN, 16), tsu_gaddr(t, TSU_SEG_MAIN, 0),
                                      len, cb);
                }, &at_call),
                TSU_ERR_OUT_OF_BOUNDS);
      EXPECT_TRUE(at_call) << "copy of " << len << " B into the caller's memory accepted";
      // Neither side is the caller's.
      const uint32_t other = (t + 1) % n;
      EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                  return tsu_try_copy(tsu_gaddr(t, TSU_SEG_MAIN, 16),
                                      tsu_gaddr(other, TSU_SEG_MAIN, 0), len, cb);
                }, &at_call),
                TSU_ERR_OUT_OF_BOUNDS);
      if (len == SIZE_MAX) EXPECT_TRUE(at_call) << "third-party copy of SIZE_MAX B accepted";
    }
  }
  expect_main_sentinel("impossible lengths");
}

// Seed 002: all atomics on a word go one way.  Node peers reach registered
// memory only by Cross Memory Attach (not atomic with CPU atomics), so every
// route refuses atomics on it, the owner's own included; copies work.
TEST(Contract, AtomicsOnRegisteredMemoryAreRefusedOnEveryRoute) {
  const uint32_t n = mp::size(), me = mp::rank();
  alignas(64) static uint64_t words[64];
  for (auto& w : words) w = 1000 + me;
  tsu_seg_t seg = 0;
  ASSERT_EQ(tsu_mem_register(words, sizeof words, &seg), TSU_OK) << tsu_last_error();
  const std::vector<uint32_t> segs = mp::allgather_u32(seg, 0, 64);
  for (uint32_t t = 0; t < n; ++t) {
    const uint64_t one = 1, cmp = 1000 + t;
    uint64_t old = 77;
    EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                return tsu_try_atomic(tsu_gaddr(t, segs[t], 8 * me), TSU_AOP_FETCH_ADD,
                                      TSU_TYPE_UINT64, &one, nullptr, &old, cb);
              }),
              TSU_ERR_UNSUPPORTED)
        << "fetch-add on rank " << t << "'s registered memory";
    EXPECT_EQ(old, 77u) << "a refused atomic wrote its result";
    EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                return tsu_try_atomic(tsu_gaddr(t, segs[t], 8 * me), TSU_AOP_CAS, TSU_TYPE_UINT64,
                                      &one, &cmp, &old, cb);
              }),
              TSU_ERR_UNSUPPORTED)
        << "compare-and-swap on rank " << t << "'s registered memory";
    // Copies reach it: word 32 + me of rank t becomes my rank.
    uint64_t mine = me;
    std::memcpy(mp::main_base() + kScratch - 8, &mine, 8);
    EXPECT_EQ(mp::put_sync(tsu_gaddr(t, segs[t], 8 * (32 + me)),
                           tsu_laddr(TSU_SEG_MAIN, kScratch - 8), 8),
              TSU_OK)
        << "put to rank " << t << "'s registered memory";
  }
  mp::barrier();
  for (uint32_t r = 0; r < n; ++r) {
    EXPECT_EQ(words[r], 1000u + me) << "rank " << r << "'s refused atomic changed the word";
    EXPECT_EQ(words[32 + r], r) << "rank " << r << "'s put did not arrive";
  }
  mp::barrier();
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
}

// A rank blocked in tsu_barrier() serves requests aimed at it from every
// route, in manual progress too: a peer that needs a reply (an AM reply, a
// get, a fetching atomic) before it enters the barrier gets it.
std::atomic<uint32_t> g_replies{0};

void echo_request(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs, void*, size_t,
                  void*) {
  const uint64_t back = nargs ? args[0] + 1 : 0;
  EXPECT_EQ(tsu_am_reply(token, 41, &back, 1, nullptr, 0), TSU_OK);
}
void count_reply(tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
  g_replies.fetch_add(1);
}

TEST(Contract, BlockedBarrierServesRequestsFromEveryRoute) {
  ASSERT_EQ(tsu_am_register(40, echo_request, nullptr), TSU_OK) << tsu_last_error();
  ASSERT_EQ(tsu_am_register(41, count_reply, nullptr), TSU_OK) << tsu_last_error();
  const uint32_t n = mp::size(), me = mp::rank();
  uint64_t* word = reinterpret_cast<uint64_t*>(mp::main_base() + 4096);
  *word = 0;
  mp::barrier();
  for (uint32_t blocked = 0; blocked < n; ++blocked) {
    if (me == blocked) {
      ASSERT_EQ(tsu_barrier(), TSU_OK);  // does nothing else until all are in
      continue;
    }
    const uint32_t before = g_replies.load();
    const uint64_t arg = me;
    ASSERT_EQ(mp::issue([&] { return tsu_try_am_short(blocked, 40, &arg, 1, tsu_cb_none()); }),
              TSU_OK);
    EXPECT_TRUE(mp::wait_until([&] { return g_replies.load() > before; }, "the AM reply"))
        << "rank " << blocked << " blocked in tsu_barrier did not answer";
    EXPECT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, 0), tsu_gaddr(blocked, TSU_SEG_MAIN, 4096), 8),
              TSU_OK);
    const uint64_t one = 1;
    uint64_t old = 0;
    EXPECT_EQ(outcome([&](tsu_cb_t cb) {
                return tsu_try_atomic(tsu_gaddr(blocked, TSU_SEG_MAIN, 4096), TSU_AOP_FETCH_ADD,
                                      TSU_TYPE_UINT64, &one, nullptr, &old, cb);
              }),
              TSU_OK);
    ASSERT_EQ(tsu_barrier(), TSU_OK);
  }
  EXPECT_EQ(*word, n - 1) << "fetch-adds aimed at rank " << me << " while it was blocked";
  mp::barrier();
  ASSERT_EQ(tsu_am_register(40, nullptr, nullptr), TSU_OK);
  ASSERT_EQ(tsu_am_register(41, nullptr, nullptr), TSU_OK);
}

}  // namespace
