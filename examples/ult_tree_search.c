/* Unbalanced tree search with user-level threads (docs/ult.md).
 *
 * Rank 0 starts the search of one tree whose shape comes from a hash of each
 * node (most nodes are leaves, a few have many children, so subtrees differ
 * wildly in size).  Each subtree near the top is a thread spawned on "any"
 * rank; the balancer places them and idle ranks take threads that have not
 * started from loaded ones.  Rank 0 checks the node count against a
 * sequential count and prints throughput and each rank's share.
 *
 *   tsurun -n 2 ./ult_tree_search [depth]      (default depth 16)
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tsunagi/ult.h>

enum { kSearch = 1 };

static atomic_ullong g_nodes_here;
static uint64_t g_root = 1;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/* A node's children: usually none, sometimes up to 12. */
static unsigned children(uint64_t id, unsigned depth, unsigned max_depth) {
  if (depth >= max_depth) return 0;
  const uint64_t h = mix(id);
  return (h % 100) < 30 ? 1u + (unsigned)((h >> 8) % 12) : 0u;
}

/* Some work per node, so that spreading pays. */
static uint64_t visit(uint64_t id) {
  uint64_t x = id;
  for (int i = 0; i < 500; ++i) x = mix(x + (uint64_t)i);
  return x;
}

struct Task {
  uint64_t id;
  uint32_t depth, max_depth;
};

static uint64_t search(uint64_t id, unsigned depth, unsigned max_depth, volatile uint64_t *sink);

static void search_fn(const void *arg, size_t len, void *value, size_t *value_len) {
  struct Task t;
  volatile uint64_t sink = 0;
  if (len != sizeof t) return;
  memcpy(&t, arg, sizeof t);
  const uint64_t n = search(t.id, t.depth, t.max_depth, &sink);
  memcpy(value, &n, sizeof n);
  *value_len = sizeof n;
}

static uint64_t search(uint64_t id, unsigned depth, unsigned max_depth, volatile uint64_t *sink) {
  *sink += visit(id);
  atomic_fetch_add_explicit(&g_nodes_here, 1, memory_order_relaxed);
  const unsigned k = children(id, depth, max_depth);
  uint64_t total = 1;
  if (depth < max_depth / 2) { /* the top half: a thread per subtree, anywhere */
    tsu_ult_t ts[12];
    for (unsigned c = 0; c < k; ++c) {
      struct Task t = {id * 16 + c + 1, depth + 1, max_depth};
      if (tsu_ult_spawn(&ts[c], TSU_ULT_ANY_RANK, kSearch, &t, sizeof t, NULL) != TSU_OK) abort();
    }
    for (unsigned c = 0; c < k; ++c) {
      uint64_t n = 0;
      if (tsu_ult_join_value(ts[c], &n, sizeof n, NULL) != TSU_OK) abort();
      total += n;
    }
  } else {
    for (unsigned c = 0; c < k; ++c) total += search(id * 16 + c + 1, depth + 1, max_depth, sink);
  }
  return total;
}

static uint64_t count_sequential(uint64_t id, unsigned depth, unsigned max_depth) {
  uint64_t total = 1;
  const unsigned k = children(id, depth, max_depth);
  for (unsigned c = 0; c < k; ++c) total += count_sequential(id * 16 + c + 1, depth + 1, max_depth);
  return total;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const unsigned max_depth = argc > 1 ? (unsigned)atoi(argv[1]) : 16u;
  uint32_t me = 0, n = 1;
  if (tsu_init(NULL) != TSU_OK || tsu_ult_init(NULL) != TSU_OK) return 1;
  tsu_rank(&me);
  tsu_size(&n);
  if (tsu_ult_register(kSearch, search_fn) != TSU_OK) return 1;
  int ok = 1;
  double seconds = 0;
  uint64_t found = 0;
  if (me == 0) {
    /* The root: the first id whose tree is big enough (trees differ
     * wildly); one thread spawned here (rank 0), which spawns the rest. */
    uint64_t root_id = 1;
    const uint64_t lo = 1ull << (max_depth > 3 ? max_depth - 3 : 0), hi = 1ull << max_depth;
    for (;; ++root_id) {
      const uint64_t size = count_sequential(root_id, 0, max_depth);
      if ((size >= lo && size <= hi) || root_id == 100000) break;
    }
    g_root = root_id;
    struct Task root = {root_id, 0, max_depth};
    const double t0 = now_s();
    tsu_ult_t t;
    if (tsu_ult_spawn(&t, 0, kSearch, &root, sizeof root, NULL) != TSU_OK ||
        tsu_ult_join_value(t, &found, sizeof found, NULL) != TSU_OK)
      ok = 0;
    seconds = now_s() - t0;
  }
  /* Each rank's share of the nodes (after the search: rank 0 arrives last). */
  if (tsu_barrier() != TSU_OK) ok = 0;
  const uint64_t mine = atomic_load(&g_nodes_here);
  uint64_t *shares = calloc(n, sizeof *shares);
  tsu_counter_t c;
  tsu_counter_init(&c);
  if (tsu_try_allgather(TSU_TEAM_WORLD, &mine, shares, sizeof mine, tsu_counter_cb(&c)) != TSU_OK ||
      tsu_counter_wait(&c, 1) != TSU_OK)
    ok = 0;
  if (me == 0) {
    const uint64_t expected = count_sequential(g_root, 0, max_depth);
    ok = ok && found == expected;
    printf("tree of depth %u: %llu nodes (expected %llu: %s) in %.3f s on %u rank(s): "
           "%.0f nodes/s\nshare per rank:",
           max_depth, (unsigned long long)found, (unsigned long long)expected,
           found == expected ? "exact" : "WRONG", seconds, n, (double)found / seconds);
    for (uint32_t r = 0; r < n; ++r)
      printf(" %u: %.1f%%", r, 100.0 * (double)shares[r] / (double)(found ? found : 1));
    tsu_ult_counters_t k;
    tsu_ult_counters(&k);
    printf("\n");
  }
  free(shares);
  if (tsu_ult_finalize() != TSU_OK) ok = 0;
  tsu_finalize();
  return ok ? 0 : 1;
}
