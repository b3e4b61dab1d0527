// The active-set collectives (deprecated in OpenSHMEM 1.5, still in wide use).
//
// Only the members of the set call them, so no tsunagi team can be made for
// the set: they run on the library's RMA and atomics, with the user's pSync
// (SHMEM_SYNC_SIZE longs, SHMEM_SYNC_VALUE = 0 on entry) as counters:
//   pSync[0]  arrivals of a PE's children in the barrier tree
//   pSync[1]  the barrier's release from the parent
//   pSync[2]  data received (counted signals of put_signal or atomics)
//   pSync[3]  collect's running offset, handed from PE to PE
// Every counter is raised by atomic increments and taken down by the PE that
// waited on it (an atomic decrement of what it waited for), so nothing is lost
// when a fast PE's next collective raises a counter early, and a PE's pSync
// is back at 0 on return unless a later call already raised it.
//
// A set of every PE (PE_start 0, PE_size n_pes: what most programs pass)
// runs on the world team's collectives instead (collectives_team.cpp): every
// PE calls them, in the same order, so tsunagi's team collectives apply, and
// pSync is not touched.
//
// Every other call but the barrier starts with a barrier of the set: then no
// data or signal of a call reaches a PE still in the call before (the same
// pSync may serve the next collective at once, of any kind), and every PE's
// dest is ready when data is put into it.  The barrier and the data phases use a
// tree of fan-out kFan rooted at the set's first PE (the root for broadcast).
#include "collectives.hpp"
#include "teams.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tsu::shmem {

namespace {

constexpr int kFan = 4;
enum Slot { kArrive = 0, kRelease = 1, kData = 2, kChain = 3 };

struct Members {
  int start;
  int stride;
  int size;
  int me;  // the caller's index in the set
  int pe(int i) const noexcept { return start + i * stride; }
};

Members members(ActiveSet s, const long* pSync, const char* fn) noexcept {
  const int n = n_pes();
  if (s.size < 1) fail(fn, "PE_size %d: the active set needs at least one PE", s.size);
  if (s.log_stride < 0 || s.log_stride > 30) fail(fn, "logPE_stride %d is out of range", s.log_stride);
  if (s.start < 0 || s.start >= n) fail(fn, "PE_start %d is not a PE (%d PEs)", s.start, n);
  const int64_t stride = int64_t{1} << s.log_stride;
  if (s.start + (static_cast<int64_t>(s.size) - 1) * stride >= n)
    fail(fn, "the active set (PE_start %d, logPE_stride %d, PE_size %d) goes past the last PE %d",
         s.start, s.log_stride, s.size, n - 1);
  const int64_t d = my_pe() - s.start;
  if (d < 0 || d % stride != 0 || d / stride >= s.size)
    fail(fn, "PE %d is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)", my_pe(),
         s.start, s.log_stride, s.size);
  if (pSync == nullptr) fail(fn, "pSync is NULL");
  return {s.start, static_cast<int>(stride), s.size, static_cast<int>(d / stride)};
}

// The tree: index i's position relative to the root, and back.
int rel(const Members& m, int i, int root) noexcept { return (i - root + m.size) % m.size; }
int idx(const Members& m, int r, int root) noexcept { return (r + root) % m.size; }
int first_child(int r) noexcept { return r * kFan + 1; }
int children(const Members& m, int r) noexcept {
  const int64_t f = static_cast<int64_t>(r) * kFan + 1;
  return static_cast<int>(std::clamp<int64_t>(m.size - f, 0, kFan));
}

void add(long* word, long v, int pe, const char* fn) noexcept {
  atomic(default_context(), word, Amo::kAdd, Word::kI64, &v, nullptr, nullptr, pe, false, fn);
}

// Waits until our counter reaches `n`, then takes `n` off it.
void take(long* word, long n, const char* fn) noexcept {
  if (n == 0) return;
  wait_until(word, SHMEM_CMP_GE, &n, SyncType::kI64, fn);
  add(word, -n, my_pe(), fn);
}

uint64_t* signal_word(long* pSync) noexcept { return reinterpret_cast<uint64_t*>(pSync + kData); }

// Puts `bytes` to PE `pe`'s `dest`, then counts one on its pSync[kData].
void put_counted(void* dest, const void* src, size_t bytes, long* pSync, int pe,
                 const char* fn) noexcept {
  put_signal(default_context(), dest, src, bytes, signal_word(pSync), 1, SHMEM_SIGNAL_ADD, pe,
             false, fn);
}

// Arrivals go up the tree to the set's first PE, the release comes down.
void tree_barrier(const Members& m, long* pSync, const char* fn) noexcept {
  if (m.size == 1) return;
  const int r = m.me;
  const int nc = children(m, r);
  take(&pSync[kArrive], nc, fn);
  if (r != 0) {
    add(&pSync[kArrive], 1, m.pe((r - 1) / kFan), fn);
    take(&pSync[kRelease], 1, fn);
  }
  for (int k = 0; k < nc; ++k) add(&pSync[kRelease], 1, m.pe(first_child(r) + k), fn);
}

// The world team when the set is every PE, else nullptr.
Team* world_set(const Members& m, const char* fn) noexcept {
  return m.start == 0 && m.size == n_pes() ? team(SHMEM_TEAM_WORLD, fn) : nullptr;
}

void check_ok(int rc, const char* fn) noexcept {
  if (rc != 0) fail(fn, "the collective failed: %s", tsu_strerror(static_cast<tsu_status_t>(rc)));
}

unsigned char* at(void* base, size_t offset) noexcept {
  return static_cast<unsigned char*>(base) + offset;
}
const unsigned char* at(const void* base, size_t offset) noexcept {
  return static_cast<const unsigned char*>(base) + offset;
}

}  // namespace

void set_barrier(ActiveSet s, long* pSync, bool quiet_first, const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  if (quiet_first) quiet(default_context(), fn);
  if (Team* w = world_set(m, fn)) return check_ok(team_sync(w, fn), fn);
  tree_barrier(m, pSync, fn);
}

void set_broadcast(ActiveSet s, void* dest, const void* src, size_t bytes, int root, long* pSync,
                   const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  if (root < 0 || root >= m.size)
    fail(fn, "PE_root %d is not an index of the active set (PE_size %d)", root, m.size);
  if (m.size == 1 || bytes == 0) return;
  if (Team* w = world_set(m, fn))
    return check_ok(team_broadcast_others(w, dest, src, bytes, root, fn), fn);
  tree_barrier(m, pSync, fn);
  // Down a tree rooted at the root; the root's dest is left alone (1.5's
  // active-set broadcast), so it sends from source and the others from dest.
  const int r = rel(m, m.me, root);
  if (r != 0) take(&pSync[kData], 1, fn);
  const void* from = r == 0 ? src : dest;
  const int nc = children(m, r);
  for (int k = 0; k < nc; ++k)
    put_counted(dest, from, bytes, pSync, m.pe(idx(m, first_child(r) + k, root)), fn);
}

void set_fcollect(ActiveSet s, void* dest, const void* src, size_t bytes, long* pSync,
                  const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  (void)mul_size(bytes, static_cast<size_t>(m.size), fn);
  if (bytes == 0) return;
  if (Team* w = world_set(m, fn)) return check_ok(team_fcollect(w, dest, src, bytes, fn), fn);
  tree_barrier(m, pSync, fn);
  unsigned char* mine = at(dest, static_cast<size_t>(m.me) * bytes);
  // Starting after ourselves spreads the PEs' puts over their targets.
  for (int i = 1; i < m.size; ++i) put_counted(mine, src, bytes, pSync, m.pe((m.me + i) % m.size), fn);
  if (mine != src) std::memmove(mine, src, bytes);
  take(&pSync[kData], m.size - 1, fn);
}

void set_collect(ActiveSet s, void* dest, const void* src, size_t bytes, long* pSync,
                 const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  if (Team* w = world_set(m, fn)) return check_ok(team_collect(w, dest, src, bytes, fn), fn);
  tree_barrier(m, pSync, fn);
  // Our offset is the sum of the contributions before ours: it comes from
  // the previous PE of the set as offset + 1 (0 means "not yet").
  long offset = 0;
  if (m.me > 0) {
    const long zero = 0;
    wait_until(&pSync[kChain], SHMEM_CMP_NE, &zero, SyncType::kI64, fn);
    long got = 0;
    atomic(default_context(), &pSync[kChain], Amo::kFetch, Word::kI64, nullptr, nullptr, &got,
           my_pe(), false, fn);
    add(&pSync[kChain], -got, my_pe(), fn);
    offset = got - 1;
  }
  if (m.me + 1 < m.size) {
    long next = 0;
    if (bytes >= static_cast<size_t>(INT64_MAX) ||
        __builtin_add_overflow(offset, static_cast<long>(bytes) + 1, &next))
      fail(fn, "the PEs' contributions add up to more than 2^63 bytes");
    add(&pSync[kChain], next, m.pe(m.me + 1), fn);
  }
  unsigned char* mine = at(dest, static_cast<size_t>(offset));
  if (bytes != 0) {
    for (int i = 1; i < m.size; ++i)
      put_counted(mine, src, bytes, pSync, m.pe((m.me + i) % m.size), fn);
    if (mine != src) std::memmove(mine, src, bytes);
  } else {
    // Nothing to put, but the others count a signal from every PE.
    for (int i = 1; i < m.size; ++i) add(&pSync[kData], 1, m.pe((m.me + i) % m.size), fn);
  }
  take(&pSync[kData], m.size - 1, fn);
}

void set_alltoall(ActiveSet s, void* dest, const void* src, size_t bytes, long* pSync,
                  const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  (void)mul_size(bytes, static_cast<size_t>(m.size), fn);
  if (bytes == 0) return;
  if (Team* w = world_set(m, fn)) return check_ok(team_alltoall(w, dest, src, bytes, fn), fn);
  tree_barrier(m, pSync, fn);
  unsigned char* mine = at(dest, static_cast<size_t>(m.me) * bytes);
  for (int i = 1; i < m.size; ++i) {
    const int j = (m.me + i) % m.size;
    put_counted(mine, at(src, static_cast<size_t>(j) * bytes), bytes, pSync, m.pe(j), fn);
  }
  std::memmove(mine, at(src, static_cast<size_t>(m.me) * bytes), bytes);
  take(&pSync[kData], m.size - 1, fn);
}

void set_alltoalls(ActiveSet s, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t elem, long* pSync, const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  if (dst < 1 || sst < 1) fail(fn, "the strides must be at least 1 (dst %td, sst %td)", dst, sst);
  const auto ds = static_cast<size_t>(dst);
  const auto ss = static_cast<size_t>(sst);
  const size_t n = static_cast<size_t>(m.size);
  // Block j (nelems elements at stride sst from j*nelems*sst) goes to PE j,
  // at i*nelems*dst with stride dst (i: the sender).
  (void)mul_size(mul_size(n, nelems, fn), mul_size(std::max(ds, ss), elem, fn), fn);
  if (nelems == 0 || elem == 0) return;
  if (Team* w = world_set(m, fn))
    return check_ok(team_alltoalls(w, dest, src, dst, sst, nelems, elem, fn), fn);
  tree_barrier(m, pSync, fn);
  Context* c = default_context();
  const size_t me = static_cast<size_t>(m.me);
  unsigned char* mine = at(dest, me * nelems * ds * elem);
  for (int i = 1; i < m.size; ++i) {
    const auto j = static_cast<size_t>((m.me + i) % m.size);
    iput(c, mine, at(src, j * nelems * ss * elem), dst, sst, nelems, elem,
         m.pe(static_cast<int>(j)), fn);
  }
  for (size_t k = 0; k < nelems; ++k)
    std::memmove(mine + k * ds * elem, at(src, (me * nelems + k) * ss * elem), elem);
  // The data before the signals: fence orders them per target PE.
  fence(c, fn);
  for (int i = 1; i < m.size; ++i) add(&pSync[kData], 1, m.pe((m.me + i) % m.size), fn);
  take(&pSync[kData], m.size - 1, fn);
}

void set_reduce(ActiveSet s, void* dest, const void* src, size_t nreduce, RType type, ROp op,
                long* pSync, const char* fn) noexcept {
  const Members m = members(s, pSync, fn);
  check_rop(type, op, fn);
  const size_t esize = rtype_size(type);
  const size_t bytes = mul_size(nreduce, esize, fn);
  if (bytes == 0) return;
  if (Team* w = world_set(m, fn))
    return check_ok(team_reduce(w, dest, src, nreduce, type, op, fn), fn);
  tree_barrier(m, pSync, fn);
  if (dest != src) std::memmove(dest, src, bytes);
  if (m.size == 1) return;
  // Up the tree: each PE combines its children's partial results (read from
  // their dest) into its own dest, in index order, and tells its parent.
  // The first PE has the result, which comes down the tree into every dest:
  // one computation, so every PE gets the same bits.
  Context* c = default_context();
  const int r = m.me;
  const int nc = children(m, r);
  if (nc > 0) {
    take(&pSync[kData], nc, fn);
    const size_t chunk_elems = std::max<size_t>(1, (size_t{256} << 10) / esize);
    std::vector<unsigned char> in(std::min(nreduce, chunk_elems) * esize);
    for (int k = 0; k < nc; ++k) {
      const int child = m.pe(first_child(r) + k);
      for (size_t first = 0; first < nreduce; first += chunk_elems) {
        const size_t count = std::min(chunk_elems, nreduce - first);
        get(c, in.data(), at(dest, first * esize), count * esize, child, fn);
        reduce_local(at(dest, first * esize), in.data(), count, type, op);
      }
    }
  }
  if (r != 0) {
    add(&pSync[kData], 1, m.pe((r - 1) / kFan), fn);
    // The result, from the parent; kChain counts it (kData is the children's).
    take(&pSync[kChain], 1, fn);
  }
  for (int k = 0; k < nc; ++k)
    put_signal(c, dest, dest, bytes, reinterpret_cast<uint64_t*>(pSync + kChain), 1,
               SHMEM_SIGNAL_ADD, m.pe(first_child(r) + k), false, fn);
}

}  // namespace tsu::shmem
