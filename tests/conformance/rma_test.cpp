// Conformance: RMA (put / get / copy) on every route.  Correctness between
// ranks, 0 B .. 64 MiB, odd sizes, unaligned offsets and udp packet and
// message boundaries, on the main segment, tsu_segment_alloc segments and
// registered user memory (Cross Memory Attach on a node, messages across
// nodes), with several issuing threads per rank; third-party copies
// (next -> next+1), copies from a peer, counters and callbacks that issue
// requests.  Every byte is checked against a pattern of (rank, offset), and
// the bytes around every destination range must keep their sentinel value.
// Each rank reads and writes its neighbours only with tsu_try_*; every rank
// checks its own memory, so the same checks hold whether the neighbour is the
// rank itself (a job of one), a node peer or a rank on another node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "mp_util.hpp"

namespace {

using mp::barrier;

constexpr unsigned kThreads = 4;
constexpr uint8_t kSentinel = 0xA5;
constexpr std::size_t kGuard = 64;  // sentinel bytes kept before and after each range

// Main segment layout (every rank): a directory page, the source area A
// (pattern of the owner) and the destination area B.
constexpr uint64_t kDirOff = 0;           // 4 KiB: id exchange
constexpr uint64_t kScratchOff = 1024;    // landing area of the exchange
constexpr uint64_t kSrcOff = 1u << 20;    // A
constexpr std::size_t kMiB = std::size_t{1} << 20;

// A family of segments with the same layout on every rank.
struct Space {
  const char* name;
  std::vector<tsu_seg_t> seg;   // segment id on each rank
  uint64_t a_off, b_off;        // A and B within the segment
  std::size_t a_len, b_len;
  uint32_t salt;
  uint8_t* local = nullptr;     // this rank's segment base
};

// The expected content of rank r's A in a space (cached).
class References {
 public:
  const uint8_t* get(const Space& s, uint32_t r) {
    std::lock_guard lock(mu_);
    auto& v = refs_[{s.salt, r}];
    if (v.empty()) {
      v.resize(s.a_len);
      mp::fill_pattern(v.data(), v.size(), r, 0, s.salt);
    }
    return v.data();
  }

 private:
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>> refs_;
};
References g_refs;

struct Case {
  std::size_t len;
  uint64_t src;  // offset in A
  uint64_t dst;  // offset in B (assigned by the layout)
};

// The sizes and offsets exercised; cases that do not fit a space are dropped.
std::vector<Case> all_cases() {
  // Odd sizes, and around udp's datagram payload (~1400-1500 B) and its
  // 256 KiB message pieces (300000 B spans two).
  std::vector<std::size_t> sizes = {0,    3,      5,      7,       100,    1400,
                                    1500, 4095,   4097,   65537,   300000, 1000003,
                                    3 * kMiB + 5};
  for (std::size_t s = 1; s <= 64 * kMiB; s <<= 1) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  const std::pair<uint64_t, uint64_t> small_offsets[] = {{0, 0}, {1, 3}, {7, 4095}, {65537, 1}};
  const std::pair<uint64_t, uint64_t> big_offsets[] = {{0, 0}, {4095, 7}};
  std::vector<Case> cases;
  for (std::size_t len : sizes) {
    if (len <= 2 * kMiB) {
      for (auto [s, d] : small_offsets) cases.push_back({len, s, d});
    } else {
      for (auto [s, d] : big_offsets) cases.push_back({len, s, d});
    }
  }
  return cases;
}

// Packs the cases into phases that fit B, each range with guards around it.
std::vector<std::vector<Case>> layout(const Space& sp) {
  std::vector<std::vector<Case>> phases(1);
  uint64_t cursor = 0;
  for (const Case& c : all_cases()) {
    if (c.src + c.len > sp.a_len) continue;
    auto place = [&](uint64_t from) {
      const uint64_t slot = (from + 4095) / 4096 * 4096 + kGuard;
      return slot + c.dst;
    };
    uint64_t dst = place(cursor);
    if (dst + c.len + kGuard > sp.b_len) {
      if (phases.back().empty()) continue;  // too big for this space at all
      phases.emplace_back();
      dst = place(0);
      if (dst + c.len + kGuard > sp.b_len) {
        phases.pop_back();
        continue;
      }
    }
    phases.back().push_back({c.len, c.src, dst});
    cursor = dst + c.len + kGuard;
  }
  if (phases.back().empty()) phases.pop_back();
  return phases;
}

enum class Op { kPut, kGet, kCopyThird, kCopySelf, kCopyFromPeer };
const char* op_name(Op op) {
  switch (op) {
    case Op::kPut: return "put";
    case Op::kGet: return "get";
    case Op::kCopyThird: return "copy(next -> next+1)";
    case Op::kCopySelf: return "copy(self -> self)";
    case Op::kCopyFromPeer: return "copy(prev -> self)";
  }
  return "?";
}

// Issues the op for one case.  Rank q's B receives data of data_source(q).
tsu_status_t issue_case(const Space& sp, Op op, const Case& c, tsu_cb_t cb) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n, next2 = (me + 2) % n, prev = (me + n - 1) % n;
  switch (op) {
    case Op::kPut:
      return tsu_try_put(tsu_gaddr(next, sp.seg[next], sp.b_off + c.dst),
                         tsu_laddr(sp.seg[me], sp.a_off + c.src), c.len, cb);
    case Op::kGet:
      return tsu_try_get(tsu_laddr(sp.seg[me], sp.b_off + c.dst),
                         tsu_gaddr(next, sp.seg[next], sp.a_off + c.src), c.len, cb);
    case Op::kCopyThird:
      return tsu_try_copy(tsu_gaddr(next2, sp.seg[next2], sp.b_off + c.dst),
                          tsu_gaddr(next, sp.seg[next], sp.a_off + c.src), c.len, cb);
    case Op::kCopySelf:
      return tsu_try_copy(tsu_gaddr(me, sp.seg[me], sp.b_off + c.dst),
                          tsu_gaddr(me, sp.seg[me], sp.a_off + c.src), c.len, cb);
    case Op::kCopyFromPeer:
      return tsu_try_copy(tsu_gaddr(me, sp.seg[me], sp.b_off + c.dst),
                          tsu_gaddr(prev, sp.seg[prev], sp.a_off + c.src), c.len, cb);
  }
  return TSU_ERR_INVALID_ARG;
}

uint32_t data_source(Op op, uint32_t q) {
  const uint32_t n = mp::size();
  switch (op) {
    case Op::kPut: return (q + n - 1) % n;
    case Op::kGet: return (q + 1) % n;
    case Op::kCopyThird: return (q + n - 1) % n;
    case Op::kCopySelf: return q;
    case Op::kCopyFromPeer: return (q + n - 1) % n;
  }
  return q;
}

void run_phase(const Space& sp, Op op, const std::vector<Case>& cases) {
  const uint32_t me = mp::rank();
  uint8_t* b = sp.local + sp.b_off;
  const uint64_t extent = std::min<uint64_t>(cases.back().dst + cases.back().len + kGuard, sp.b_len);
  std::memset(b, kSentinel, extent);
  barrier();

  mp::run_threads(kThreads, [&](unsigned tid) {
    mp::Tracker tracker(cases.size() / kThreads + 1);
    for (std::size_t i = tid; i < cases.size(); i += kThreads) {
      const tsu_status_t st =
          tracker.issue([&](tsu_cb_t cb) { return issue_case(sp, op, cases[i], cb); });
      EXPECT_EQ(st, TSU_OK) << sp.name << " " << op_name(op) << " len " << cases[i].len << ": "
                            << tsu_last_error();
    }
    tracker.wait_all();
    tracker.expect_all(TSU_OK);
  });
  barrier();  // every rank's requests into my B have completed

  const uint32_t src_rank = data_source(op, me);
  const uint8_t* ref = g_refs.get(sp, src_rank);
  uint64_t pos = 0;
  for (const Case& c : cases) {
    const std::size_t gap = mp::check_fill(b + pos, c.dst - pos, kSentinel);
    EXPECT_EQ(gap, SIZE_MAX) << sp.name << " " << op_name(op) << ": byte " << pos + gap
                             << " of B before the range of len " << c.len << " was overwritten";
    if (c.len && std::memcmp(b + c.dst, ref + c.src, c.len) != 0) {
      std::size_t i = 0;
      while (b[c.dst + i] == ref[c.src + i]) ++i;
      ADD_FAILURE() << sp.name << " " << op_name(op) << " len " << c.len << " src_off " << c.src
                    << " dst_off " << c.dst << ": first wrong byte at " << i << " (got "
                    << int{b[c.dst + i]} << ", expected " << int{ref[c.src + i]}
                    << " from rank " << src_rank << ")";
    }
    pos = c.dst + c.len;
  }
  const std::size_t tail = mp::check_fill(b + pos, extent - pos, kSentinel);
  EXPECT_EQ(tail, SIZE_MAX) << sp.name << " " << op_name(op) << ": byte " << pos + tail
                            << " after the last range was overwritten";
  barrier();  // nobody resets B while a peer may still read it
}

void run_space(const Space& sp) {
  const auto phases = layout(sp);
  ASSERT_FALSE(phases.empty());
  for (Op op : {Op::kPut, Op::kGet, Op::kCopyThird, Op::kCopySelf, Op::kCopyFromPeer}) {
    for (const auto& phase : phases) run_phase(sp, op, phase);
    // The sources are never written.
    EXPECT_EQ(std::memcmp(sp.local + sp.a_off, g_refs.get(sp, mp::rank()), sp.a_len), 0)
        << sp.name << " " << op_name(op) << ": source area A changed";
  }
}

std::vector<tsu_seg_t> exchange_segment(tsu_seg_t mine) {
  return mp::allgather_u32(mine, kDirOff, kScratchOff);
}

class Rma : public ::testing::Test {};

TEST_F(Rma, MainSegmentAllSizes) {
  const uint32_t me = mp::rank(), n = mp::size();
  const std::size_t total = mp::main_size();
  // A holds 64 MiB + 64 KiB (+ offsets) when the segment allows, else less.
  std::size_t a_len = total >= 140 * kMiB ? 64 * kMiB + 128 * 1024 : (total - kSrcOff) / 3;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer makes every byte of shared memory expensive (shadow
  // memory in each of the ranks mapping it): stop at 16 MiB transfers there.
  a_len = std::min(a_len, 16 * kMiB + 128 * 1024);
#endif
  Space sp{"main", std::vector<tsu_seg_t>(n, TSU_SEG_MAIN), kSrcOff, 0, a_len, 0, 1, mp::main_base()};
  sp.b_off = (kSrcOff + a_len + kMiB - 1) / kMiB * kMiB;
  sp.b_len = total - sp.b_off;
  mp::fill_pattern(sp.local + sp.a_off, sp.a_len, me, 0, sp.salt);
  barrier();
  run_space(sp);
}

TEST_F(Rma, AllocatedSegments) {
  const uint32_t me = mp::rank();
  constexpr std::size_t kLen = 8 * kMiB + 4096;
  tsu_seg_t seg = 0;
  void* base = nullptr;
  ASSERT_EQ(tsu_segment_alloc(kLen, &seg, &base), TSU_OK) << tsu_last_error();
  ASSERT_NE(base, nullptr);
  // Zero-filled.
  EXPECT_EQ(mp::check_fill(base, kLen, 0), SIZE_MAX);
  void* ibase = nullptr;
  std::size_t isize = 0;
  EXPECT_EQ(tsu_segment_info(seg, &ibase, &isize), TSU_OK);
  EXPECT_EQ(ibase, base);
  EXPECT_GE(isize, kLen);
  Space sp{"alloc", exchange_segment(seg), 0, 4 * kMiB, 4 * kMiB, kLen - 4 * kMiB, 2,
           static_cast<uint8_t*>(base)};
  mp::fill_pattern(sp.local + sp.a_off, sp.a_len, me, 0, sp.salt);
  barrier();
  run_space(sp);
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
  barrier();
}

TEST_F(Rma, RegisteredMemoryCrossMemoryAttach) {
  const uint32_t me = mp::rank();
  constexpr std::size_t kLen = 8 * kMiB + 100;
  // Plain heap memory, deliberately not page aligned.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kLen + 3]);
  uint8_t* base = buf.get() + 3;
  tsu_seg_t seg = 0;
  ASSERT_EQ(tsu_mem_register(base, kLen, &seg), TSU_OK) << tsu_last_error();
  tsu_laddr_t l{};
  EXPECT_EQ(tsu_laddr_of(base + 17, &l), TSU_OK);
  EXPECT_EQ(l.seg, seg);
  EXPECT_EQ(l.offset, 17u);
  Space sp{"registered", exchange_segment(seg), 0, 4 * kMiB, 4 * kMiB, kLen - 4 * kMiB, 3, base};
  mp::fill_pattern(sp.local + sp.a_off, sp.a_len, me, 0, sp.salt);
  barrier();
  run_space(sp);
  barrier();
  EXPECT_EQ(tsu_segment_free(seg), TSU_OK);
  barrier();
}

// Copies between different kinds of segments: registered -> main and
// main -> allocated on other ranks.
TEST_F(Rma, MixedSegmentKinds) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n, next2 = (me + 2) % n;
  constexpr std::size_t kLen = 2 * kMiB + 333;
  std::vector<uint8_t> user(kLen);
  mp::fill_pattern(user.data(), kLen, me, 0, 9);
  tsu_seg_t reg = 0, al = 0;
  void* al_base = nullptr;
  ASSERT_EQ(tsu_mem_register(user.data(), kLen, &reg), TSU_OK);
  ASSERT_EQ(tsu_segment_alloc(kLen + 2 * kGuard, &al, &al_base), TSU_OK);
  std::memset(al_base, kSentinel, kLen + 2 * kGuard);
  const auto regs = exchange_segment(reg);
  const auto als = exchange_segment(al);
  // next's registered memory -> next2's allocated segment (offset kGuard).
  tsu_counter_t c;
  tsu_counter_init(&c);
  EXPECT_EQ(mp::issue([&] {
              return tsu_try_copy(tsu_gaddr(next2, als[next2], kGuard),
                                  tsu_gaddr(next, regs[next], 0), kLen, tsu_counter_cb(&c));
            }),
            TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
  EXPECT_EQ(tsu_counter_value(&c), 1u);
  barrier();
  // My allocated segment was written by rank me-2 with data of rank me-1.
  const uint32_t src = (me + n - 1) % n;
  const auto* a = static_cast<const uint8_t*>(al_base);
  EXPECT_EQ(mp::check_fill(a, kGuard, kSentinel), SIZE_MAX);
  EXPECT_EQ(mp::check_pattern(a + kGuard, kLen, src, 0, 9), SIZE_MAX);
  EXPECT_EQ(mp::check_fill(a + kGuard + kLen, kGuard, kSentinel), SIZE_MAX);
  barrier();
  EXPECT_EQ(tsu_segment_free(reg), TSU_OK);
  EXPECT_EQ(tsu_segment_free(al), TSU_OK);
  barrier();
}

// tsu_counter helpers: value, wait, first error kept.
TEST_F(Rma, CounterHelpers) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  tsu_counter_t c;
  std::memset(&c, 0xFF, sizeof c);
  tsu_counter_init(&c);
  EXPECT_EQ(tsu_counter_value(&c), 0u);
  EXPECT_EQ(c.first_error, TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, 0), TSU_OK);  // nothing to wait for
  const tsu_cb_t cb = tsu_counter_cb(&c);
  EXPECT_EQ(cb.arg, &c);
  EXPECT_NE(cb.fn, nullptr);
  // 100 good puts into the next rank's directory page tail, from 8 bytes
  // at 2560 that no request writes (the previous rank writes our 2048..2303).
  constexpr int kGood = 100;
  for (int i = 0; i < kGood; ++i)
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, 2048 + 8u * static_cast<unsigned>(i % 32)),
                                   tsu_laddr(TSU_SEG_MAIN, 2560), 8, cb);
              }),
              TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, kGood), TSU_OK);
  EXPECT_EQ(tsu_counter_value(&c), uint64_t{kGood});
  // One request failing at the target: counted, and its error kept (the first).
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, mp::main_size() - 4),
                                 tsu_laddr(TSU_SEG_MAIN, 2560), 8, cb);
            }),
            TSU_OK);
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 2560), tsu_gaddr(next, 200, 0), 8, cb);
            }),
            TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, kGood + 2), TSU_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(tsu_counter_value(&c), uint64_t{kGood + 2});
  EXPECT_EQ(c.first_error, TSU_ERR_OUT_OF_BOUNDS);
  // More good requests do not clear it.
  ASSERT_EQ(mp::issue([&] {
              return tsu_try_put(tsu_gaddr(next, TSU_SEG_MAIN, 2048), tsu_laddr(TSU_SEG_MAIN, 2560),
                                 8, cb);
            }),
            TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, kGood + 3), TSU_ERR_OUT_OF_BOUNDS);
  barrier();
}

// A callback may issue new requests: chains of puts started from callbacks.
// The chain writes `off` at the target from `src` of its own memory: distinct
// offsets, as the previous rank's chains write this rank's `off` meanwhile.
struct Chain {
  uint32_t target;
  uint64_t off;
  uint64_t src;
  int remaining;
  std::atomic<int> links{0};
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
};
void chain_cb(tsu_status_t st, void* arg) {
  auto* ch = static_cast<Chain*>(arg);
  if (st != TSU_OK) ch->failures.fetch_add(1);
  ch->links.fetch_add(1);
  if (--ch->remaining <= 0) {
    ch->done.store(true, std::memory_order_release);
    return;
  }
  // Must not block: retry a bounded number of times on EAGAIN.
  for (int tries = 0; tries < 1000; ++tries) {
    const tsu_status_t s = tsu_try_put(tsu_gaddr(ch->target, TSU_SEG_MAIN, ch->off),
                                       tsu_laddr(TSU_SEG_MAIN, ch->src), 8,
                                       tsu_cb(chain_cb, ch));
    if (s == TSU_OK) return;
    if (s != TSU_EAGAIN) break;
  }
  ch->failures.fetch_add(1);
  ch->done.store(true, std::memory_order_release);
}

TEST_F(Rma, CallbackIssuesRequests) {
  const uint32_t me = mp::rank(), n = mp::size();
  mp::run_threads(kThreads, [&](unsigned tid) {
    Chain ch{(me + 1) % n, 3072 + 8u * tid, 3584 + 8u * tid, 50};
    ASSERT_EQ(mp::issue([&] {
                return tsu_try_put(tsu_gaddr(ch.target, TSU_SEG_MAIN, ch.off),
                                   tsu_laddr(TSU_SEG_MAIN, ch.src), 8, tsu_cb(chain_cb, &ch));
              }),
              TSU_OK);
    mp::wait_until([&] { return ch.done.load(std::memory_order_acquire); }, "callback chain");
    EXPECT_EQ(tsu_quiet(), TSU_OK);
    EXPECT_EQ(ch.links.load(), 50);
    EXPECT_EQ(ch.failures.load(), 0);
  });
  barrier();
}

}  // namespace
