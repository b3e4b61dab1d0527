// Conformance: remote atomics on every route, under contention.  Every rank
// and 4 threads per rank hammer the same words (the owner's own threads
// included, through the same API), for every op on INT32/UINT32/INT64/UINT64
// and the DOUBLE ops, with exact final values: fetch-add results form a
// permutation, CAS increment loops lose nothing, bit operations on per-thread
// bits never disturb each other, swaps form a chain, loads never see torn
// values, 32-bit ops touch only their 4 bytes.  Words are read back with
// atomics or by their owner in its own memory, never through a pointer to a
// peer, so the checks hold for the rank itself, node peers and other nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "mp_util.hpp"

namespace {

using mp::barrier;

constexpr unsigned kThreads = 4;

// Main segment layout of every rank.
constexpr uint64_t kDirOff = 0;          // id exchange
constexpr uint64_t kScratchOff = 256;
constexpr uint64_t kWordsOff = 4096;     // contended words (one cache line each)
constexpr uint64_t kGatherOff = 64 * 1024;    // my results, for the owner to read
constexpr uint64_t kLandingOff = 512 * 1024;  // the owner's landing area

template <typename T> constexpr tsu_atype_t type_of();
template <> constexpr tsu_atype_t type_of<int32_t>() { return TSU_TYPE_INT32; }
template <> constexpr tsu_atype_t type_of<uint32_t>() { return TSU_TYPE_UINT32; }
template <> constexpr tsu_atype_t type_of<int64_t>() { return TSU_TYPE_INT64; }
template <> constexpr tsu_atype_t type_of<uint64_t>() { return TSU_TYPE_UINT64; }
template <> constexpr tsu_atype_t type_of<double>() { return TSU_TYPE_DOUBLE; }

template <typename T>
uint64_t raw(T v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  } else {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return u;
  }
}

// TSU_TEST_NIC_ATOMICS=1: every contended word is in a segment allocated
// with TSU_SEG_NIC_ATOMICS (the adapter executes every atomic on it, the
// owner's own included), and the arena must have got that site.  =cpu: the
// same allocation where the provider refuses NIC atomics (a test fault):
// the arena must have fallen back to CPU atomics.
const char* nic_env() {
  const char* v = std::getenv("TSU_TEST_NIC_ATOMICS");
  return v ? v : "";
}
bool nic_mode() { return std::strcmp(nic_env(), "1") == 0 || std::strcmp(nic_env(), "cpu") == 0; }
bool nic_expected() { return std::strcmp(nic_env(), "1") == 0; }

uint8_t* g_arena_base = nullptr;

// One allocated segment per rank (ids exchanged once, collectively).
const std::vector<tsu_seg_t>& arena() {
  static std::vector<tsu_seg_t> ids;
  if (ids.empty()) {
    tsu_seg_t seg = 0;
    void* base = nullptr;
    EXPECT_EQ(tsu_segment_alloc_ex(64 * 1024, nic_mode() ? TSU_SEG_NIC_ATOMICS : 0u, &seg, &base),
              TSU_OK)
        << tsu_last_error();
    g_arena_base = static_cast<uint8_t*>(base);
    ids = mp::allgather_u32(seg, kDirOff, kScratchOff);
  }
  return ids;
}

// The segment of `owner` that holds the words of the tests below that are
// not spread by type: the main one, or the NIC arena in NIC mode.
tsu_seg_t plain_seg(uint32_t owner) { return nic_mode() ? arena()[owner] : TSU_SEG_MAIN; }
uint8_t* plain_base() { return nic_mode() ? (arena(), g_arena_base) : mp::main_base(); }

// Where the word of test `slot` for type T lives: 64-bit integer types in an
// allocated segment, the others in the main segment (all in the arena in
// NIC mode).  Owner rotates by type.
template <typename T>
tsu_gaddr_t word(unsigned slot) {
  const uint32_t n = mp::size();
  const auto type = static_cast<uint32_t>(type_of<T>());
  const uint32_t owner = type == TSU_TYPE_DOUBLE ? n - 1 : type % n;
  const uint64_t off = kWordsOff + 64u * (slot * 8u + type);
  if (nic_mode() || type == TSU_TYPE_INT64 || type == TSU_TYPE_UINT64)
    return tsu_gaddr(owner, arena()[owner], off);
  return tsu_gaddr(owner, TSU_SEG_MAIN, off);
}

// The arena's site is what the mode asked for.
TEST(AtomicSite, ArenaHasTheRequestedSite) {
  const uint32_t me = mp::rank();
  tsu_atomic_site_t site = TSU_ATOMIC_SITE_CPU;
  ASSERT_EQ(tsu_segment_atomic_site(arena()[me], &site), TSU_OK) << tsu_last_error();
  EXPECT_EQ(site, nic_expected() ? TSU_ATOMIC_SITE_NIC : TSU_ATOMIC_SITE_CPU);
  barrier();
}

// A synchronous atomic: issues, waits, returns the completion status.
template <typename T>
tsu_status_t amo(tsu_gaddr_t g, tsu_aop_t op, const T* operand, const T* compare, T* result) {
  tsu_counter_t c;
  tsu_counter_init(&c);
  const tsu_status_t st = mp::issue([&] {
    return tsu_try_atomic(g, op, type_of<T>(), operand, compare, result, tsu_counter_cb(&c));
  });
  if (st != TSU_OK) return st;
  return tsu_counter_wait(&c, 1);
}
template <typename T>
T load(tsu_gaddr_t g) {
  T v{};
  EXPECT_EQ(amo<T>(g, TSU_AOP_LOAD, nullptr, nullptr, &v), TSU_OK) << tsu_last_error();
  return v;
}
template <typename T>
void store(tsu_gaddr_t g, T v) {
  EXPECT_EQ(amo<T>(g, TSU_AOP_STORE, &v, nullptr, nullptr), TSU_OK) << tsu_last_error();
}

// The owner of `g` receives every rank's `mine` (all ranks pass equally many
// values); others get an empty vector.  Collective.
std::vector<uint64_t> gather_to(uint32_t owner, const std::vector<uint64_t>& mine) {
  const uint32_t me = mp::rank(), n = mp::size();
  const std::size_t bytes = mine.size() * 8;
  EXPECT_LE(bytes, kLandingOff - kGatherOff);
  EXPECT_LE(bytes * n, mp::main_size() - kLandingOff);
  std::memcpy(mp::main_base() + kGatherOff, mine.data(), bytes);
  barrier();
  std::vector<uint64_t> all;
  if (me == owner) {
    all.resize(mine.size() * n);
    tsu_counter_t c;
    tsu_counter_init(&c);
    for (uint32_t r = 0; r < n; ++r)
      EXPECT_EQ(mp::issue([&] {
                  return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kLandingOff + bytes * r),
                                     tsu_gaddr(r, TSU_SEG_MAIN, kGatherOff), bytes,
                                     tsu_counter_cb(&c));
                }),
                TSU_OK);
    EXPECT_EQ(tsu_counter_wait(&c, n), TSU_OK);
    std::memcpy(all.data(), mp::main_base() + kLandingOff, bytes * n);
  }
  barrier();
  return all;
}

// Issues `count` asynchronous atomics per thread from every thread and waits.
// make(tid, i, operand&) chooses the operand; results land in results[tid][i].
template <typename T, typename Make>
std::vector<std::vector<T>> hammer(tsu_gaddr_t g, tsu_aop_t op, std::size_t count, Make make) {
  std::vector<std::vector<T>> results(kThreads, std::vector<T>(count));
  mp::run_threads(kThreads, [&](unsigned tid) {
    mp::Tracker tracker(count);
    for (std::size_t i = 0; i < count; ++i) {
      const T operand = make(tid, i);
      const tsu_status_t st = tracker.issue([&](tsu_cb_t cb) {
        return tsu_try_atomic(g, op, type_of<T>(), &operand, nullptr, &results[tid][i], cb);
      });
      EXPECT_EQ(st, TSU_OK) << tsu_last_error();
    }
    tracker.wait_all();
    tracker.expect_all(TSU_OK);
  });
  return results;
}

template <typename T>
class IntAtomic : public ::testing::Test {};
using IntTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t>;
TYPED_TEST_SUITE(IntAtomic, IntTypes);

template <typename T>
T fetch_add_base(uint64_t total) {
  if constexpr (std::is_same_v<T, int32_t>) return static_cast<T>(-static_cast<int64_t>(total / 2));
  if constexpr (std::is_same_v<T, uint32_t>) return static_cast<T>(0xFFFFFFFFu - total / 2);
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<T>(0x7FFFFFFFll - static_cast<int64_t>(total / 2));
  if constexpr (std::is_same_v<T, uint64_t>) return ~uint64_t{0} - total / 2;
  return T{};
}

// Fetch-add of 1 by everyone: the returned values are exactly base..base+N-1.
TYPED_TEST(IntAtomic, FetchAddIsAPermutation) {
  using T = TypeParam;
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<T>(0);
  constexpr std::size_t kCount = 2000;
  const uint64_t total = uint64_t{n} * kThreads * kCount;
  const T base = fetch_add_base<T>(total);
  if (me == g.rank) store<T>(g, base);
  barrier();
  const auto results = hammer<T>(g, TSU_AOP_FETCH_ADD, kCount, [](unsigned, std::size_t) { return T{1}; });
  barrier();
  std::vector<uint64_t> mine;
  for (const auto& v : results)
    for (T x : v) mine.push_back(raw(x));
  auto all = gather_to(g.rank, mine);
  if (me == g.rank) {
    std::vector<uint64_t> expected;
    for (uint64_t k = 0; k < total; ++k) expected.push_back(raw(static_cast<T>(base + static_cast<T>(k))));
    std::sort(all.begin(), all.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_TRUE(all == expected) << "fetch-add results are not a permutation of base..base+N-1";
    EXPECT_EQ(load<T>(g), static_cast<T>(base + static_cast<T>(total)));
  }
  barrier();
}

// Non-fetching ADD of signed/unsigned operands: exact sum.
TYPED_TEST(IntAtomic, AddSumsExactly) {
  using T = TypeParam;
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<T>(1);
  constexpr std::size_t kCount = 1000;
  const T base = static_cast<T>(1000);
  if (me == g.rank) store<T>(g, base);
  barrier();
  auto operand = [me](unsigned tid, std::size_t i) {
    const auto v = static_cast<T>(me * kThreads + tid + 1);
    if constexpr (std::is_signed_v<T>) return (i % 3 == 0) ? static_cast<T>(-3 * v) : v;
    return v;
  };
  hammer<T>(g, TSU_AOP_ADD, kCount, operand);
  barrier();
  if (me == g.rank) {
    T expected = base;
    for (uint32_t r = 0; r < n; ++r)
      for (unsigned t = 0; t < kThreads; ++t)
        for (std::size_t i = 0; i < kCount; ++i) {
          const auto v = static_cast<T>(r * kThreads + t + 1);
          if constexpr (std::is_signed_v<T>)
            expected = static_cast<T>(expected + ((i % 3 == 0) ? static_cast<T>(-3 * v) : v));
          else
            expected = static_cast<T>(expected + v);
        }
    EXPECT_EQ(load<T>(g), expected);
  }
  barrier();
}

// CAS increment loops (LOAD, then CAS until it succeeds): nothing is lost.
TYPED_TEST(IntAtomic, CasIncrementLoop) {
  using T = TypeParam;
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<T>(2);
  constexpr unsigned kIncrements = 150;
  const T base = static_cast<T>(std::numeric_limits<T>::max() - 5000);
  if (me == g.rank) store<T>(g, base);
  barrier();
  std::atomic<uint64_t> failures{0};
  mp::run_threads(kThreads, [&](unsigned) {
    T cur = load<T>(g);
    for (unsigned k = 0; k < kIncrements; ++k) {
      for (;;) {
        const T desired = static_cast<T>(cur + 1);
        T seen{};
        ASSERT_EQ(amo<T>(g, TSU_AOP_CAS, &desired, &cur, &seen), TSU_OK);
        if (seen == cur) {
          cur = desired;
          break;
        }
        failures.fetch_add(1, std::memory_order_relaxed);
        cur = seen;
      }
    }
  });
  barrier();
  if (me == g.rank) {
    EXPECT_EQ(load<T>(g), static_cast<T>(base + static_cast<T>(n * kThreads * kIncrements)));
  }
  barrier();
}

// Bits owned by one thread, flipped by every op while all others flip theirs
// on the same word: each returned old value shows the owner's bits exactly as
// that thread left them.
TYPED_TEST(IntAtomic, BitOpsOnPrivateBits) {
  using T = TypeParam;
  using U = std::make_unsigned_t<T>;
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<T>(3);
  if (me == g.rank) store<T>(g, T{0});
  barrier();
  auto mask_of = [](uint32_t r, unsigned tid) {
    const unsigned b = r * kThreads + tid;  // < 16
    U m = static_cast<U>(U{1} << b) | static_cast<U>(U{1} << (b + 16));
    if constexpr (sizeof(T) == 8) m |= static_cast<U>(m << 32);
    return static_cast<T>(m);
  };
  constexpr unsigned kRounds = 40;
  mp::run_threads(kThreads, [&](unsigned tid) {
    const T mask = mask_of(me, tid);
    const T inv = static_cast<T>(~mask);
    auto bits = [&](T v) { return static_cast<T>(v & mask); };
    T old{};
    for (unsigned round = 0; round < kRounds; ++round) {
      EXPECT_EQ(amo<T>(g, TSU_AOP_FETCH_OR, &mask, nullptr, &old), TSU_OK);
      EXPECT_EQ(bits(old), T{0}) << "fetch_or round " << round;
      EXPECT_EQ(amo<T>(g, TSU_AOP_FETCH_XOR, &mask, nullptr, &old), TSU_OK);
      EXPECT_EQ(bits(old), mask) << "fetch_xor (clear) round " << round;
      EXPECT_EQ(amo<T>(g, TSU_AOP_FETCH_XOR, &mask, nullptr, &old), TSU_OK);
      EXPECT_EQ(bits(old), T{0}) << "fetch_xor (set) round " << round;
      EXPECT_EQ(amo<T>(g, TSU_AOP_FETCH_AND, &inv, nullptr, &old), TSU_OK);
      EXPECT_EQ(bits(old), mask) << "fetch_and round " << round;
      EXPECT_EQ(amo<T>(g, TSU_AOP_OR, &mask, nullptr, static_cast<T*>(nullptr)), TSU_OK);
      EXPECT_EQ(amo<T>(g, TSU_AOP_XOR, &mask, nullptr, static_cast<T*>(nullptr)), TSU_OK);
      EXPECT_EQ(amo<T>(g, TSU_AOP_OR, &mask, nullptr, static_cast<T*>(nullptr)), TSU_OK);
      EXPECT_EQ(bits(load<T>(g)), mask) << "after or/xor/or round " << round;
      EXPECT_EQ(amo<T>(g, TSU_AOP_AND, &inv, nullptr, static_cast<T*>(nullptr)), TSU_OK);
      EXPECT_EQ(bits(load<T>(g)), T{0}) << "after and round " << round;
    }
    // Leave the bits set.
    EXPECT_EQ(amo<T>(g, TSU_AOP_FETCH_OR, &mask, nullptr, &old), TSU_OK);
    EXPECT_EQ(bits(old), T{0});
  });
  barrier();
  if (me == g.rank) {
    T all{0};
    for (uint32_t r = 0; r < n; ++r)
      for (unsigned t = 0; t < kThreads; ++t) all = static_cast<T>(all | mask_of(r, t));
    EXPECT_EQ(load<T>(g), all);
  }
  barrier();
}

// Swaps of unique tokens: the old values plus the final value are exactly the
// initial value plus every token, each once.
TYPED_TEST(IntAtomic, SwapChain) {
  using T = TypeParam;
  const uint32_t me = mp::rank();
  const tsu_gaddr_t g = word<T>(4);
  constexpr std::size_t kCount = 500;
  const T initial = static_cast<T>(0x5A5A);
  if (me == g.rank) store<T>(g, initial);
  barrier();
  auto token = [](uint32_t r, unsigned tid, std::size_t i) {
    return static_cast<T>(((uint64_t{r} * kThreads + tid + 1) << 16) | (i + 1));
  };
  const auto results = hammer<T>(g, TSU_AOP_SWAP, kCount, [&](unsigned tid, std::size_t i) {
    return token(me, tid, i);
  });
  barrier();
  std::vector<uint64_t> mine;
  for (const auto& v : results)
    for (T x : v) mine.push_back(raw(x));
  auto all = gather_to(g.rank, mine);
  if (me == g.rank) {
    all.push_back(raw(load<T>(g)));
    std::vector<uint64_t> expected{raw(initial)};
    for (uint32_t r = 0; r < mp::size(); ++r)
      for (unsigned t = 0; t < kThreads; ++t)
        for (std::size_t i = 0; i < kCount; ++i) expected.push_back(raw(token(r, t, i)));
    std::sort(all.begin(), all.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_TRUE(all == expected) << "swap results do not form a chain";
  }
  barrier();
}

// Stores of self-checking values racing with loads: never torn, never invented.
TYPED_TEST(IntAtomic, LoadStoreNotTorn) {
  using T = TypeParam;
  using U = std::make_unsigned_t<T>;
  const uint32_t me = mp::rank();
  const tsu_gaddr_t g = word<T>(5);
  constexpr unsigned half = sizeof(T) * 4;
  auto make = [](uint32_t id) {  // both halves equal
    const U lo = static_cast<U>(id & ((U{1} << (half - 1)) - 1));
    return static_cast<T>(static_cast<U>(lo << half) | lo);
  };
  auto valid = [](T v) {
    const auto u = static_cast<U>(v);
    return static_cast<U>(u >> half) == static_cast<U>(u & static_cast<U>((U{1} << half) - 1));
  };
  if (me == g.rank) store<T>(g, make(1));
  barrier();
  mp::run_threads(kThreads, [&](unsigned tid) {
    for (uint32_t i = 0; i < 200; ++i) {
      store<T>(g, make((me * kThreads + tid) * 1000 + i + 2));
      const T v = load<T>(g);
      EXPECT_TRUE(valid(v)) << "torn or invented value " << raw(v);
    }
  });
  barrier();
  EXPECT_TRUE(valid(load<T>(g)));
  barrier();
}

// ----------------------------------------------------------------------------
// DOUBLE: load, store, add, fetch-add, swap, CAS (bitwise compare).

class DoubleAtomic : public ::testing::Test {};

TEST_F(DoubleAtomic, FetchAddHalvesIsAPermutation) {
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<double>(0);
  constexpr std::size_t kCount = 1500;
  const double base = -1000.25;
  if (me == g.rank) store<double>(g, base);
  barrier();
  const auto results = hammer<double>(g, TSU_AOP_FETCH_ADD, kCount, [](unsigned, std::size_t) { return 0.5; });
  barrier();
  std::vector<uint64_t> mine;
  for (const auto& v : results)
    for (double x : v) mine.push_back(raw(x));
  auto all = gather_to(g.rank, mine);
  const uint64_t total = uint64_t{n} * kThreads * kCount;
  if (me == g.rank) {
    std::vector<double> got;
    for (uint64_t u : all) got.push_back(std::bit_cast<double>(u));
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got.size(), total);
    for (uint64_t k = 0; k < total; ++k)
      if (got[k] != base + 0.5 * static_cast<double>(k)) {
        ADD_FAILURE() << "fetch-add result #" << k << " is " << got[k];
        break;
      }
    EXPECT_EQ(load<double>(g), base + 0.5 * static_cast<double>(total));
  }
  barrier();
}

TEST_F(DoubleAtomic, AddSumsExactly) {
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<double>(1);
  constexpr std::size_t kCount = 900;
  if (me == g.rank) store<double>(g, 3.0);
  barrier();
  // Per thread: 0.25, 1.0, -0.5 repeating: every partial sum is exact.
  hammer<double>(g, TSU_AOP_ADD, kCount, [](unsigned, std::size_t i) {
    return i % 3 == 0 ? 0.25 : i % 3 == 1 ? 1.0 : -0.5;
  });
  barrier();
  if (me == g.rank) {
    const double per_thread = (0.25 + 1.0 - 0.5) * (kCount / 3);
    EXPECT_EQ(load<double>(g), 3.0 + per_thread * n * kThreads);
  }
  barrier();
}

TEST_F(DoubleAtomic, CasIncrementLoop) {
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = word<double>(2);
  constexpr unsigned kIncrements = 150;
  if (me == g.rank) store<double>(g, 0.5);
  barrier();
  mp::run_threads(kThreads, [&](unsigned) {
    double cur = load<double>(g);
    for (unsigned k = 0; k < kIncrements; ++k) {
      for (;;) {
        const double desired = cur + 1.0;
        double seen = 0;
        ASSERT_EQ(amo<double>(g, TSU_AOP_CAS, &desired, &cur, &seen), TSU_OK);
        if (raw(seen) == raw(cur)) {
          cur = desired;
          break;
        }
        cur = seen;
      }
    }
  });
  barrier();
  if (me == g.rank) {
    EXPECT_EQ(load<double>(g), 0.5 + n * kThreads * kIncrements);
  }
  barrier();
}

TEST_F(DoubleAtomic, SwapChainAndLoadStore) {
  const uint32_t me = mp::rank();
  const tsu_gaddr_t g = word<double>(3);
  constexpr std::size_t kCount = 400;
  if (me == g.rank) store<double>(g, -1.0);
  barrier();
  auto token = [](uint32_t r, unsigned tid, std::size_t i) {
    return static_cast<double>((r * kThreads + tid + 1) * 1000 + i) + 0.125;
  };
  const auto results = hammer<double>(g, TSU_AOP_SWAP, kCount, [&](unsigned tid, std::size_t i) {
    return token(me, tid, i);
  });
  barrier();
  std::vector<uint64_t> mine;
  for (const auto& v : results)
    for (double x : v) mine.push_back(raw(x));
  auto all = gather_to(g.rank, mine);
  if (me == g.rank) {
    all.push_back(raw(load<double>(g)));
    std::vector<uint64_t> expected{raw(-1.0)};
    for (uint32_t r = 0; r < mp::size(); ++r)
      for (unsigned t = 0; t < kThreads; ++t)
        for (std::size_t i = 0; i < kCount; ++i) expected.push_back(raw(token(r, t, i)));
    std::sort(all.begin(), all.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_TRUE(all == expected) << "double swap results do not form a chain";
  }
  barrier();
  // Racing stores and loads: every load is one of the stored values.
  mp::run_threads(kThreads, [&](unsigned tid) {
    for (std::size_t i = 0; i < 150; ++i) {
      store<double>(g, token(me, tid, i));
      const double v = load<double>(g);
      const double frac = v - std::floor(v);
      EXPECT_EQ(frac, 0.125) << "invented double " << v;
    }
  });
  barrier();
}

// CAS compares bits: -0.0 != +0.0, and a NaN equals the same NaN.
TEST_F(DoubleAtomic, CasComparesBits) {
  const uint32_t me = mp::rank(), n = mp::size();
  const tsu_gaddr_t g = tsu_gaddr((me + 1) % n, plain_seg((me + 1) % n), kWordsOff + 8192 + 64u * me);
  store<double>(g, -0.0);
  double seen = 1, desired = 7.0, compare = 0.0;
  EXPECT_EQ(amo<double>(g, TSU_AOP_CAS, &desired, &compare, &seen), TSU_OK);
  EXPECT_EQ(raw(seen), raw(-0.0));
  EXPECT_EQ(raw(load<double>(g)), raw(-0.0)) << "CAS(+0.0) matched -0.0";
  const double nan = std::bit_cast<double>(uint64_t{0x7FF8000000001234ull});
  store<double>(g, nan);
  EXPECT_EQ(amo<double>(g, TSU_AOP_CAS, &desired, &nan, &seen), TSU_OK);
  EXPECT_EQ(raw(seen), raw(nan));
  EXPECT_EQ(load<double>(g), 7.0) << "CAS with identical NaN bits did not match";
  // SWAP and FETCH_ADD return the old bits.
  double old = 0, three = 3.0;
  EXPECT_EQ(amo<double>(g, TSU_AOP_SWAP, &three, nullptr, &old), TSU_OK);
  EXPECT_EQ(old, 7.0);
  double half = 0.5;
  EXPECT_EQ(amo<double>(g, TSU_AOP_FETCH_ADD, &half, nullptr, &old), TSU_OK);
  EXPECT_EQ(old, 3.0);
  EXPECT_EQ(load<double>(g), 3.5);
  barrier();
}

// The 32-bit ops touch only their 4 bytes: neighbours keep their values.
// Each rank works on a 16-byte slot of the next rank's memory; the owner
// fills and checks its slots in its own memory, around the writers' atomics.
TEST(AtomicWidth, ThirtyTwoBitOpsTouchOnlyTheirWord) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t peer = (me + 1) % n, writer = (me + n - 1) % n;
  auto slot = [](uint32_t w) { return kWordsOff + 16384 + 64u * w; };
  uint8_t* mine = plain_base() + slot(writer);  // the slot my writer aims at
  std::memset(mine - 16, 0xDD, 16);                // sentinels around it
  std::memset(mine, 0xEE, 16);
  std::memset(mine + 16, 0xDD, 16);
  barrier();
  const tsu_gaddr_t g = tsu_gaddr(peer, plain_seg(peer), slot(me) + 4);
  uint32_t v = 0x01020304, old = 0;
  EXPECT_EQ(amo<uint32_t>(g, TSU_AOP_SWAP, &v, nullptr, &old), TSU_OK);
  EXPECT_EQ(old, 0xEEEEEEEEu);
  int32_t minus = -5;
  int32_t iold = 0;
  EXPECT_EQ(amo<int32_t>(g, TSU_AOP_FETCH_ADD, &minus, nullptr, &iold), TSU_OK);
  EXPECT_EQ(iold, 0x01020304);
  EXPECT_EQ(load<uint32_t>(g), 0x01020304u - 5u);
  barrier();  // every writer's atomics have completed
  EXPECT_EQ(mp::check_fill(mine - 16, 16, 0xDD), SIZE_MAX) << "bytes before the slot";
  EXPECT_EQ(mp::check_fill(mine, 4, 0xEE), SIZE_MAX) << "the word before the target";
  EXPECT_EQ(mp::check_fill(mine + 8, 8, 0xEE), SIZE_MAX) << "the word after the target";
  EXPECT_EQ(mp::check_fill(mine + 16, 16, 0xDD), SIZE_MAX) << "bytes after the slot";
  uint32_t now;
  std::memcpy(&now, mine + 4, 4);
  EXPECT_EQ(now, 0x01020304u - 5u);
  barrier();
}

}  // namespace
