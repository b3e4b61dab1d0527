// Large long active messages and multi-piece rendezvous truncation, meant for
// jobs spread over pseudo-nodes (the ctest entries run it across nodes, also
// over a lossy, reordering link) but correct on one node too:
// - long AMs of sizes around the message-size boundary up to a few MiB, from
//   two threads per rank to every rank at once: each handler sees exactly its
//   payload in place, runs exactly once, and each sender callback runs
//   exactly once, with TSU_OK;
// - a bad destination (out of bounds, unknown segment) fails at the target:
//   the callback gets the error, no handler runs, nothing is written;
// - a rendezvous message truncated into a smaller receive (several pieces
//   across nodes, and a zero-byte receive): TSU_ERR_TRUNCATED with the full
//   length at the receiver, TSU_OK at the sender.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "msg_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

constexpr uint32_t kHandler = 11;
constexpr uint32_t kThreads = 2;
constexpr uint64_t kAreaBase = 1u << 20;  // landing areas start here (main segment)
constexpr uint64_t kAreaSize = 4u << 20;  // one per (source rank, thread)
constexpr size_t kSizes[] = {0,          1,          4095,           (256u << 10) - 1,
                             256u << 10, (256u << 10) + 1, (1u << 20) + 3, (3u << 20) + 17};

unsigned char pattern(uint64_t src, uint64_t thread, uint64_t round, size_t i) {
  return static_cast<unsigned char>(src * 31 + thread * 17 + round * 7 + i * 13 + (i >> 8));
}

std::byte* main_base(size_t* size = nullptr) {
  void* base = nullptr;
  size_t s = 0;
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &s), TSU_OK);
  if (size) *size = s;
  return static_cast<std::byte*>(base);
}

// What the handler saw, per (source, thread).
struct Seen {
  explicit Seen(uint32_t n) : calls(n * kThreads) {}
  std::vector<std::atomic<uint64_t>> calls;
  std::atomic<uint64_t> errors{0};
};

void on_long(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs, void* payload,
             size_t len, void* ctx) {
  auto& seen = *static_cast<Seen*>(ctx);
  uint32_t src = 0;
  tsu_am_source(token, &src);
  // args: thread, round, length, source
  if (nargs != 4 || args[3] != src || args[0] >= kThreads) {
    seen.errors.fetch_add(1);
    return;
  }
  bool ok = args[2] == len;
  if (ok) {
    const auto* expected_at =
        main_base() + kAreaBase + (uint64_t{src} * kThreads + args[0]) * kAreaSize;
    ok = len == 0 ? payload == nullptr : payload == expected_at;
    const auto* p = static_cast<const unsigned char*>(payload);
    for (size_t i = 0; ok && i < len; ++i) ok = p[i] == pattern(src, args[0], args[1], i);
  }
  if (!ok) seen.errors.fetch_add(1);
  // Counted even if wrong, so waits end; and only after the payload was
  // checked: the next round rewrites the area once every handler counted.
  seen.calls[src * kThreads + args[0]].fetch_add(1);
}

TEST(AmLongLarge, SizesUpToMiBsFromThreadsExactlyOnce) {
  const uint32_t me = mp::rank(), n = mp::size();
  size_t seg_size = 0;
  main_base(&seg_size);
  ASSERT_GE(seg_size, kAreaBase + n * kThreads * kAreaSize) << "run with a larger TSU_SEGMENT_SIZE";
  Seen seen(n);
  ASSERT_EQ(tsu_am_register(kHandler, on_long, &seen), TSU_OK) << tsu_last_error();
  uint64_t round = 0;
  for (size_t len : kSizes) {
    // Two threads, each to every rank (itself included) at once: pieces of
    // different transfers to one target interleave.
    std::vector<std::unique_ptr<mp::Tracker>> trackers;
    for (uint32_t t = 0; t < kThreads; ++t) trackers.push_back(std::make_unique<mp::Tracker>(n));
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        std::vector<unsigned char> buf(len);
        for (size_t i = 0; i < len; ++i) buf[i] = pattern(me, t, round, i);
        for (uint32_t dst = 0; dst < n; ++dst) {
          const uint64_t args[4] = {t, round, len, me};
          const tsu_gaddr_t at =
              tsu_gaddr(dst, TSU_SEG_MAIN, kAreaBase + (uint64_t{me} * kThreads + t) * kAreaSize);
          EXPECT_EQ(trackers[t]->issue([&](tsu_cb_t cb) {
                      return tsu_try_am_long(dst, kHandler, args, 4, buf.data(), len, at, cb);
                    }),
                    TSU_OK)
              << tsu_last_error();
        }
        // The buffer may be reused once the call returned (the payload was
        // copied or sent): scribble over it before the completions arrive.
        if (len) std::memset(buf.data(), 0x5A, len);
        EXPECT_TRUE(trackers[t]->wait_all()) << "long AMs of " << len << " B";
      });
    for (auto& th : threads) th.join();
    for (auto& tr : trackers) tr->expect_all(TSU_OK);
    ++round;
    // Areas are reused next round: every handler of this round has run here
    // (intra-node the callback runs before the handler), then on every rank.
    mp::wait_until(
        [&] {
          for (const auto& c : seen.calls)
            if (c.load() < round) return false;
          return true;
        },
        "this round's handlers");
    mp::sync();
  }
  mp::sync();
  for (int i = 0; i < 20; ++i) tsu_progress();
  EXPECT_EQ(seen.errors.load(), 0u);
  for (uint32_t src = 0; src < n; ++src)
    for (uint32_t t = 0; t < kThreads; ++t)
      EXPECT_EQ(seen.calls[src * kThreads + t].load(), std::size(kSizes))
          << "handler runs for source " << src << " thread " << t;
  ASSERT_EQ(tsu_am_register(kHandler, nullptr, nullptr), TSU_OK);
}

TEST(AmLongLarge, BadDestinationFailsAtTargetAndWritesNothing) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t to = (me + 1) % n;
  size_t seg_size = 0;
  std::byte* base = main_base(&seg_size);
  constexpr size_t kGuard = 8192;
  std::memset(base + seg_size - kGuard, 0xAB, kGuard);
  Seen seen(n);
  ASSERT_EQ(tsu_am_register(kHandler, on_long, &seen), TSU_OK) << tsu_last_error();
  std::vector<unsigned char> buf((2u << 20) + 5, 0x11);
  const uint64_t args[4] = {0, 0, buf.size(), me};
  mp::Tracker oob(1), bad_seg(1);
  // Starts inside the segment, ends 2 MiB past it.
  EXPECT_EQ(oob.issue([&](tsu_cb_t cb) {
              return tsu_try_am_long(to, kHandler, args, 4, buf.data(), buf.size(),
                                     tsu_gaddr(to, TSU_SEG_MAIN, seg_size - 100), cb);
            }),
            TSU_OK);
  const uint64_t small_args[4] = {0, 0, 64, me};
  EXPECT_EQ(bad_seg.issue([&](tsu_cb_t cb) {
              return tsu_try_am_long(to, kHandler, small_args, 4, buf.data(), 64,
                                     tsu_gaddr(to, 200, 0), cb);
            }),
            TSU_OK);
  ASSERT_TRUE(oob.wait_all());
  ASSERT_TRUE(bad_seg.wait_all());
  oob.expect_all(TSU_ERR_OUT_OF_BOUNDS);
  bad_seg.expect_all(TSU_ERR_BAD_SEGMENT);
  mp::sync();
  for (int i = 0; i < 20; ++i) tsu_progress();
  for (size_t i = 0; i < kGuard; ++i)
    if (base[seg_size - kGuard + i] != std::byte{0xAB}) {
      ADD_FAILURE() << "byte " << i << " of the guard area was written";
      break;
    }
  EXPECT_EQ(seen.errors.load(), 0u);
  for (auto& c : seen.calls) EXPECT_EQ(c.load(), 0u) << "no handler for a failed long AM";
  ASSERT_EQ(tsu_am_register(kHandler, nullptr, nullptr), TSU_OK);
}

using mp::Done;

TEST(TaggedLarge, RendezvousTruncatedIntoSmallerReceive) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t to = (me + 1) % n, from = (me + n - 1) % n;
  const size_t len = (1u << 20) + 5, cap = 300001;
  std::vector<unsigned char> out(len);
  for (size_t i = 0; i < len; ++i) out[i] = pattern(me, 0, 9, i);
  std::vector<unsigned char> in(cap + 64, 0xEE);
  Done recv_big, recv_zero, sent_big, sent_zero;
  tsu_msg_status_t st_big{}, st_zero{};
  ASSERT_EQ(tsu_try_recv(from, 501, TSU_TAG_EXACT, in.data(), cap, &st_big, recv_big.cb(), nullptr),
            TSU_OK);
  ASSERT_EQ(tsu_try_recv(from, 502, TSU_TAG_EXACT, nullptr, 0, &st_zero, recv_zero.cb(), nullptr),
            TSU_OK);
  mp::sync();  // receives are posted everywhere
  ASSERT_EQ(mp::issue([&] { return tsu_try_send(to, 501, out.data(), len, sent_big.cb()); }), TSU_OK);
  ASSERT_EQ(mp::issue([&] { return tsu_try_send(to, 502, out.data(), 20000, sent_zero.cb()); }),
            TSU_OK);
  ASSERT_TRUE(recv_big.wait());
  ASSERT_TRUE(recv_zero.wait());
  ASSERT_TRUE(sent_big.wait());
  ASSERT_TRUE(sent_zero.wait());
  EXPECT_EQ(recv_big.st.load(), TSU_ERR_TRUNCATED);
  EXPECT_EQ(st_big.error, TSU_ERR_TRUNCATED);
  EXPECT_EQ(st_big.length, len);
  EXPECT_EQ(st_big.source, from);
  bool prefix_ok = true;
  for (size_t i = 0; i < cap && prefix_ok; ++i) prefix_ok = in[i] == pattern(from, 0, 9, i);
  EXPECT_TRUE(prefix_ok) << "the first cap bytes arrive";
  EXPECT_EQ(in[cap], 0xEE) << "nothing past the receive buffer";
  EXPECT_EQ(recv_zero.st.load(), TSU_ERR_TRUNCATED);
  EXPECT_EQ(st_zero.length, 20000u);
  EXPECT_EQ(sent_big.st.load(), TSU_OK);
  EXPECT_EQ(sent_zero.st.load(), TSU_OK);
  mp::sync();
  for (int i = 0; i < 20; ++i) tsu_progress();
  for (Done* d : {&recv_big, &recv_zero, &sent_big, &sent_zero})
    EXPECT_EQ(d->calls.load(), 1) << "each request completes exactly once";
}

}  // namespace
