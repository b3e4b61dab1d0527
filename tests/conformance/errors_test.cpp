// Conformance: bad inputs on every route.  Every bad input returns its error
// and touches nothing.
//
// Per the contract: arguments and the caller's own (local-address) side are
// checked synchronously — the call returns the error, the callback never runs,
// tsu_last_error() names the function; problems found at the target (bounds,
// unknown or freed segment, atomics on registered memory) make the call return
// TSU_OK and the callback run once with the error.  Where the target is the
// caller's own memory (a job of one rank, or tsu_try_copy naming the caller's
// own memory by a global address), either form is accepted.  After every case
// the sentinel bytes around the targeted ranges (local and remote) and the
// result buffers must be unchanged; the peer's bytes are read through a
// pointer where this process maps them, with tsu_try_get otherwise.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "mp_util.hpp"

extern "C" tsu_status_t mp_try_atomic_raw(tsu_gaddr_t target, int op, int type, const void* operand,
                                         const void* compare, void* result, tsu_cb_t cb);

namespace {

using mp::barrier;

constexpr unsigned kThreads = 4;
constexpr uint64_t kDirOff = 0, kScratchOff = 256;
constexpr uint64_t kTargetOff = 64 * 1024;   // 16 KiB of sentinel, never written
constexpr uint64_t kTargetLen = 16 * 1024;
constexpr uint64_t kSrcOff = 128 * 1024;     // 16 KiB of pattern, the put source
constexpr uint64_t kDstOff = 192 * 1024;     // 16 KiB of sentinel, the get destination
constexpr uint64_t kLandOff = 256 * 1024;   // 8 x 16 KiB: read-back landing areas
constexpr unsigned kLandSlots = 8;
constexpr uint8_t kRemoteSentinel = 0xA5, kLocalSentinel = 0x5A;

enum class Expect { kSync, kAtTarget, kEither, kOk };

struct BadCase {
  std::string name;
  const char* fn;  // function named by tsu_last_error()
  tsu_status_t expected;
  Expect kind;
  std::function<tsu_status_t(tsu_cb_t)> call;
};

struct Env {
  uint32_t me = 0, n = 1, peer = 0;
  bool mapped = true;                     // this process maps the peer's memory
  std::size_t size = 0;                   // main segment size (same on all ranks)
  std::vector<tsu_seg_t> registered;     // a registered buffer of every rank
};
Env g;

// A landing area of the calling thread's own (threads of one test run
// together and take consecutive slots).
uint64_t landing_area() {
  static std::atomic<unsigned> next_slot{0};
  thread_local const unsigned slot = next_slot.fetch_add(1) % kLandSlots;
  return kLandOff + slot * kTargetLen;
}

// The peer's target range as it is now.
const uint8_t* peer_target() {
  if (g.mapped) return mp::gptr(tsu_gaddr(g.peer, TSU_SEG_MAIN, kTargetOff), kTargetLen);
  const uint64_t land = landing_area();
  std::memset(mp::main_base() + land, 0, kTargetLen);
  EXPECT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, land), tsu_gaddr(g.peer, TSU_SEG_MAIN, kTargetOff),
                         kTargetLen),
            TSU_OK);
  return mp::main_base() + land;
}

// Bytes that no case may change.
void expect_untouched(const std::string& what) {
  const uint8_t* remote = peer_target();
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(mp::check_fill(remote, kTargetLen, kRemoteSentinel), SIZE_MAX) << what << ": peer memory changed";
  const uint8_t* base = mp::main_base();
  EXPECT_EQ(mp::check_fill(base + kDstOff, kTargetLen, kLocalSentinel), SIZE_MAX) << what << ": local memory changed";
  EXPECT_EQ(mp::check_pattern(base + kSrcOff, kTargetLen, g.me, 0, 1), SIZE_MAX) << what << ": source changed";
}

void run_case(const BadCase& c) {
  SCOPED_TRACE(c.name);
  mp::Completion done;
  const tsu_status_t st = mp::issue([&] { return c.call(tsu_cb(mp::completion_cb, &done)); });
  auto expect_refused = [&] {
    EXPECT_EQ(st, c.expected) << tsu_strerror(st);
    const std::string msg = tsu_last_error();
    EXPECT_NE(msg.find(c.fn), std::string::npos) << "tsu_last_error() = '" << msg << "'";
    for (int i = 0; i < 5; ++i) tsu_progress();
    EXPECT_EQ(done.calls.load(), 0u) << "the callback of a rejected request ran";
  };
  auto expect_completed = [&](tsu_status_t want) {
    EXPECT_EQ(st, TSU_OK) << tsu_strerror(st) << ": " << tsu_last_error();
    if (st != TSU_OK) return;
    mp::wait_until([&] { return done.calls.load(std::memory_order_acquire) >= 1; }, c.name.c_str());
    EXPECT_EQ(done.calls.load(), 1u);
    EXPECT_EQ(done.status.load(), want) << tsu_strerror(done.status.load());
  };
  switch (c.kind) {
    case Expect::kSync: expect_refused(); break;
    case Expect::kAtTarget: expect_completed(c.expected); break;
    case Expect::kOk: expect_completed(TSU_OK); break;
    case Expect::kEither:
      if (st == TSU_OK) {
        expect_completed(c.expected);
      } else {
        expect_refused();
      }
      break;
  }
  expect_untouched(c.name);
}

class Errors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g.me = mp::rank();
    g.n = mp::size();
    g.peer = (g.me + 1) % g.n;
    g.mapped = mp::memory_peer(g.peer);
    g.size = mp::main_size();
    uint8_t* base = mp::main_base();
    std::memset(base + kTargetOff, kRemoteSentinel, kTargetLen);
    mp::fill_pattern(base + kSrcOff, kTargetLen, g.me, 0, 1);
    std::memset(base + kDstOff, kLocalSentinel, kTargetLen);
    static std::vector<uint8_t> user(4096, kRemoteSentinel);
    tsu_seg_t reg = 0;
    EXPECT_EQ(tsu_mem_register(user.data(), user.size(), &reg), TSU_OK);
    g.registered = mp::allgather_u32(reg, kDirOff, kScratchOff);
    mp::barrier();
  }
};

// Found at the target; at the call or at the target where the target is the
// caller itself (a job of one rank: its own memory is checked at the call).
Expect at_target() { return g.peer == g.me ? Expect::kEither : Expect::kAtTarget; }

std::vector<BadCase> rma_cases() {
  const uint32_t me = g.me, n = g.n, peer = g.peer;
  const uint64_t size = g.size;
  const tsu_laddr_t src = tsu_laddr(TSU_SEG_MAIN, kSrcOff), dst = tsu_laddr(TSU_SEG_MAIN, kDstOff);
  const tsu_gaddr_t target = tsu_gaddr(peer, TSU_SEG_MAIN, kTargetOff);
  tsu_laddr_t reserved = src;
  reserved.reserved = 1;
  tsu_laddr_t reserved_dst = dst;
  reserved_dst.reserved = 0x80000000u;
  const uint64_t huge = ~uint64_t{0} - 3;
  std::vector<BadCase> v;
  auto put = [&](std::string name, tsu_status_t e, Expect k, tsu_gaddr_t d, tsu_laddr_t s, std::size_t len) {
    v.push_back({"put " + name, "tsu_try_put", e, k, [=](tsu_cb_t cb) { return tsu_try_put(d, s, len, cb); }});
  };
  auto get = [&](std::string name, tsu_status_t e, Expect k, tsu_laddr_t d, tsu_gaddr_t s, std::size_t len) {
    v.push_back({"get " + name, "tsu_try_get", e, k, [=](tsu_cb_t cb) { return tsu_try_get(d, s, len, cb); }});
  };
  auto copy = [&](std::string name, tsu_status_t e, Expect k, tsu_gaddr_t d, tsu_gaddr_t s, std::size_t len) {
    v.push_back({"copy " + name, "tsu_try_copy", e, k, [=](tsu_cb_t cb) { return tsu_try_copy(d, s, len, cb); }});
  };
  // Ranks.
  put("rank == size", TSU_ERR_BAD_RANK, Expect::kSync, tsu_gaddr(n, 0, kTargetOff), src, 16);
  put("rank UINT32_MAX", TSU_ERR_BAD_RANK, Expect::kSync, tsu_gaddr(UINT32_MAX, 0, kTargetOff), src, 16);
  get("rank == size", TSU_ERR_BAD_RANK, Expect::kSync, dst, tsu_gaddr(n, 0, kTargetOff), 16);
  get("rank UINT32_MAX", TSU_ERR_BAD_RANK, Expect::kSync, dst, tsu_gaddr(UINT32_MAX, 0, kTargetOff), 16);
  copy("dst rank == size", TSU_ERR_BAD_RANK, Expect::kSync, tsu_gaddr(n, 0, kTargetOff), target, 16);
  copy("src rank UINT32_MAX", TSU_ERR_BAD_RANK, Expect::kSync, target, tsu_gaddr(UINT32_MAX, 0, kTargetOff), 16);
  // laddr.reserved.
  put("src.reserved != 0", TSU_ERR_INVALID_ARG, Expect::kSync, target, reserved, 16);
  get("dst.reserved != 0", TSU_ERR_INVALID_ARG, Expect::kSync, reserved_dst, target, 16);
  // Local side: checked at the call.
  put("src past the end", TSU_ERR_OUT_OF_BOUNDS, Expect::kSync, target, tsu_laddr(0, size - 8), 16);
  put("src offset overflows", TSU_ERR_OUT_OF_BOUNDS, Expect::kSync, target, tsu_laddr(0, huge), 16);
  put("src offset size+1, len 0", TSU_ERR_OUT_OF_BOUNDS, Expect::kSync, target, tsu_laddr(0, size + 1), 0);
  put("src unknown segment", TSU_ERR_BAD_SEGMENT, Expect::kSync, target, tsu_laddr(200, 0), 16);
  put("src segment UINT32_MAX", TSU_ERR_BAD_SEGMENT, Expect::kSync, target, tsu_laddr(UINT32_MAX, 0), 16);
  get("dst past the end", TSU_ERR_OUT_OF_BOUNDS, Expect::kSync, tsu_laddr(0, size - 1), target, 2);
  get("dst offset overflows", TSU_ERR_OUT_OF_BOUNDS, Expect::kSync, tsu_laddr(0, huge), target, 16);
  get("dst length huge", TSU_ERR_OUT_OF_BOUNDS, Expect::kSync, dst, target, SIZE_MAX);
  get("dst unknown segment", TSU_ERR_BAD_SEGMENT, Expect::kSync, tsu_laddr(77, 0), target, 16);
  // Remote side: found at the target.
  put("dst past the end", TSU_ERR_OUT_OF_BOUNDS, at_target(), tsu_gaddr(peer, 0, size - 8), src, 16);
  put("dst offset size+1, len 0", TSU_ERR_OUT_OF_BOUNDS, at_target(), tsu_gaddr(peer, 0, size + 1), src, 0);
  put("dst unknown segment", TSU_ERR_BAD_SEGMENT, at_target(), tsu_gaddr(peer, 200, 0), src, 16);
  put("dst segment UINT32_MAX", TSU_ERR_BAD_SEGMENT, at_target(), tsu_gaddr(peer, UINT32_MAX, 0), src, 16);
  get("src past the end", TSU_ERR_OUT_OF_BOUNDS, at_target(), dst, tsu_gaddr(peer, 0, size - 15), 16);
  get("src unknown segment", TSU_ERR_BAD_SEGMENT, at_target(), dst, tsu_gaddr(peer, 199, 0), 16);
  copy("dst past the end", TSU_ERR_OUT_OF_BOUNDS, at_target(), tsu_gaddr(peer, 0, size - 8), target, 16);
  copy("src past the end", TSU_ERR_OUT_OF_BOUNDS, at_target(), target, tsu_gaddr(peer, 0, size - 8), 16);
  copy("src unknown segment", TSU_ERR_BAD_SEGMENT, at_target(), target, tsu_gaddr(peer, 150, 0), 16);
  copy("dst unknown segment", TSU_ERR_BAD_SEGMENT, at_target(), tsu_gaddr(peer, 150, 0), target, 16);
  // The caller's own memory named by a global address.
  copy("self dst past the end", TSU_ERR_OUT_OF_BOUNDS, Expect::kEither, tsu_gaddr(me, 0, size - 8), target, 16);
  copy("self src unknown segment", TSU_ERR_BAD_SEGMENT, Expect::kEither, tsu_gaddr(me, 0, kDstOff), tsu_gaddr(me, 123, 0), 16);
  put("self dst offset overflows", TSU_ERR_OUT_OF_BOUNDS, Expect::kEither, tsu_gaddr(me, 0, huge), src, 16);
  // Valid edge cases: zero length, at the very end.
  put("len 0 at the end", TSU_OK, Expect::kOk, tsu_gaddr(peer, 0, size), src, 0);
  get("len 0 at the end", TSU_OK, Expect::kOk, tsu_laddr(0, size), tsu_gaddr(peer, 0, size), 0);
  copy("len 0", TSU_OK, Expect::kOk, tsu_gaddr(peer, 0, size), tsu_gaddr(me, 0, 0), 0);
  return v;
}

// Ranges at the target whose end overflows 64 bits (see RangeOverflowAtTarget).
std::vector<BadCase> overflow_cases() {
  const uint32_t peer = g.peer;
  const tsu_laddr_t src = tsu_laddr(TSU_SEG_MAIN, kSrcOff), dst = tsu_laddr(TSU_SEG_MAIN, kDstOff);
  const uint64_t huge = ~uint64_t{0} - 3;
  const tsu_gaddr_t at = tsu_gaddr(peer, 0, huge);
  return {{"put dst offset overflows", "tsu_try_put", TSU_ERR_OUT_OF_BOUNDS, at_target(),
           [=](tsu_cb_t cb) { return tsu_try_put(at, src, 16, cb); }},
          {"get src offset overflows", "tsu_try_get", TSU_ERR_OUT_OF_BOUNDS, at_target(),
           [=](tsu_cb_t cb) { return tsu_try_get(dst, at, 16, cb); }}};
}

std::vector<BadCase> atomic_cases() {
  const uint32_t n = g.n, peer = g.peer;
  const uint64_t size = g.size;
  std::vector<BadCase> v;
  // Operands live as long as the cases (captured by value into the closures).
  struct Bufs {
    uint64_t operand = 1, compare = 0;
    uint64_t result = 0x7777777777777777ull;
  };
  auto add = [&](std::string name, tsu_status_t e, Expect k, tsu_gaddr_t t, tsu_aop_t op,
                 tsu_atype_t type, bool has_operand = true, bool has_compare = true,
                 bool has_result = true) {
    auto b = std::make_shared<Bufs>();
    v.push_back({"atomic " + name, "tsu_try_atomic", e, k, [=](tsu_cb_t cb) {
                   // Earlier runs of this case (rejected or failed at the
                   // target) never wrote the result.
                   EXPECT_EQ(b->result, 0x7777777777777777ull);
                   const tsu_status_t st = tsu_try_atomic(
                       t, op, type, has_operand ? &b->operand : nullptr,
                       has_compare ? &b->compare : nullptr, has_result ? &b->result : nullptr, cb);
                   if (st != TSU_OK) {  // rejected: the result buffer is untouched
                     EXPECT_EQ(b->result, 0x7777777777777777ull);
                   }
                   return st;
                 }});
  };
  const tsu_gaddr_t w = tsu_gaddr(peer, TSU_SEG_MAIN, kTargetOff);
  add("rank == size", TSU_ERR_BAD_RANK, Expect::kSync, tsu_gaddr(n, 0, kTargetOff), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64);
  add("rank UINT32_MAX", TSU_ERR_BAD_RANK, Expect::kSync, tsu_gaddr(UINT32_MAX, 0, kTargetOff), TSU_AOP_LOAD, TSU_TYPE_INT32);
  add("u64 at offset 4", TSU_ERR_MISALIGNED, Expect::kSync, tsu_gaddr_add(w, 4), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64);
  add("i64 at offset 1", TSU_ERR_MISALIGNED, Expect::kSync, tsu_gaddr_add(w, 1), TSU_AOP_STORE, TSU_TYPE_INT64);
  add("i32 at offset 2", TSU_ERR_MISALIGNED, Expect::kSync, tsu_gaddr_add(w, 2), TSU_AOP_SWAP, TSU_TYPE_INT32);
  add("u32 at offset 7", TSU_ERR_MISALIGNED, Expect::kSync, tsu_gaddr_add(w, 7), TSU_AOP_CAS, TSU_TYPE_UINT32);
  add("double at offset 12", TSU_ERR_MISALIGNED, Expect::kSync, tsu_gaddr_add(w, 12), TSU_AOP_ADD, TSU_TYPE_DOUBLE);
  for (tsu_aop_t op : {TSU_AOP_FETCH_AND, TSU_AOP_FETCH_OR, TSU_AOP_FETCH_XOR, TSU_AOP_AND, TSU_AOP_OR, TSU_AOP_XOR})
    add("bit op " + std::to_string(op) + " on DOUBLE", TSU_ERR_INVALID_ARG, Expect::kSync, w, op, TSU_TYPE_DOUBLE);
  add("op 12", TSU_ERR_INVALID_ARG, Expect::kSync, w, static_cast<tsu_aop_t>(12), TSU_TYPE_UINT64);
  add("type 5", TSU_ERR_INVALID_ARG, Expect::kSync, w, TSU_AOP_ADD, static_cast<tsu_atype_t>(5));
  for (auto [op, type] : {std::pair{-1, 3}, std::pair{2, -1}, std::pair{1000, 0}, std::pair{0, 1000}}) {
    auto b = std::make_shared<Bufs>();
    v.push_back({"atomic raw op " + std::to_string(op) + " type " + std::to_string(type), "tsu_try_atomic",
                 TSU_ERR_INVALID_ARG, Expect::kSync, [=](tsu_cb_t cb) {
                   return mp_try_atomic_raw(w, op, type, &b->operand, &b->compare, &b->result, cb);
                 }});
  }
  // NULL pointers where the op needs them.
  for (tsu_aop_t op : {TSU_AOP_STORE, TSU_AOP_ADD, TSU_AOP_FETCH_ADD, TSU_AOP_SWAP, TSU_AOP_CAS, TSU_AOP_FETCH_OR, TSU_AOP_XOR})
    add("NULL operand, op " + std::to_string(op), TSU_ERR_NULL_POINTER, Expect::kSync, w, op, TSU_TYPE_UINT64, false);
  add("CAS NULL compare", TSU_ERR_NULL_POINTER, Expect::kSync, w, TSU_AOP_CAS, TSU_TYPE_INT64, true, false);
  add("CAS double NULL compare", TSU_ERR_NULL_POINTER, Expect::kSync, w, TSU_AOP_CAS, TSU_TYPE_DOUBLE, true, false);
  for (tsu_aop_t op : {TSU_AOP_LOAD, TSU_AOP_FETCH_ADD, TSU_AOP_SWAP, TSU_AOP_CAS, TSU_AOP_FETCH_AND, TSU_AOP_FETCH_XOR})
    add("NULL result, op " + std::to_string(op), TSU_ERR_NULL_POINTER, Expect::kSync, w, op, TSU_TYPE_UINT32, true, true, false);
  // At the target.
  add("past the end", TSU_ERR_OUT_OF_BOUNDS, at_target(), tsu_gaddr(peer, 0, size), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64);
  add("u32 at the end", TSU_ERR_OUT_OF_BOUNDS, at_target(), tsu_gaddr(peer, 0, size), TSU_AOP_SWAP, TSU_TYPE_UINT32);
  add("offset overflows", TSU_ERR_OUT_OF_BOUNDS, at_target(), tsu_gaddr(peer, 0, ~uint64_t{0} - 7), TSU_AOP_LOAD, TSU_TYPE_INT64);
  add("unknown segment", TSU_ERR_BAD_SEGMENT, at_target(), tsu_gaddr(peer, 201, 0), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64);
  add("segment UINT32_MAX", TSU_ERR_BAD_SEGMENT, at_target(), tsu_gaddr(peer, UINT32_MAX, 0), TSU_AOP_CAS, TSU_TYPE_UINT64);
  // Registered memory takes no atomics on any route, the owner's own included.
  add("peer's registered memory", TSU_ERR_UNSUPPORTED, at_target(),
      tsu_gaddr(peer, g.registered[peer], 8), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64);
  add("peer's registered memory, store", TSU_ERR_UNSUPPORTED, at_target(),
      tsu_gaddr(peer, g.registered[peer], 0), TSU_AOP_STORE, TSU_TYPE_UINT32);
  return v;
}

// The table of RMA rejections, run concurrently by several threads (each
// checks its own tsu_last_error()).
TEST_F(Errors, RmaBadArguments) {
  const auto cases = rma_cases();
  mp::run_threads(kThreads, [&](unsigned tid) {
    for (std::size_t i = tid; i < cases.size() + tid; ++i) run_case(cases[i % cases.size()]);
    EXPECT_EQ(tsu_quiet(), TSU_OK);
  });
  barrier();
  expect_untouched("after all RMA cases");
  barrier();
}

// A put or get whose target range overflows 64 bits fails at the target with
// TSU_ERR_OUT_OF_BOUNDS, as any range past the segment's end.
TEST_F(Errors, RangeOverflowAtTarget) {
  const auto cases = overflow_cases();
  mp::run_threads(kThreads, [&](unsigned tid) {
    for (std::size_t i = tid; i < cases.size() + tid; ++i) run_case(cases[i % cases.size()]);
    EXPECT_EQ(tsu_quiet(), TSU_OK);
  });
  barrier();
  expect_untouched("after the overflow cases");
  barrier();
}

TEST_F(Errors, AtomicBadArguments) {
  const auto cases = atomic_cases();
  mp::run_threads(kThreads, [&](unsigned tid) {
    for (std::size_t i = tid; i < cases.size() + tid; ++i) run_case(cases[i % cases.size()]);
    EXPECT_EQ(tsu_quiet(), TSU_OK);
  });
  barrier();
  expect_untouched("after all atomic cases");
  // The peer's registered buffer was never written (read it back: CMA on a
  // node, messages across nodes).
  EXPECT_EQ(mp::get_sync(tsu_laddr(0, kScratchOff + 512), tsu_gaddr(g.peer, g.registered[g.peer], 0), 64), TSU_OK);
  EXPECT_EQ(mp::check_fill(mp::main_base() + kScratchOff + 512, 64, kRemoteSentinel), SIZE_MAX);
  barrier();
}

// A rejected request is not outstanding: quiet returns, a fence lets the next
// request through at once.
TEST_F(Errors, RejectedRequestsAreNotOutstanding) {
  ASSERT_EQ(tsu_quiet(), TSU_OK);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(tsu_try_put(tsu_gaddr(g.n, 0, 0), tsu_laddr(0, kSrcOff), 8, tsu_cb_none()), TSU_ERR_BAD_RANK);
    uint64_t r = 0;
    EXPECT_EQ(tsu_try_atomic(tsu_gaddr(g.peer, 0, 3), TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr, nullptr, &r, tsu_cb_none()),
              TSU_ERR_MISALIGNED);
  }
  EXPECT_EQ(tsu_fence(), TSU_OK);
  tsu_counter_t c;
  tsu_counter_init(&c);
  EXPECT_EQ(tsu_try_get(tsu_laddr(0, kScratchOff + 1024), tsu_gaddr(g.peer, 0, kSrcOff), 8, tsu_counter_cb(&c)), TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
  EXPECT_EQ(tsu_quiet(), TSU_OK);
  barrier();
}

// Freed segments: local uses are refused at the call, remote uses fail at the
// target; ids are never reused.
TEST_F(Errors, FreedSegments) {
  const uint32_t me = g.me, peer = g.peer;
  tsu_seg_t seg = 0;
  void* base = nullptr;
  ASSERT_EQ(tsu_segment_alloc(8192, &seg, &base), TSU_OK);
  std::memset(base, 0x11, 8192);
  std::vector<uint8_t> user(8192, 0x22);
  tsu_seg_t reg = 0;
  ASSERT_EQ(tsu_mem_register(user.data(), user.size(), &reg), TSU_OK);
  const auto segs = mp::allgather_u32(seg, kDirOff, kScratchOff);
  const auto regs = mp::allgather_u32(reg, kDirOff, kScratchOff);
  // Both work before the free.
  EXPECT_EQ(mp::get_sync(tsu_laddr(0, kScratchOff + 1024), tsu_gaddr(peer, segs[peer], 8), 8), TSU_OK);
  EXPECT_EQ(mp::check_fill(mp::main_base() + kScratchOff + 1024, 8, 0x11), SIZE_MAX);
  EXPECT_EQ(mp::get_sync(tsu_laddr(0, kScratchOff + 1024), tsu_gaddr(peer, regs[peer], 8), 8), TSU_OK);
  EXPECT_EQ(mp::check_fill(mp::main_base() + kScratchOff + 1024, 8, 0x22), SIZE_MAX);
  barrier();
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
  EXPECT_EQ(tsu_segment_free(reg), TSU_OK);
  barrier();

  const tsu_laddr_t src = tsu_laddr(TSU_SEG_MAIN, kSrcOff);
  std::vector<BadCase> v;
  for (auto [what, id, remote_id] : {std::tuple{"allocated", seg, segs[peer]}, std::tuple{"registered", reg, regs[peer]}}) {
    const std::string w = what;
    const tsu_seg_t mine = id, theirs = remote_id;
    v.push_back({"put into peer's freed " + w, "tsu_try_put", TSU_ERR_BAD_SEGMENT, at_target(),
                 [=](tsu_cb_t cb) { return tsu_try_put(tsu_gaddr(peer, theirs, 0), src, 16, cb); }});
    v.push_back({"get from peer's freed " + w, "tsu_try_get", TSU_ERR_BAD_SEGMENT, at_target(),
                 [=](tsu_cb_t cb) { return tsu_try_get(tsu_laddr(0, kDstOff), tsu_gaddr(peer, theirs, 0), 16, cb); }});
    v.push_back({"copy into peer's freed " + w, "tsu_try_copy", TSU_ERR_BAD_SEGMENT, at_target(),
                 [=](tsu_cb_t cb) { return tsu_try_copy(tsu_gaddr(peer, theirs, 0), tsu_gaddr(peer, 0, kSrcOff), 16, cb); }});
    v.push_back({"put from my freed " + w, "tsu_try_put", TSU_ERR_BAD_SEGMENT, Expect::kSync,
                 [=](tsu_cb_t cb) { return tsu_try_put(tsu_gaddr(peer, 0, kTargetOff), tsu_laddr(mine, 0), 16, cb); }});
    v.push_back({"get into my freed " + w, "tsu_try_get", TSU_ERR_BAD_SEGMENT, Expect::kSync,
                 [=](tsu_cb_t cb) { return tsu_try_get(tsu_laddr(mine, 0), tsu_gaddr(peer, 0, kSrcOff), 16, cb); }});
    v.push_back({"copy from my freed " + w, "tsu_try_copy", TSU_ERR_BAD_SEGMENT, Expect::kEither,
                 [=](tsu_cb_t cb) { return tsu_try_copy(tsu_gaddr(peer, 0, kTargetOff), tsu_gaddr(me, mine, 0), 16, cb); }});
  }
  v.push_back({"atomic on peer's freed segment", "tsu_try_atomic", TSU_ERR_BAD_SEGMENT, at_target(), [=](tsu_cb_t cb) {
                 static uint64_t one = 1, result = 0;
                 return tsu_try_atomic(tsu_gaddr(peer, segs[peer], 0), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &one, nullptr, &result, cb);
               }});
  mp::run_threads(2, [&](unsigned tid) {
    for (std::size_t i = tid; i < v.size() + tid; ++i) run_case(v[i % v.size()]);
  });
  // The registered user memory was not written after deregistration.
  EXPECT_EQ(mp::check_fill(user.data(), user.size(), 0x22), SIZE_MAX);

  void* p = nullptr;
  std::size_t sz = 0;
  EXPECT_EQ(tsu_segment_free(seg), TSU_ERR_BAD_SEGMENT);
  EXPECT_NE(std::string(tsu_last_error()).find("tsu_segment_free"), std::string::npos);
  EXPECT_EQ(tsu_segment_free(reg), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_segment_info(seg, &p, &sz), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_laddr_ptr(tsu_laddr(seg, 0), 8, &p), TSU_ERR_BAD_SEGMENT);
  // A rank on another node is never mapped, whatever the address.
  EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(peer, segs[peer], 0), 8, &p),
            g.mapped ? TSU_ERR_BAD_SEGMENT : TSU_ERR_UNREACHABLE);
  tsu_laddr_t l{};
  EXPECT_EQ(tsu_laddr_of(user.data(), &l), TSU_ERR_BAD_SEGMENT) << "deregistered memory still found";
  // Ids are never reused.
  tsu_seg_t again = 0;
  void* again_base = nullptr;
  ASSERT_EQ(tsu_segment_alloc(4096, &again, &again_base), TSU_OK);
  EXPECT_NE(again, seg);
  EXPECT_NE(again, reg);
  EXPECT_EQ(tsu_segment_free(again), TSU_OK);
  barrier();
}

TEST_F(Errors, OtherCalls) {
  const uint32_t n = g.n;
  void* p = nullptr;
  std::size_t sz = 0;
  tsu_seg_t seg = 0;
  uint32_t u = 0;
  auto named = [](const char* fn) {
    const std::string msg = tsu_last_error();
    return msg.find(fn) != std::string::npos;
  };
  EXPECT_EQ(tsu_init(nullptr), TSU_ERR_ALREADY_INITIALIZED);
  EXPECT_TRUE(named("tsu_init"));
  EXPECT_EQ(tsu_initialized(), 1);
  EXPECT_EQ(tsu_segment_free(TSU_SEG_MAIN), TSU_ERR_INVALID_ARG);
  EXPECT_TRUE(named("tsu_segment_free"));
  EXPECT_EQ(tsu_segment_free(12345), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_segment_free(255), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_segment_alloc(0, &seg, &p), TSU_ERR_INVALID_ARG);
  EXPECT_TRUE(named("tsu_segment_alloc"));
  EXPECT_EQ(tsu_segment_alloc(4096, nullptr, &p), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_segment_alloc(4096, &seg, nullptr), TSU_ERR_NULL_POINTER);
  uint8_t buf[64];
  EXPECT_EQ(tsu_mem_register(nullptr, 64, &seg), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_mem_register(buf, 64, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_mem_register(buf, 0, &seg), TSU_ERR_INVALID_ARG);
  EXPECT_EQ(tsu_mem_register(buf, SIZE_MAX, &seg), TSU_ERR_INVALID_ARG);
  EXPECT_TRUE(named("tsu_mem_register"));
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, nullptr, &sz), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &p, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_segment_info(99, &p, &sz), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_segment_info(UINT32_MAX, &p, &sz), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_rank(nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_size(nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_node_count(nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_node_of(0, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_node_of(n, &u), TSU_ERR_BAD_RANK);
  EXPECT_EQ(tsu_node_of(UINT32_MAX, &u), TSU_ERR_BAD_RANK);
  EXPECT_TRUE(named("tsu_node_of"));
  tsu_laddr_t l{};
  tsu_gaddr_t ga{};
  EXPECT_EQ(tsu_laddr_of(nullptr, &l), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_laddr_of(buf, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_laddr_of(buf, &l), TSU_ERR_BAD_SEGMENT);  // a stack buffer
  EXPECT_EQ(tsu_gaddr_of(buf, &ga), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_gaddr_of(mp::main_base(), nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_gaddr_of(mp::main_base() + 100, &ga), TSU_OK);
  EXPECT_EQ(ga.rank, g.me);
  EXPECT_EQ(ga.seg, TSU_SEG_MAIN);
  EXPECT_EQ(ga.offset, 100u);
  EXPECT_EQ(tsu_laddr_ptr(tsu_laddr(0, 0), 8, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_laddr_ptr(tsu_laddr(0, g.size - 4), 8, &p), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(tsu_laddr_ptr(tsu_laddr(0, ~uint64_t{0}), 8, &p), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(tsu_laddr_ptr(tsu_laddr(88, 0), 8, &p), TSU_ERR_BAD_SEGMENT);
  EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(g.peer, 0, 0), 8, nullptr), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(n, 0, 0), 8, &p), TSU_ERR_BAD_RANK);
  // The peer's memory: mapped (the rank itself, a node peer) or not (another
  // node: TSU_ERR_UNREACHABLE for every address, valid or not).
  const tsu_status_t unmapped = TSU_ERR_UNREACHABLE;
  p = nullptr;
  EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(g.peer, 0, 0), 8, &p), g.mapped ? TSU_OK : unmapped);
  EXPECT_EQ(p != nullptr, g.mapped);
  EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(g.peer, 0, g.size - 4), 8, &p),
            g.mapped ? TSU_ERR_OUT_OF_BOUNDS : unmapped);
  EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(g.peer, 97, 0), 8, &p), g.mapped ? TSU_ERR_BAD_SEGMENT : unmapped);
  if (g.peer != g.me) {  // a peer's registered memory is never mapped
    EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(g.peer, g.registered[g.peer], 0), 8, &p), TSU_ERR_UNREACHABLE);
    EXPECT_TRUE(named("tsu_gaddr_ptr"));
  } else {  // the caller's own registered memory is
    EXPECT_EQ(tsu_gaddr_ptr(tsu_gaddr(g.me, g.registered[g.me], 0), 8, &p), TSU_OK);
  }
  EXPECT_EQ(tsu_counter_wait(nullptr, 1), TSU_ERR_NULL_POINTER);
  EXPECT_EQ(tsu_counter_value(nullptr), 0u);
  tsu_counter_init(nullptr);  // harmless
  // Status names: fixed, distinct, and a fallback for unknown codes.
  std::set<std::string> names;
  for (int s = TSU_ERR_DEPENDENCY; s <= TSU_EAGAIN; ++s) {
    const char* name = tsu_strerror(s);
    ASSERT_NE(name, nullptr);
    EXPECT_STRNE(name, "unknown status") << s;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(TSU_EAGAIN - TSU_ERR_DEPENDENCY + 1));
  EXPECT_STREQ(tsu_strerror(-99), "unknown status");
  EXPECT_STREQ(tsu_strerror(2), "unknown status");
  barrier();
}

// The error message is per thread: another thread's failure does not replace it.
TEST_F(Errors, LastErrorIsPerThread) {
  EXPECT_EQ(tsu_try_put(tsu_gaddr(g.n, 0, 0), tsu_laddr(0, 0), 1, tsu_cb_none()), TSU_ERR_BAD_RANK);
  const std::string mine = tsu_last_error();
  EXPECT_NE(mine.find("tsu_try_put"), std::string::npos);
  std::thread([] {
    uint64_t r;
    EXPECT_EQ(tsu_try_atomic(tsu_gaddr(0, 0, 1), TSU_AOP_LOAD, TSU_TYPE_UINT64, nullptr, nullptr, &r, tsu_cb_none()),
              TSU_ERR_MISALIGNED);
    EXPECT_NE(std::string(tsu_last_error()).find("tsu_try_atomic"), std::string::npos);
  }).join();
  EXPECT_EQ(mine, tsu_last_error());
  barrier();
}

}  // namespace
