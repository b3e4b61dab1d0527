// Volume under faults: every rank moves real amounts of traffic of every kind
// to ranks on other (pseudo-)nodes, so the udp transport's loss recovery,
// duplicate suppression, reordering and congestion control are exercised by
// thousands of messages and tens of MiB, not by a millisecond of traffic.
// The ctest entries run it under each in-process impairment (TSU_UDP_IMPAIR)
// and across network namespaces (nftables loss/dup, tc tbf, NFQUEUE delay).
//
// Per rank (defaults; environment knobs in parentheses):
//  - RMA: VOLUME_MB (64) MiB of puts and gets together, in rounds of up to
//    8 MiB per direction, chunk sizes 1 B .. 3 MiB (odd sizes, unaligned
//    source and destination offsets), issued by 3 threads at once; the
//    target checks every byte put into it, the origin every byte it got;
//  - third-party copies (tsu_try_copy): remote->remote, local->remote and
//    remote->local, 1 B .. 1 MiB, checked byte-exact by the destination with
//    untouched guard bytes behind;
//  - atomics: VOLUME_ATOMICS (100000) fetch-adds per rank, from 3 threads,
//    all ranks on 4 words of rank 0 (three u64, one u32): the
//    final values are exact and the fetched values of each word are exactly
//    0 .. count-1, each once across the job (bitmaps gathered on rank 0);
//    plus VOLUME_CAS (256) CAS increments of one word, likewise exact;
//  - active messages: VOLUME_AM (2000) short and medium AMs per rank from 2
//    threads to every other rank, checked for exactly-once, per-thread order,
//    content and a checksum in the arguments; then long AMs up to 1 MiB;
//  - tagged messages: VOLUME_TAGGED (2000) per rank from 2 threads to every
//    other rank, eager and rendezvous sizes, receives posted before and
//    after arrival, checked byte-exact and non-overtaking per (source, thread).
// Each rank prints one line
//   volume: rank R rma X MiB (P puts, G gets), copies C (Y MiB), atomics A
//     (+K cas), am M (L long, Z MiB), tagged T (W MiB) in S s
// and rank 0 one "volume: job ..." line with the totals.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "mp_util.hpp"

namespace {

using Clock = std::chrono::steady_clock;

uint64_t env_u64(const char* var, uint64_t dflt) {
  const char* v = std::getenv(var);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

using mp::node_of;
using mp::remote_peer;

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const void* p, size_t len) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < len; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

constexpr uint32_t kSalt = 77;  // pattern salt of the RMA source area
constexpr uint64_t kMiB = 1u << 20;

// ---- Layout of the main segment (same on every rank).
struct Layout {
  uint64_t region = 0;  // bytes per direction per RMA round
  uint64_t src = 0, put_dst = 0, get_dst = 0;
  uint64_t copy = 0, copy_slot = 0;  // n * 3 slots
  uint64_t longam = 0, long_slot = 0;  // n slots
  uint64_t atom = 0;                   // 64 B: words 0..2 u64, u32 at +24, CAS at +32
  uint64_t bitmap = 0, bitmap_slot = 0;  // n slots (rank 0's are read)
  uint64_t misc = 0;                   // allgather slot + scratch
  uint64_t end = 0;
};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Totals this rank moved (printed at the end).
struct Totals {
  Clock::time_point start{};
  bool started = false;
  std::atomic<uint64_t> puts{0}, gets{0}, put_bytes{0}, get_bytes{0};
  uint64_t copies = 0, copy_bytes = 0;
  uint64_t atomics = 0, cas_ok = 0, cas_tries = 0;
  uint64_t am = 0, am_long = 0, am_bytes = 0;
  uint64_t tagged = 0, tagged_bytes = 0;
} g_vol;

void mark_start() {
  if (!g_vol.started) {
    g_vol.started = true;
    g_vol.start = Clock::now();
  }
}

// Atomics: per rank, a multiple of 4 words x kAtomThreads threads.
constexpr unsigned kAtomThreads = 3;
uint64_t atomics_per_rank(uint32_t n) {
  (void)n;
  return align_up(env_u64("VOLUME_ATOMICS", 100000), 4 * kAtomThreads);
}

Layout layout(uint32_t n) {
  Layout L;
  const uint64_t volume = env_u64("VOLUME_MB", 64) * kMiB;  // puts + gets per rank
  L.region = std::clamp<uint64_t>(volume / 8, 1 * kMiB, 8 * kMiB);
  L.src = 0;
  L.put_dst = align_up(L.src + L.region + 4096, 4096);
  L.get_dst = align_up(L.put_dst + L.region, 4096);
  L.copy = align_up(L.get_dst + L.region, 4096);
  L.copy_slot = kMiB + 4096;
  L.longam = L.copy + uint64_t{n} * 3 * L.copy_slot;
  L.long_slot = kMiB + 4096;
  L.atom = L.longam + uint64_t{n} * L.long_slot;
  L.bitmap = L.atom + 4096;
  // Per rank: 4 words, each a bitmap of the whole job's adds to that word.
  L.bitmap_slot = align_up(4 * ((atomics_per_rank(n) * n / 4 + 7) / 8), 4096);
  L.misc = L.bitmap + uint64_t{n} * L.bitmap_slot;
  L.end = L.misc + 4096 + 4 * uint64_t{n};
  return L;
}

class Volume : public ::testing::Test {
 protected:
  void SetUp() override {
    me = mp::rank();
    n = mp::size();
    L = layout(n);
    base = mp::main_base();
    if (n < 2) GTEST_SKIP() << "needs ranks on two nodes";
    ASSERT_GE(mp::main_size(), L.end) << "run with TSU_SEGMENT_SIZE of at least " << L.end;
    mark_start();
  }
  uint32_t me = 0, n = 0;
  Layout L;
  uint8_t* base = nullptr;
};

TEST_F(Volume, RanksSpanNodes) {
  uint32_t nodes = 0;
  ASSERT_EQ(tsu_node_count(&nodes), TSU_OK);
  ASSERT_GE(nodes, 2u) << "run with tsurun --ranks-per-node (or across hosts) so ranks pose as several nodes";
  // The RMA source area, read by puts, gets and copies all along.
  mp::fill_pattern(base + L.src, L.region + 4096, me, 0, kSalt);
  mp::barrier();
}

// One RMA chunk size: mostly small, some medium, a few large (odd sizes
// around the datagram and message boundaries included).
uint64_t chunk_size(uint64_t& rng) {
  static const uint64_t small[] = {1, 2, 3, 7, 8, 9, 63, 64, 65, 100, 511, 1000, 1471, 1472, 1473, 4095, 4096};
  static const uint64_t medium[] = {8191, 9000, 65535, 65536, 65537, 100003, 262143, 262144, 262145};
  static const uint64_t large[] = {524289, (1u << 20) - 1, (1u << 20) + 7, (2u << 20) + 3, (3u << 20) - 5};
  const uint64_t u = splitmix(rng) % 100;
  if (u < 88) return small[splitmix(rng) % std::size(small)] + splitmix(rng) % 3;
  if (u < 98) return medium[splitmix(rng) % std::size(medium)];
  return large[splitmix(rng) % std::size(large)];
}

struct Chunk {
  uint64_t off, len;
};
// A partition of [0, region) into chunks.
std::vector<Chunk> partition(uint64_t region, uint64_t seed) {
  std::vector<Chunk> out;
  uint64_t rng = seed, off = 0;
  while (off < region) {
    const uint64_t len = std::min(chunk_size(rng), region - off);
    out.push_back({off, len});
    off += len;
  }
  return out;
}

// Each round: every rank puts a partition of its source area (read at an
// odd shift) into its remote peer's put area, and gets a partition of the
// peer's source area into its own get area, from 3 threads at once; then
// the target checks the put area, the origin the get area, byte by byte.
TEST_F(Volume, RmaMixedSizesFromThreads) {
  const uint32_t peer = remote_peer(me, n);
  uint32_t writer = n;
  for (uint32_t w = 0; w < n; ++w)
    if (remote_peer(w, n) == me) writer = w;
  ASSERT_LT(writer, n);
  const uint64_t volume = env_u64("VOLUME_MB", 64) * kMiB;
  const uint64_t rounds = std::max<uint64_t>(1, (volume + 2 * L.region - 1) / (2 * L.region));
  constexpr unsigned kThreads = 3;
  for (uint64_t round = 0; round < rounds; ++round) {
    const uint64_t put_shift = (round * 22 + 5) % 64 | 1, get_shift = (round * 38 + 11) % 64 | 1;
    std::memset(base + L.put_dst, 0, L.region);
    std::memset(base + L.get_dst, 0, L.region);
    mp::barrier();
    const auto puts = partition(L.region, (uint64_t{me} << 32) ^ (round * 2 + 1));
    const auto gets = partition(L.region, (uint64_t{me} << 32) ^ (round * 2 + 2) ^ 0xABCDEF);
    std::atomic<int> bad{0};
    mp::run_threads(kThreads, [&](unsigned t) {
      mp::Tracker tr(puts.size() / kThreads + gets.size() / kThreads + 2);
      uint64_t np = 0, ng = 0, bp = 0, bg = 0;
      // Interleave this thread's puts and gets.
      const size_t most = std::max(puts.size(), gets.size());
      for (size_t i = t; i < most; i += kThreads) {
        if (i < puts.size()) {
          const Chunk c = puts[i];
          if (tr.issue([&](tsu_cb_t cb) {
                return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, L.put_dst + c.off),
                                   tsu_laddr(TSU_SEG_MAIN, L.src + put_shift + c.off), c.len, cb);
              }) != TSU_OK)
            ++bad;
          ++np;
          bp += c.len;
        }
        if (i < gets.size()) {
          const Chunk c = gets[i];
          if (tr.issue([&](tsu_cb_t cb) {
                return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, L.get_dst + c.off),
                                   tsu_gaddr(peer, TSU_SEG_MAIN, L.src + get_shift + c.off), c.len, cb);
              }) != TSU_OK)
            ++bad;
          ++ng;
          bg += c.len;
        }
      }
      if (!tr.wait_all()) ++bad;
      tr.expect_all();
      g_vol.puts += np;
      g_vol.gets += ng;
      g_vol.put_bytes += bp;
      g_vol.get_bytes += bg;
    });
    ASSERT_EQ(bad.load(), 0) << "round " << round;
    EXPECT_EQ(mp::check_pattern(base + L.get_dst, L.region, peer, get_shift, kSalt), SIZE_MAX)
        << "round " << round << ": data got from rank " << peer;
    mp::barrier();  // every put into us has completed at its origin
    EXPECT_EQ(mp::check_pattern(base + L.put_dst, L.region, writer, put_shift, kSalt), SIZE_MAX)
        << "round " << round << ": data put by rank " << writer;
  }
  mp::barrier();
}

// Third-party copies.  Copier c, round r, job j in 0..2:
//   j 0: between two other ranks (other nodes first): remote->remote;
//   j 1: its own source -> its remote peer (local->remote);
//   j 2: its remote peer's source -> itself (remote->local).
// The destination slot is (c, j) in the destination's copy area.
struct CopyJob {
  uint32_t src, dst;
  uint64_t src_off, dst_off, len;
};
CopyJob copy_job(uint32_t c, uint32_t j, uint64_t round, uint32_t n, const Layout& L) {
  static const uint64_t sizes[] = {1, 17, 1471, 1473, 4093, 65537, 262143, 262145, 600001, (1u << 20) + 3};
  CopyJob job{};
  if (j == 0) {
    std::vector<uint32_t> others;
    for (uint32_t k = 1; k < n; ++k) others.push_back((c + k + static_cast<uint32_t>(round)) % n);
    others.erase(std::remove(others.begin(), others.end(), c), others.end());
    std::stable_partition(others.begin(), others.end(),
                          [&](uint32_t r) { return node_of(r) != node_of(c); });
    job.src = others[0];
    job.dst = others.size() > 1 ? others[1] : c;
  } else if (j == 1) {
    job.src = c;
    job.dst = remote_peer(c, n);
  } else {
    job.src = remote_peer(c, n);
    job.dst = c;
  }
  job.len = sizes[(round * 3 + j + c) % std::size(sizes)];
  job.src_off = (round * 40009 + j * 1031 + c * 17) % (L.region - job.len + 1);
  job.dst_off = (round * 3 + j * 11 + c) % 61;
  return job;
}

TEST_F(Volume, ThirdPartyCopies) {
  const uint64_t rounds = env_u64("VOLUME_COPY_ROUNDS", 12);
  for (uint64_t round = 0; round < rounds; ++round) {
    std::memset(base + L.copy, 0, uint64_t{n} * 3 * L.copy_slot);
    mp::barrier();
    mp::Tracker tr(3);
    for (uint32_t j = 0; j < 3; ++j) {
      const CopyJob job = copy_job(me, j, round, n, L);
      const uint64_t slot = L.copy + (uint64_t{me} * 3 + j) * L.copy_slot;
      ASSERT_EQ(tr.issue([&](tsu_cb_t cb) {
        return tsu_try_copy(tsu_gaddr(job.dst, TSU_SEG_MAIN, slot + job.dst_off),
                            tsu_gaddr(job.src, TSU_SEG_MAIN, L.src + job.src_off), job.len, cb);
      }), TSU_OK) << tsu_last_error();
      ++g_vol.copies;
      g_vol.copy_bytes += job.len;
    }
    ASSERT_TRUE(tr.wait_all());
    tr.expect_all();
    mp::barrier();
    for (uint32_t c = 0; c < n; ++c)
      for (uint32_t j = 0; j < 3; ++j) {
        const CopyJob job = copy_job(c, j, round, n, L);
        if (job.dst != me) continue;
        const uint8_t* slot = base + L.copy + (uint64_t{c} * 3 + j) * L.copy_slot;
        EXPECT_EQ(mp::check_fill(slot, job.dst_off, 0), SIZE_MAX) << "before copy " << c << "/" << j;
        EXPECT_EQ(mp::check_pattern(slot + job.dst_off, job.len, job.src, job.src_off, kSalt), SIZE_MAX)
            << "round " << round << ": copy by rank " << c << " job " << j << " from rank " << job.src
            << " (" << job.len << " B)";
        EXPECT_EQ(mp::check_fill(slot + job.dst_off + job.len, 64, 0), SIZE_MAX)
            << "behind copy " << c << "/" << j;
      }
    mp::barrier();
  }
}

// Contended atomics on rank 0: fetch-adds on 4 words from every rank's
// threads; fetched values checked unique per word across the job.
TEST_F(Volume, ContendedAtomicsExact) {
  const uint64_t per_rank = atomics_per_rank(n);
  const uint64_t per_word = per_rank * n / 4;  // job-wide adds per word
  const uint64_t per_thread = per_rank / kAtomThreads;
  if (me == 0) std::memset(base + L.atom, 0, 64);
  mp::barrier();
  std::vector<std::vector<uint64_t>> fetched(kAtomThreads, std::vector<uint64_t>(per_thread, 0));
  std::atomic<int> bad{0};
  mp::run_threads(kAtomThreads, [&](unsigned t) {
    mp::Tracker tr(per_thread);
    const uint64_t one64 = 1;
    const uint32_t one32 = 1;
    for (uint64_t i = 0; i < per_thread; ++i) {
      const uint32_t w = static_cast<uint32_t>(i % 4);
      const tsu_status_t st = tr.issue([&](tsu_cb_t cb) {
        if (w < 3)
          return tsu_try_atomic(tsu_gaddr(0, TSU_SEG_MAIN, L.atom + 8 * w), TSU_AOP_FETCH_ADD,
                                TSU_TYPE_UINT64, &one64, nullptr, &fetched[t][i], cb);
        // 4-byte result into the low half of the zeroed u64 (little-endian).
        return tsu_try_atomic(tsu_gaddr(0, TSU_SEG_MAIN, L.atom + 24), TSU_AOP_FETCH_ADD,
                              TSU_TYPE_UINT32, &one32, nullptr, &fetched[t][i], cb);
      });
      if (st != TSU_OK) {
        ++bad;
        break;
      }
    }
    if (!tr.wait_all()) ++bad;
    tr.expect_all();
  });
  ASSERT_EQ(bad.load(), 0);
  g_vol.atomics += per_rank;
  // This rank's fetched values: in range and distinct, as a bitmap per word.
  std::vector<uint8_t> bits(L.bitmap_slot, 0);
  const uint64_t word_bytes = (per_word + 7) / 8;
  uint64_t dups = 0, out_of_range = 0;
  for (unsigned t = 0; t < kAtomThreads; ++t)
    for (uint64_t i = 0; i < per_thread; ++i) {
      const uint64_t w = i % 4, v = fetched[t][i];
      if (v >= per_word) {
        ++out_of_range;
        continue;
      }
      uint8_t& b = bits[w * word_bytes + v / 8];
      if (b & (1u << (v % 8))) ++dups;
      b |= static_cast<uint8_t>(1u << (v % 8));
    }
  EXPECT_EQ(dups, 0u) << "a fetch-add result seen twice by this rank";
  EXPECT_EQ(out_of_range, 0u) << "a fetch-add result beyond the job's count";
  std::memcpy(base + L.bitmap + uint64_t{me} * L.bitmap_slot, bits.data(), bits.size());
  if (me != 0) {
    ASSERT_EQ(mp::put_sync(tsu_gaddr(0, TSU_SEG_MAIN, L.bitmap + uint64_t{me} * L.bitmap_slot),
                           tsu_laddr(TSU_SEG_MAIN, L.bitmap + uint64_t{me} * L.bitmap_slot),
                           L.bitmap_slot),
              TSU_OK);
  }
  mp::barrier();
  if (me == 0) {
    for (uint32_t w = 0; w < 4; ++w) {
      uint64_t v = 0;
      if (w < 3) std::memcpy(&v, base + L.atom + 8 * w, 8);
      else {
        uint32_t v32 = 0;
        std::memcpy(&v32, base + L.atom + 24, 4);
        v = v32;
      }
      EXPECT_EQ(v, per_word) << "final value of word " << w;
      // Every value 0..per_word-1 fetched by exactly one rank.
      uint64_t missing = 0, twice = 0;
      for (uint64_t byte = 0; byte < word_bytes; ++byte) {
        uint32_t seen = 0, overlap = 0;
        for (uint32_t r = 0; r < n; ++r) {
          const uint8_t b = base[L.bitmap + uint64_t{r} * L.bitmap_slot + w * word_bytes + byte];
          overlap |= seen & b;
          seen |= b;
        }
        const uint64_t valid = std::min<uint64_t>(8, per_word - byte * 8);
        const uint32_t want = valid == 8 ? 0xFFu : (1u << valid) - 1;
        missing += static_cast<uint64_t>(__builtin_popcount(want & ~seen));
        twice += static_cast<uint64_t>(__builtin_popcount(overlap));
      }
      EXPECT_EQ(missing, 0u) << "word " << w << ": fetch-add results never seen";
      EXPECT_EQ(twice, 0u) << "word " << w << ": fetch-add results seen by two ranks";
    }
  }
  mp::barrier();
}

TEST_F(Volume, ContendedCasIncrements) {
  const uint64_t total = env_u64("VOLUME_CAS", 256);
  const uint64_t per_rank = (total + n - 1) / n;
  constexpr unsigned kThreads = 2;
  const uint64_t word = L.atom + 32;
  if (me == 0) std::memset(base + word, 0, 8);
  mp::barrier();
  std::atomic<uint64_t> tries{0};
  std::vector<std::vector<uint64_t>> won(kThreads);
  mp::run_threads(kThreads, [&](unsigned t) {
    const uint64_t mine = per_rank / kThreads + (t < per_rank % kThreads ? 1 : 0);
    uint64_t guess = 0;
    while (won[t].size() < mine) {
      uint64_t result = ~0ull;
      mp::Done d;
      const uint64_t desired = guess + 1;
      if (mp::issue([&] { return tsu_try_cas_u64(tsu_gaddr(0, TSU_SEG_MAIN, word), guess, desired, &result, d.cb()); }) !=
              TSU_OK ||
          !d.wait("CAS") || d.st.load() != TSU_OK) {
        ADD_FAILURE() << "CAS failed: " << d.st.load();
        return;
      }
      ++tries;
      if (result == guess) won[t].push_back(guess);
      guess = result == guess ? desired : result;
    }
  });
  std::vector<uint64_t> all;
  for (auto& v : won) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  EXPECT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << "a CAS won twice on one value";
  g_vol.cas_ok += all.size();
  g_vol.cas_tries += tries.load();
  mp::barrier();
  if (me == 0) {
    uint64_t v = 0;
    std::memcpy(&v, base + word, 8);
    EXPECT_EQ(v, per_rank * n) << "CAS increments";
  }
  mp::barrier();
}

// ---- Active messages.
constexpr unsigned kAmThreads = 2;
constexpr uint32_t kAmId = 21, kAmLongId = 22;

struct AmState {
  explicit AmState(uint32_t n) : next(n * kAmThreads) {}
  std::vector<std::atomic<uint64_t>> next;  // per (source, thread): next sequence
  std::atomic<uint64_t> got{0}, errors{0}, bytes{0}, long_got{0};
  uint64_t long_slot_base = 0, long_slot = 0;
};

uint64_t am_check(uint32_t src, uint64_t thread, uint64_t seq) {
  uint64_t s = (uint64_t{src} << 40) ^ (thread << 32) ^ seq;
  return splitmix(s);
}
size_t am_len(uint64_t seq, size_t medium_max) {
  static const size_t lens[] = {0, 1, 13, 100, 1000, 1471, 1473, 4000};
  if (seq % 3 == 0) return SIZE_MAX;  // short
  if (seq % 50 == 1) return medium_max;
  return std::min(lens[seq % std::size(lens)], medium_max);
}
void am_fill(uint8_t* p, size_t len, uint32_t src, uint64_t thread, uint64_t seq) {
  mp::fill_pattern(p, len, src, seq * 8192, 100 + static_cast<uint32_t>(thread));
}

void on_am(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs, void* payload, size_t len,
           void* ctx) {
  auto& s = *static_cast<AmState*>(ctx);
  uint32_t src = 0;
  tsu_am_source(token, &src);
  // args: thread, seq, (source << 32 | medium length or 0xFFFFFFFF for short), check
  bool ok = nargs == 4 && args[0] < kAmThreads && (args[2] >> 32) == src;
  if (ok) {
    const uint64_t thread = args[0], seq = args[1];
    auto& next = s.next[src * kAmThreads + thread];
    ok = next.load() == seq;  // in order, exactly once, per sending thread
    next.store(seq + 1);
    const uint32_t l = static_cast<uint32_t>(args[2]);
    if (l == 0xFFFFFFFFu) {
      ok = ok && len == 0 && args[3] == am_check(src, thread, seq);
    } else {
      ok = ok && len == l && args[3] == fnv1a(payload, len) &&
           mp::check_pattern(payload, len, src, seq * 8192, 100 + static_cast<uint32_t>(thread)) == SIZE_MAX;
    }
  }
  if (!ok) s.errors.fetch_add(1);
  s.bytes.fetch_add(len);
  s.got.fetch_add(1);
}

void on_am_long(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs, void* payload,
                size_t len, void* ctx) {
  auto& s = *static_cast<AmState*>(ctx);
  uint32_t src = 0;
  tsu_am_source(token, &src);
  // args: source, round, length, fnv
  bool ok = nargs == 4 && args[0] == src && args[2] == len;
  if (ok && len) {
    const uint8_t* at = mp::main_base() + s.long_slot_base + uint64_t{src} * s.long_slot;
    ok = payload == at && args[3] == fnv1a(payload, len) &&
         mp::check_pattern(payload, len, src, args[1] * 4096 + 3, 200) == SIZE_MAX;
  }
  if (!ok) s.errors.fetch_add(1);
  s.bytes.fetch_add(len);
  s.long_got.fetch_add(1);
}

TEST_F(Volume, ActiveMessagesExactlyOnceInOrder) {
  AmState state(n);
  state.long_slot_base = L.longam;
  state.long_slot = L.long_slot;
  ASSERT_EQ(tsu_am_register(kAmId, on_am, &state), TSU_OK) << tsu_last_error();
  ASSERT_EQ(tsu_am_register(kAmLongId, on_am_long, &state), TSU_OK) << tsu_last_error();
  const size_t medium_max = tsu_am_medium_max();
  const uint64_t per_rank = env_u64("VOLUME_AM", 2000);
  const uint64_t per_thread_dst = std::max<uint64_t>(1, per_rank / (kAmThreads * (n - 1)));
  std::atomic<uint64_t> sent{0}, sent_bytes{0};
  mp::run_threads(kAmThreads, [&](unsigned t) {
    std::vector<uint8_t> buf(medium_max);
    mp::Tracker tr(per_thread_dst * (n - 1));
    for (uint64_t seq = 0; seq < per_thread_dst; ++seq)
      for (uint32_t k = 1; k < n; ++k) {
        const uint32_t dst = (me + k) % n;
        const size_t len = am_len(seq, medium_max);
        uint64_t args[4] = {t, seq, uint64_t{me} << 32, 0};
        tsu_status_t st;
        if (len == SIZE_MAX) {
          args[2] |= 0xFFFFFFFFu;
          args[3] = am_check(me, t, seq);
          st = tr.issue([&](tsu_cb_t cb) { return tsu_try_am_short(dst, kAmId, args, 4, cb); });
        } else {
          am_fill(buf.data(), len, me, t, seq);
          args[2] |= len;
          args[3] = fnv1a(buf.data(), len);
          st = tr.issue([&](tsu_cb_t cb) {
            return tsu_try_am_medium(dst, kAmId, args, 4, buf.data(), len, cb);
          });
          sent_bytes += len;
        }
        EXPECT_EQ(st, TSU_OK) << tsu_last_error();
        if (st != TSU_OK) return;
        ++sent;
      }
    EXPECT_TRUE(tr.wait_all());
    tr.expect_all();
  });
  const uint64_t expected = per_thread_dst * kAmThreads * (n - 1);
  EXPECT_TRUE(mp::wait_until([&] { return state.got.load() >= expected; }, "short/medium AMs"));
  g_vol.am += sent.load();
  g_vol.am_bytes += sent_bytes.load();
  mp::barrier();
  // Long AMs: each round every rank writes one payload into its slot on every
  // other rank; the handler checks it in place.
  static const size_t long_sizes[] = {1, 4095, 65537, 262143, 262145, 700001, (1u << 20) + 3, 1000};
  const uint64_t long_rounds = env_u64("VOLUME_AM_LONG_ROUNDS", 8);
  std::vector<uint8_t> lbuf((1u << 20) + 3);
  for (uint64_t round = 0; round < long_rounds; ++round) {
    const size_t len = long_sizes[(round + me) % std::size(long_sizes)];
    mp::fill_pattern(lbuf.data(), len, me, round * 4096 + 3, 200);
    const uint64_t args[4] = {me, round, len, fnv1a(lbuf.data(), len)};
    mp::Tracker tr(n);
    for (uint32_t k = 1; k < n; ++k) {
      const uint32_t dst = (me + k) % n;
      ASSERT_EQ(tr.issue([&](tsu_cb_t cb) {
        return tsu_try_am_long(dst, kAmLongId, args, 4, lbuf.data(), len,
                               tsu_gaddr(dst, TSU_SEG_MAIN, L.longam + uint64_t{me} * L.long_slot), cb);
      }), TSU_OK) << tsu_last_error();
      ++g_vol.am;
      ++g_vol.am_long;
      g_vol.am_bytes += len;
    }
    ASSERT_TRUE(tr.wait_all());
    tr.expect_all();
    // The slots are reused next round: wait for every handler here.
    EXPECT_TRUE(mp::wait_until([&] { return state.long_got.load() >= (round + 1) * (n - 1); },
                               "long AMs"));
    mp::barrier();
  }
  for (int i = 0; i < 20; ++i) tsu_progress();
  EXPECT_EQ(state.got.load(), expected) << "exactly once";
  EXPECT_EQ(state.long_got.load(), long_rounds * (n - 1)) << "long AMs exactly once";
  EXPECT_EQ(state.errors.load(), 0u) << "AMs out of order, duplicated or with wrong content";
  mp::barrier();
  ASSERT_EQ(tsu_am_register(kAmId, nullptr, nullptr), TSU_OK);
  ASSERT_EQ(tsu_am_register(kAmLongId, nullptr, nullptr), TSU_OK);
}

// ---- Tagged messages.
constexpr unsigned kTagThreads = 2;
constexpr uint64_t kTagBatch = 64;  // messages per (source, thread) per round

size_t tagged_len(uint32_t src, uint64_t thread, uint64_t seq) {
  uint64_t s = (uint64_t{src} << 40) ^ (thread << 32) ^ (seq * 7919);
  const uint64_t r = splitmix(s);
  if (seq % 16 == 15) return 65536 + r % (1u << 20);  // rendezvous, large
  if (seq % 4 == 3) return 8193 + r % 30000;          // rendezvous, small
  if (seq % 8 == 2) return 8192;                      // the eager limit
  return r % 8193;                                    // eager
}

TEST_F(Volume, TaggedEagerAndRendezvousNonOvertaking) {
  const uint64_t per_rank = env_u64("VOLUME_TAGGED", 2000);
  const uint64_t per_round = uint64_t{kTagThreads} * (n - 1) * kTagBatch;
  const uint64_t rounds = std::max<uint64_t>(1, (per_rank + per_round - 1) / per_round);
  // Message `seq` from (src, thread): pattern over its length, so a message
  // matched into the wrong receive (overtaking) fails the byte check.
  for (uint64_t round = 0; round < rounds; ++round) {
    const bool prepost = round % 2 == 0;
    struct Recv {
      std::vector<uint8_t> buf;
      tsu_msg_status_t st{};
      mp::Done done;
      uint32_t src = 0;
      uint64_t thread = 0, seq = 0;
      size_t len = 0;
    };
    std::vector<std::unique_ptr<Recv>> recvs;
    auto post_all = [&] {
      for (uint64_t i = 0; i < kTagBatch; ++i)
        for (uint32_t k = 1; k < n; ++k)
          for (uint64_t t = 0; t < kTagThreads; ++t) {
            auto r = std::make_unique<Recv>();
            r->src = (me + n - k) % n;
            r->thread = t;
            r->seq = round * kTagBatch + i;
            r->len = tagged_len(r->src, t, r->seq);
            r->buf.assign(r->len + 16, 0xEE);
            ASSERT_EQ(tsu_try_recv(r->src, 1000 + t, TSU_TAG_EXACT, r->buf.data(), r->buf.size(),
                                   &r->st, r->done.cb(), nullptr),
                      TSU_OK)
                << tsu_last_error();
            recvs.push_back(std::move(r));
          }
    };
    if (prepost) post_all();
    mp::barrier();
    std::atomic<uint64_t> sent{0}, sent_bytes{0};
    std::vector<std::thread> senders;
    for (unsigned t = 0; t < kTagThreads; ++t)
      senders.emplace_back([&, t] {
        std::vector<std::vector<uint8_t>> bufs;
        bufs.reserve(kTagBatch * (n - 1));
        auto trp = std::make_unique<mp::Tracker>(kTagBatch * (n - 1));
        mp::Tracker& tr = *trp;
        for (uint64_t i = 0; i < kTagBatch; ++i)
          for (uint32_t k = 1; k < n; ++k) {
            const uint32_t dst = (me + k) % n;
            const uint64_t seq = round * kTagBatch + i;
            const size_t len = tagged_len(me, t, seq);
            bufs.emplace_back(len);
            mp::fill_pattern(bufs.back().data(), len, me, seq << 21, 300 + t);
            const tsu_status_t st = tr.issue([&](tsu_cb_t cb) {
              return tsu_try_send(dst, 1000 + t, bufs.back().data(), len, cb);
            });
            EXPECT_EQ(st, TSU_OK) << tsu_last_error();
            if (st != TSU_OK) return;
            ++sent;
            sent_bytes += len;
          }
        if (!tr.wait_all()) {
          // Rendezvous sends may still read their buffers and complete into
          // the tracker: keep both.
          new std::vector<std::vector<uint8_t>>(std::move(bufs));
          (void)trp.release();
          return;
        }
        tr.expect_all();
      });
    if (!prepost) post_all();  // racing the arrivals: some expected, some unexpected
    for (auto& s : senders) s.join();
    int reported = 0;
    for (auto& r : recvs) {
      if (!r->done.wait("tagged receive")) {
        // Receives still posted would write into freed memory: keep them all.
        for (auto& keep : recvs) (void)keep.release();
        FAIL() << "round " << round << ": receive of message " << r->seq << " from rank " << r->src
               << " never completed";
      }
      const bool ok = r->done.st.load() == TSU_OK && r->st.error == TSU_OK && r->st.source == r->src &&
                      r->st.tag == 1000 + r->thread && r->st.length == r->len &&
                      mp::check_pattern(r->buf.data(), r->len, r->src, r->seq << 21,
                                        300 + static_cast<uint32_t>(r->thread)) == SIZE_MAX &&
                      mp::check_fill(r->buf.data() + r->len, 16, 0xEE) == SIZE_MAX;
      if (!ok && ++reported <= 10)  // every receive is waited for; the first few reported
        ADD_FAILURE() << "round " << round << ": message " << r->seq << " from rank " << r->src
                      << " thread " << r->thread << " (" << r->len << " B): status "
                      << r->done.st.load() << ", length " << r->st.length;
    }
    EXPECT_EQ(reported, 0) << "round " << round << ": tagged messages wrong, misplaced or overtaken";
    g_vol.tagged += sent.load();
    g_vol.tagged_bytes += sent_bytes.load();
    mp::barrier();
  }
}

TEST_F(Volume, Summary) {
  const double secs = std::chrono::duration<double>(Clock::now() - g_vol.start).count();
  const uint64_t rma_bytes = g_vol.put_bytes + g_vol.get_bytes;
  auto mib = [](uint64_t b) { return static_cast<double>(b) / kMiB; };
  std::printf("volume: rank %u rma %.1f MiB (%" PRIu64 " puts, %" PRIu64 " gets), copies %" PRIu64
              " (%.1f MiB), atomics %" PRIu64 " (+%" PRIu64 " cas, %" PRIu64 " tries), am %" PRIu64
              " (%" PRIu64 " long, %.1f MiB), tagged %" PRIu64 " (%.1f MiB) in %.1f s\n",
              me, mib(rma_bytes), g_vol.puts.load(), g_vol.gets.load(), g_vol.copies,
              mib(g_vol.copy_bytes), g_vol.atomics, g_vol.cas_ok, g_vol.cas_tries, g_vol.am,
              g_vol.am_long, mib(g_vol.am_bytes), g_vol.tagged, mib(g_vol.tagged_bytes), secs);
  std::fflush(stdout);
  // Job totals on rank 0 (KiB and counts fit 32 bits).
  const uint64_t slot = L.misc, scratch = L.misc + 64;
  auto total = [&](uint64_t v) {
    uint64_t sum = 0;
    for (uint32_t x : mp::allgather_u32(static_cast<uint32_t>(v), slot, scratch)) sum += x;
    return sum;
  };
  const uint64_t rma_kib = total(rma_bytes >> 10), ops = total(g_vol.puts + g_vol.gets);
  const uint64_t copies = total(g_vol.copies), atomics = total(g_vol.atomics), cas = total(g_vol.cas_ok);
  const uint64_t am = total(g_vol.am), tagged = total(g_vol.tagged);
  const uint64_t msg_kib = total((g_vol.am_bytes + g_vol.tagged_bytes) >> 10);
  if (me == 0) {
    std::printf("volume: job of %u ranks: rma %.1f MiB (%" PRIu64 " ops), copies %" PRIu64 ", atomics %" PRIu64
                " (+%" PRIu64 " cas), am %" PRIu64 ", tagged %" PRIu64 " (am+tagged %.1f MiB) in %.1f s\n",
                n, static_cast<double>(rma_kib) / 1024, ops, copies, atomics, cas, am, tagged,
                static_cast<double>(msg_kib) / 1024, secs);
    std::fflush(stdout);
  }
  EXPECT_GE(rma_bytes, env_u64("VOLUME_MB", 64) * kMiB) << "this rank's RMA volume";
  if (!std::getenv("VOLUME_ATOMICS")) EXPECT_GE(g_vol.atomics, 100000u) << "this rank's atomics";
  mp::barrier();
}

}  // namespace
