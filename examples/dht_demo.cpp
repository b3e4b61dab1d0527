// dht_demo: a distributed hash table of counters, updated from several
// threads on every rank with remote atomics, then checked exactly.
//
// Each rank owns a slice of the table in its main segment; a slot is
// {key, count}.  To count a key, a thread finds its home rank and slot by
// hashing, claims the slot with a remote compare-and-swap (linear probing on
// collision) and adds 1 to the count with a remote atomic add.  Every rank then
// recomputes what all threads inserted and checks its own slice, and rank 0
// reads every slice with RMA gets to print the most frequent keys.
//
//   tsurun -n 4 ./dht_demo [--threads T] [--inserts N] [--keys K]
#include <tsunagi/tsunagi.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Slot {
  uint64_t key;    // 0 = empty
  uint64_t count;
};

struct Options {
  unsigned threads = 4;
  uint64_t inserts = 100000;  // per thread
  uint64_t keys = 5000;      // distinct keys drawn from
};

uint32_t g_rank, g_size;
uint64_t g_slots_per_rank;

#define CHECK(call)                                                                   \
  do {                                                                                \
    const tsu_status_t st_ = (call);                                                  \
    if (st_ != TSU_OK) {                                                              \
      std::fprintf(stderr, "rank %u: %s failed: %s (%s)\n", g_rank, #call,            \
                   tsu_strerror(st_), tsu_last_error());                              \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

uint64_t mix(uint64_t x) {  // splitmix64 finalizer: a good cheap hash
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The i-th key inserted by (rank, thread): deterministic, so every rank can
// recompute what everybody inserted.
uint64_t key_of(uint32_t rank, unsigned thread, uint64_t i, uint64_t keys) {
  return 1 + mix((uint64_t{rank} << 48) ^ (uint64_t{thread} << 40) ^ i) % keys;
}

uint32_t home_rank(uint64_t key) { return static_cast<uint32_t>(mix(key ^ 0xabcdef) % g_size); }
uint64_t home_slot(uint64_t key) { return mix(key) % g_slots_per_rank; }

// Issues a request, retrying while the engine's ring is full.
template <typename Issue>
void issue(Issue&& fn) {
  for (;;) {
    const tsu_status_t st = fn();
    if (st == TSU_OK) return;
    if (st != TSU_EAGAIN) CHECK(st);
    tsu_progress();
    std::this_thread::yield();
  }
}

void insert(uint64_t key) {
  const uint32_t owner = home_rank(key);
  uint64_t slot = home_slot(key);
  for (uint64_t probes = 0; probes < g_slots_per_rank; ++probes) {
    const tsu_gaddr_t key_addr = tsu_gaddr(owner, TSU_SEG_MAIN, slot * sizeof(Slot));
    uint64_t old = 0;
    tsu_counter_t done;
    tsu_counter_init(&done);
    issue([&] { return tsu_try_cas_u64(key_addr, 0, key, &old, tsu_counter_cb(&done)); });
    CHECK(tsu_counter_wait(&done, 1));
    if (old == 0 || old == key) {  // claimed it, or it was already ours
      // Fire and forget: tsu_quiet at the end waits for all of them.
      issue([&] {
        return tsu_try_add_u64(tsu_gaddr_add(key_addr, offsetof(Slot, count)), 1, tsu_cb_none());
      });
      return;
    }
    slot = (slot + 1) % g_slots_per_rank;
  }
  std::fprintf(stderr, "rank %u: table full\n", g_rank);
  std::exit(1);
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](uint64_t& out) {
      if (i + 1 >= argc) return false;
      char* end;
      out = std::strtoull(argv[++i], &end, 10);
      return *end == '\0' && out > 0;
    };
    uint64_t v;
    if (a == "--threads" && value(v) && v <= 64) o.threads = static_cast<unsigned>(v);
    else if (a == "--inserts" && value(v)) o.inserts = v;
    else if (a == "--keys" && value(v)) o.keys = v;
    else return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) {
    std::fprintf(stderr, "usage: dht_demo [--threads T<=64] [--inserts N] [--keys K]\n");
    return 2;
  }
  CHECK(tsu_init(nullptr));
  CHECK(tsu_rank(&g_rank));
  CHECK(tsu_size(&g_size));
  // Room for every key at a load factor of at most 1/2 per rank.
  g_slots_per_rank = std::max<uint64_t>(64, 4 * opt.keys / g_size + 64);
  void* base;
  size_t seg_size;
  CHECK(tsu_segment_info(TSU_SEG_MAIN, &base, &seg_size));
  if (g_slots_per_rank * sizeof(Slot) > seg_size) {
    std::fprintf(stderr, "rank %u: --keys too large for the main segment\n", g_rank);
    return 1;
  }
  auto* table = static_cast<Slot*>(base);  // starts zero-filled
  CHECK(tsu_barrier());

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < opt.threads; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < opt.inserts; ++i) insert(key_of(g_rank, t, i, opt.keys));
      CHECK(tsu_quiet());
    });
  for (auto& th : threads) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(tsu_barrier());

  // Check this rank's slice against a recomputation of every insert.
  std::vector<uint64_t> expected(opt.keys + 1, 0);
  for (uint32_t r = 0; r < g_size; ++r)
    for (unsigned t = 0; t < opt.threads; ++t)
      for (uint64_t i = 0; i < opt.inserts; ++i) ++expected[key_of(r, t, i, opt.keys)];
  std::vector<uint8_t> seen(opt.keys + 1, 0);
  uint64_t errors = 0, mine = 0;
  for (uint64_t s = 0; s < g_slots_per_rank; ++s) {
    const Slot& slot = table[s];
    if (!slot.key) {
      if (slot.count) ++errors;
      continue;
    }
    if (slot.key > opt.keys || home_rank(slot.key) != g_rank || seen[slot.key]++ ||
        slot.count != expected[slot.key])
      ++errors;
    mine += slot.count;
  }
  for (uint64_t k = 1; k <= opt.keys; ++k)
    if (home_rank(k) == g_rank && expected[k] && !seen[k]) ++errors;

  const uint64_t total = uint64_t{opt.threads} * opt.inserts;
  std::printf("rank %u: %" PRIu64 " inserts from %u threads in %.3f s = %.2f M inserts/s; "
              "slice holds %" PRIu64 " counts, %s\n",
              g_rank, total, opt.threads, secs, static_cast<double>(total) / secs / 1e6, mine,
              errors ? "MISMATCH" : "exact");
  std::fflush(stdout);

  // Rank 0 gathers every slice with RMA gets and prints the top keys.
  CHECK(tsu_barrier());
  if (g_rank == 0) {
    tsu_seg_t seg;
    void* buf;
    const size_t slice = g_slots_per_rank * sizeof(Slot);
    CHECK(tsu_segment_alloc(slice * g_size, &seg, &buf));
    tsu_counter_t got;
    tsu_counter_init(&got);
    for (uint32_t r = 0; r < g_size; ++r)
      issue([&] {
        return tsu_try_get(tsu_laddr(seg, r * slice), tsu_gaddr(r, TSU_SEG_MAIN, 0), slice,
                           tsu_counter_cb(&got));
      });
    CHECK(tsu_counter_wait(&got, g_size));
    auto* all = static_cast<Slot*>(buf);
    std::vector<Slot> used;
    uint64_t sum = 0;
    for (uint64_t s = 0; s < g_slots_per_rank * g_size; ++s)
      if (all[s].key) {
        used.push_back(all[s]);
        sum += all[s].count;
      }
    std::sort(used.begin(), used.end(), [](const Slot& a, const Slot& b) {
      return a.count != b.count ? a.count > b.count : a.key < b.key;
    });
    std::printf("job: %u ranks x %u threads, %zu distinct keys, %" PRIu64 " counts in all "
                "(expected %" PRIu64 ")\n",
                g_size, opt.threads, used.size(), sum, total * g_size);
    std::printf("top keys:");
    for (size_t i = 0; i < std::min<size_t>(5, used.size()); ++i)
      std::printf(" %" PRIu64 "x%" PRIu64, used[i].key, used[i].count);
    std::printf("\n");
    if (sum != total * g_size) ++errors;
    CHECK(tsu_segment_free(seg));
  }
  CHECK(tsu_finalize());
  if (errors) {
    std::fprintf(stderr, "rank %u: %" PRIu64 " errors\n", g_rank, errors);
    return 1;
  }
  if (g_rank == 0) std::printf("dht_demo: OK\n");
  return 0;
}
