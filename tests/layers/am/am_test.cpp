// Active messages: short/medium/long from many threads to every rank, counted
// exactly once and in order per sending thread; size limits; request/reply
// rules; long-AM target errors; back-pressure with a tiny ring (run with
// TSU_SHM_RING_SLOTS=2); handlers run in progress context and cannot block.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "msg_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

constexpr int kThreads = 3;
constexpr uint64_t kPerThread = 600;

struct Counts {
  explicit Counts(uint32_t n) : next(n * kThreads), bytes(n) {}
  std::vector<std::atomic<uint64_t>> next;
  std::vector<std::atomic<uint64_t>> bytes;
  std::atomic<uint64_t> total{0}, errors{0};
};

void counting_handler(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs, void* payload,
                      size_t len, void* ctx) {
  auto& c = *static_cast<Counts*>(ctx);
  uint32_t src = 0;
  tsu_am_source(token, &src);
  bool ok = nargs == 4 && args[2] == src && args[3] == len;
  const uint64_t thread = args[0], seq = args[1];
  auto& next = c.next[src * kThreads + thread];
  ok = ok && next.load() == seq;
  const auto* p = static_cast<const unsigned char*>(payload);
  for (size_t i = 0; ok && i < len; ++i) ok = p[i] == static_cast<unsigned char>(seq + i);
  // Handlers run in progress context: blocking calls refuse.
  if (seq == 0) ok = ok && tsu_quiet() == TSU_ERR_UNSUPPORTED;
  if (!ok) c.errors.fetch_add(1);
  next.store(seq + 1);
  c.bytes[src].fetch_add(len);
  c.total.fetch_add(1);
}

void send_all(int category, uint64_t* eagains_out) {
  const uint32_t me = mp::rank(), n = mp::size();
  const size_t medium_max = tsu_am_medium_max();
  ASSERT_GE(medium_max, 1024u);
  std::atomic<uint64_t> callbacks{0}, eagains{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      std::vector<unsigned char> buf(medium_max);
      for (uint64_t i = 0; i < kPerThread; ++i)
        for (uint32_t dst = 0; dst < n; ++dst) {
          size_t len = 0;
          if (category == 1) len = i % 500 == 0 ? medium_max : (i * 31) % 300;
          for (size_t k = 0; k < len; ++k) buf[k] = static_cast<unsigned char>(i + k);
          const uint64_t args[4] = {static_cast<uint64_t>(th), i, me, len};
          const tsu_cb_t cb = tsu_cb(
              [](tsu_status_t st, void* a) {
                if (st == TSU_OK) static_cast<std::atomic<uint64_t>*>(a)->fetch_add(1);
              },
              &callbacks);
          tsu_status_t st;
          for (;;) {
            if (category == 0) st = tsu_try_am_short(dst, 7, args, 4, cb);
            else st = tsu_try_am_medium(dst, 7, args, 4, buf.data(), len, cb);
            if (st != TSU_EAGAIN) break;
            eagains.fetch_add(1);
            tsu_progress();
            sched_yield();
          }
          ASSERT_EQ(st, TSU_OK) << tsu_last_error();
        }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(callbacks.load(), uint64_t{n} * kThreads * kPerThread) << "one callback per send";
  if (eagains_out) *eagains_out = eagains.load();
}

class Am : public ::testing::Test {
 protected:
  void SetUp() override {
    n = mp::size();
    counts = std::make_unique<Counts>(n);
    ASSERT_EQ(tsu_am_register(7, counting_handler, counts.get()), TSU_OK) << tsu_last_error();
  }
  void finish() {
    const uint64_t expected = uint64_t{n} * kThreads * kPerThread;
    EXPECT_TRUE(mp::wait_until([&] { return counts->total.load() >= expected; }, "all AMs"));
    mp::sync();
    for (int i = 0; i < 20; ++i) tsu_progress();
    EXPECT_EQ(counts->total.load(), expected) << "exactly once";
    EXPECT_EQ(counts->errors.load(), 0u);
    ASSERT_EQ(tsu_am_register(7, nullptr, nullptr), TSU_OK);
  }
  uint32_t n = 0;
  std::unique_ptr<Counts> counts;
};

TEST_F(Am, ShortFromThreadsToAllRanks) {
  uint64_t eagains = 0;
  send_all(0, &eagains);
  finish();
  if (std::getenv("TSU_SHM_RING_SLOTS") && n > 1) {
    EXPECT_GT(eagains, 0u) << "tiny ring pushes back";
  }
}

TEST_F(Am, MediumUpToMaxFromThreads) {
  send_all(1, nullptr);
  finish();
}

// Ranks on this rank's node (whose memory a long AM can be written to).
bool same_node(uint32_t a, uint32_t b) {
  uint32_t na = 0, nb = 0;
  EXPECT_EQ(tsu_node_of(a, &na), TSU_OK);
  EXPECT_EQ(tsu_node_of(b, &nb), TSU_OK);
  return na == nb;
}

// Long AMs from one thread per rank (each source owns its landing areas, and
// waits for its own deliveries before reusing one).  Intra-node the payload
// is written from here and the callback runs before the call returns; to a
// rank on another node it travels in messages and the callback runs when the
// target has run the handler.
TEST(AmLong, PayloadWrittenThenHandlerRuns) {
  const uint32_t me = mp::rank(), n = mp::size();
  struct State {
    std::atomic<uint64_t> got{0}, errors{0};
  } state;
  ASSERT_EQ(tsu_am_register(
                9,
                [](tsu_am_token_t* token, const uint64_t* args, uint32_t, void* payload, size_t len,
                   void* ctx) {
                  auto& s = *static_cast<State*>(ctx);
                  uint32_t src;
                  tsu_am_source(token, &src);
                  const auto* p = static_cast<const unsigned char*>(payload);
                  bool ok = len == args[1] && args[0] == src;
                  for (size_t i = 0; ok && i < len; ++i)
                    ok = p[i] == static_cast<unsigned char>(src + i + args[2]);
                  void* base;
                  size_t size;
                  tsu_segment_info(TSU_SEG_MAIN, &base, &size);
                  ok = ok && (len == 0 || p == static_cast<unsigned char*>(base) + 65536 + src * 16384);
                  if (!ok) s.errors.fetch_add(1);
                  s.got.fetch_add(1);
                },
                &state),
            TSU_OK);
  std::vector<unsigned char> buf(16384);
  const size_t sizes[] = {0, 1, 100, 8191, 16384};
  uint64_t rounds = 0;
  for (size_t len : sizes) {
    for (uint64_t r = 0; r < 3; ++r, ++rounds) {
      for (size_t i = 0; i < len; ++i) buf[i] = static_cast<unsigned char>(me + i + rounds);
      for (uint32_t dst = 0; dst < n; ++dst) {
        const uint64_t args[3] = {me, len, rounds};
        std::atomic<tsu_status_t> cb_st{1};
        EXPECT_EQ(mp::issue([&] {
                    return tsu_try_am_long(dst, 9, args, 3, buf.data(), len,
                                           tsu_gaddr(dst, TSU_SEG_MAIN, 65536 + me * 16384),
                                           tsu_cb([](tsu_status_t st, void* a) {
                                             static_cast<std::atomic<tsu_status_t>*>(a)->store(st);
                                           }, &cb_st));
                  }),
                  TSU_OK);
        if (same_node(me, dst))
          EXPECT_EQ(cb_st.load(), TSU_OK) << "intra-node: completes before returning";
        else
          mp::wait_until([&] { return cb_st.load() != 1; }, "off-node long AM completion");
        EXPECT_EQ(cb_st.load(), TSU_OK);
      }
      // Everyone's area is reused next round: wait for all deliveries.
      mp::wait_until([&] { return state.got.load() == (rounds + 1) * n; }, "long AMs");
      mp::sync();
    }
  }
  EXPECT_EQ(state.errors.load(), 0u);
  // A destination past the segment: the callback gets the target's error, no
  // handler runs; a destination on another rank is an argument error.
  std::atomic<tsu_status_t> cb_st{1};
  void* base;
  size_t size;
  ASSERT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &size), TSU_OK);
  EXPECT_EQ(mp::issue([&] {
              return tsu_try_am_long((me + 1) % n, 9, nullptr, 0, buf.data(), 64,
                                     tsu_gaddr((me + 1) % n, TSU_SEG_MAIN, size - 8),
                                     tsu_cb([](tsu_status_t st, void* a) {
                                       static_cast<std::atomic<tsu_status_t>*>(a)->store(st);
                                     }, &cb_st));
            }),
            TSU_OK);
  mp::wait_until([&] { return cb_st.load() != 1; }, "out-of-bounds long AM completion");
  EXPECT_EQ(cb_st.load(), TSU_ERR_OUT_OF_BOUNDS);
  if (n > 1) {
    EXPECT_EQ(tsu_try_am_long(0, 9, nullptr, 0, buf.data(), 8, tsu_gaddr(1, 0, 0), tsu_cb_none()),
              TSU_ERR_INVALID_ARG);
  }
  mp::sync();
  for (int i = 0; i < 20; ++i) tsu_progress();
  EXPECT_EQ(state.got.load(), rounds * n) << "no handler for the failed one";
  ASSERT_EQ(tsu_am_register(9, nullptr, nullptr), TSU_OK);
}

TEST(AmLimits, ArgumentErrors) {
  const uint32_t n = mp::size();
  const uint64_t args[5] = {};
  std::vector<char> big(tsu_am_medium_max() + 1);
  EXPECT_EQ(tsu_try_am_short(n, 1, args, 1, tsu_cb_none()), TSU_ERR_BAD_RANK);
  EXPECT_EQ(tsu_try_am_short(0, 1, args, 5, tsu_cb_none()), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_am_short(0, TSU_AM_MAX_HANDLER + 1, args, 1, tsu_cb_none()),
            TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_am_short(0, 1, nullptr, 1, tsu_cb_none()), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_try_am_medium(0, 1, args, 0, big.data(), big.size(), tsu_cb_none()),
            TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_try_am_medium(0, 1, args, 0, nullptr, 4, tsu_cb_none()), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_am_reply(nullptr, 1, nullptr, 0, nullptr, 0), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_am_register(TSU_AM_MAX_HANDLER + 1, nullptr, nullptr), TSU_ERR_INVALID_ARG);
}

// Request -> reply, many in flight, from two threads: every request gets one
// reply with its arguments; a second reply and a reply to a reply refuse.
struct ReplyState {
  std::atomic<uint64_t> replies{0}, errors{0}, sum{0};
};
void request_handler(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs, void* payload,
                     size_t len, void*) {
  const uint64_t out[2] = {args[0] + 1, nargs};
  tsu_am_reply(token, 21, out, 2, payload, len);  // echo the payload back
  // A second reply is refused (recorded by the requester through arg 1).
  if (tsu_am_reply(token, 21, out, 2, nullptr, 0) != TSU_ERR_UNSUPPORTED) std::abort();
}
void reply_handler(tsu_am_token_t* token, const uint64_t* args, uint32_t, void* payload,
                   size_t len, void* ctx) {
  auto& s = *static_cast<ReplyState*>(ctx);
  if (tsu_am_reply(token, 21, nullptr, 0, nullptr, 0) != TSU_ERR_UNSUPPORTED) s.errors++;
  const auto* p = static_cast<const unsigned char*>(payload);
  for (size_t i = 0; i < len; ++i)
    if (p[i] != static_cast<unsigned char>(args[0] - 1 + i)) {
      s.errors++;
      break;
    }
  s.sum.fetch_add(args[0]);
  s.replies.fetch_add(1);
}

TEST(AmReply, RequestReplyChains) {
  const uint32_t me = mp::rank(), n = mp::size();
  ReplyState state;
  ASSERT_EQ(tsu_am_register(20, request_handler, nullptr), TSU_OK);
  ASSERT_EQ(tsu_am_register(21, reply_handler, &state), TSU_OK);
  constexpr uint64_t kRequests = 1000;
  std::vector<std::thread> threads;
  for (int th = 0; th < 2; ++th)
    threads.emplace_back([&, th] {
      unsigned char buf[200];
      for (uint64_t i = 0; i < kRequests; ++i) {
        const uint64_t k = i * 2 + static_cast<uint64_t>(th);
        const size_t len = k % 200;
        for (size_t j = 0; j < len; ++j) buf[j] = static_cast<unsigned char>(k + j);
        const uint64_t args[1] = {k};
        const uint32_t dst = static_cast<uint32_t>((me + k) % n);
        ASSERT_EQ(mp::issue([&] { return tsu_try_am_medium(dst, 20, args, 1, buf, len, tsu_cb_none()); }),
                  TSU_OK);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(mp::wait_until([&] { return state.replies.load() == 2 * kRequests; }, "replies"));
  EXPECT_EQ(state.errors.load(), 0u);
  // sum of (k+1) for k in [0, 2*kRequests)
  EXPECT_EQ(state.sum.load(), (2 * kRequests) * (2 * kRequests + 1) / 2);
  mp::sync();
  ASSERT_EQ(tsu_am_register(20, nullptr, nullptr), TSU_OK);
  ASSERT_EQ(tsu_am_register(21, nullptr, nullptr), TSU_OK);
}

}  // namespace
