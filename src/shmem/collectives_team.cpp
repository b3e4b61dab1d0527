// The team collectives of OpenSHMEM 1.5 on tsunagi's team collectives.
//
// A SHMEM team is a tsunagi team whose rank is the team PE (teams.cpp), so
// each call is one tsu_try_* waited on with a counter (which parks a calling
// user-level thread instead of blocking its worker).  What tsunagi does not
// compute itself (XOR, long double, complex products, variable-sized collect)
// is built on its allgather, reduced here in team-PE order so that every PE
// gets bit-identical results.
#include "collectives.hpp"
#include "state.hpp"
#include "teams.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tsu::shmem {

namespace {

// Waits for the collective tsu_try_* started (st), 0 when it succeeded.
int finish(tsu_status_t st, tsu_counter_t* c) noexcept {
  if (st != TSU_OK) return static_cast<int>(st);
  st = wait_counter(c, 1);
  return st == TSU_OK ? 0 : static_cast<int>(st);
}

#define TSU_SHMEM_COLL(call)         \
  [&]() noexcept {                   \
    tsu_counter_t c_;                \
    tsu_counter_init(&c_);           \
    const tsu_cb_t cb_ = tsu_counter_cb(&c_); \
    return finish((call), &c_);      \
  }()

bool overlaps(const void* a, size_t alen, const void* b, size_t blen) noexcept {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return alen != 0 && blen != 0 && x < y + blen && y < x + alen;
}

// `src`, or a copy of it when it overlaps the destination (tsunagi's
// collectives read and write their buffers in steps).
const void* staged(const void* src, size_t bytes, const void* dest, size_t dest_bytes,
                   std::vector<unsigned char>& copy) {
  if (!overlaps(src, bytes, dest, dest_bytes)) return src;
  copy.assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
  return copy.data();
}

// SHMEM_DEBUG=1: dest and source must be symmetric data objects, as the
// specification says (tsunagi's collectives would accept any memory).
void check_symmetric(const void* p, size_t bytes, const char* what, const char* fn) noexcept {
  if (debug_checks() && bytes != 0 && !in_heap(p, bytes) && !in_static(p, bytes))
    fail(fn, "%s %p (%zu bytes) is not a symmetric data object", what, p, bytes);
}

int allgather(const Team* t, const void* src, void* dest, size_t bytes) noexcept {
  return TSU_SHMEM_COLL(tsu_try_allgather(t->tsu, src, dest, bytes, cb_));
}

// Reduces by gathering every PE's elements and combining them here, a chunk
// at a time (bounded memory); src may equal dest (a chunk of dest is written
// once every PE's copy of it is gathered).
int reduce_by_gather(const Team* t, void* dest, const void* src, size_t nreduce, RType type,
                     ROp op) noexcept {
  const size_t esize = rtype_size(type);
  const size_t n = static_cast<size_t>(t->size);
  const size_t chunk = std::max<size_t>(1, (size_t{4} << 20) / (n * esize));
  std::vector<unsigned char> all;
  try {
    all.resize(std::min(chunk, nreduce) * esize * n);
  } catch (...) {
    return -1;
  }
  for (size_t first = 0; first < nreduce; first += chunk) {
    const size_t count = std::min(chunk, nreduce - first);
    const size_t bytes = count * esize;
    const int rc = allgather(t, static_cast<const unsigned char*>(src) + first * esize,
                             all.data(), bytes);
    if (rc != 0) return rc;
    for (size_t i = 1; i < n; ++i) reduce_local(all.data(), all.data() + i * bytes, count, type, op);
    std::memcpy(static_cast<unsigned char*>(dest) + first * esize, all.data(), bytes);
  }
  return 0;
}

}  // namespace

int team_sync(Team* t, const char* fn) noexcept {
  // The world's barrier has a shared-memory form when every heap is mapped.
  if (static_cast<tsu_shmem_team*>(t) == SHMEM_TEAM_WORLD && state().shared_barrier) {
    world_sync(fn);
    return 0;
  }
  return TSU_SHMEM_COLL(tsu_try_barrier(t->tsu, cb_));
}

int team_broadcast(Team* t, void* dest, const void* src, size_t bytes, int root,
                   const char* fn) noexcept {
  if (root < 0 || root >= t->size)
    fail(fn, "PE_root %d is not a PE of the team (%d PEs)", root, t->size);
  if (bytes == 0) return 0;
  check_symmetric(dest, bytes, "dest", fn);
  check_symmetric(src, bytes, "source", fn);
  // The team form updates the root's dest too; tsunagi broadcasts in place.
  if (t->my_pe == root && dest != src) std::memmove(dest, src, bytes);
  return TSU_SHMEM_COLL(tsu_try_broadcast(t->tsu, dest, bytes, static_cast<uint32_t>(root), cb_));
}

int team_broadcast_others(Team* t, void* dest, const void* src, size_t bytes, int root,
                          const char* fn) noexcept {
  if (root < 0 || root >= t->size)
    fail(fn, "PE_root %d is not a PE of the team (%d PEs)", root, t->size);
  if (bytes == 0) return 0;
  // The root's buffer is only read by tsunagi's broadcast: source serves.
  void* buf = t->my_pe == root ? const_cast<void*>(src) : dest;
  return TSU_SHMEM_COLL(tsu_try_broadcast(t->tsu, buf, bytes, static_cast<uint32_t>(root), cb_));
}

int team_fcollect(Team* t, void* dest, const void* src, size_t bytes, const char* fn) noexcept {
  if (bytes == 0) return 0;
  const size_t total = mul_size(bytes, static_cast<size_t>(t->size), fn);
  check_symmetric(dest, total, "dest", fn);
  check_symmetric(src, bytes, "source", fn);
  std::vector<unsigned char> copy;
  return allgather(t, staged(src, bytes, dest, total, copy), dest, bytes);
}

int team_collect(Team* t, void* dest, const void* src, size_t bytes, const char* fn) noexcept {
  const size_t n = static_cast<size_t>(t->size);
  std::vector<uint64_t> sizes(n);
  const uint64_t mine = bytes;
  int rc = allgather(t, &mine, sizes.data(), sizeof mine);
  if (rc != 0) return rc;
  uint64_t total = 0;
  uint64_t most = 0;
  uint64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == static_cast<size_t>(t->my_pe)) offset = total;
    if (__builtin_add_overflow(total, sizes[i], &total))
      fail(fn, "the PEs' contributions add up to more than 2^64 bytes");
    most = std::max(most, sizes[i]);
  }
  if (total == 0) return 0;
  check_symmetric(dest, total, "dest", fn);
  check_symmetric(src, bytes, "source", fn);
  if (most * n == total) return team_fcollect(t, dest, src, bytes, fn);

  std::vector<unsigned char> copy;
  src = staged(src, bytes, dest, total, copy);
  // Padded to the largest contribution, when that costs little memory ...
  const size_t padded = mul_size(most, n, fn);
  if (padded <= std::max<uint64_t>(2 * total, uint64_t{64} << 20)) {
    std::vector<unsigned char> all;
    std::vector<unsigned char> in;
    try {
      all.resize(padded);
      in.resize(most);
    } catch (...) {
      return -1;
    }
    std::memcpy(in.data(), src, bytes);
    rc = allgather(t, in.data(), all.data(), most);
    if (rc != 0) return rc;
    auto* out = static_cast<unsigned char*>(dest);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(out, all.data() + i * most, sizes[i]);
      out += sizes[i];
    }
    return 0;
  }
  // ... else every PE puts its part into every dest (symmetric) by RMA.
  if ((rc = team_sync(t, fn)) != 0) return rc;
  Context* c = default_context();
  auto* at = static_cast<unsigned char*>(dest) + offset;
  for (int i = 1; i < t->size && bytes != 0; ++i)
    put(c, at, src, bytes, t->world_pe((t->my_pe + i) % t->size), fn);
  if (bytes != 0) std::memmove(at, src, bytes);
  quiet(c, fn);
  return team_sync(t, fn);
}

int team_alltoall(Team* t, void* dest, const void* src, size_t bytes, const char* fn) noexcept {
  if (bytes == 0) return 0;
  const size_t total = mul_size(bytes, static_cast<size_t>(t->size), fn);
  check_symmetric(dest, total, "dest", fn);
  check_symmetric(src, total, "source", fn);
  std::vector<unsigned char> copy;
  src = staged(src, total, dest, total, copy);
  return TSU_SHMEM_COLL(tsu_try_alltoall(t->tsu, src, dest, bytes, cb_));
}

int team_alltoalls(Team* t, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t elem, const char* fn) noexcept {
  if (dst < 1 || sst < 1) fail(fn, "the strides must be at least 1 (dst %td, sst %td)", dst, sst);
  const size_t block = mul_size(nelems, elem, fn);
  if (block == 0) return 0;
  if (dst == 1 && sst == 1) return team_alltoall(t, dest, src, block, fn);
  const size_t n = static_cast<size_t>(t->size);
  const size_t total = mul_size(block, n, fn);
  const auto ss = static_cast<size_t>(sst);
  const auto ds = static_cast<size_t>(dst);
  (void)mul_size(n * nelems, mul_size(std::max(ss, ds), elem, fn), fn);  // the farthest element
  check_symmetric(dest, ((n * nelems - 1) * ds + 1) * elem, "dest", fn);
  check_symmetric(src, ((n * nelems - 1) * ss + 1) * elem, "source", fn);
  // Block j goes to PE j: elements j*nelems*sst + k*sst of source, placed at
  // i*nelems*dst + k*dst of PE j's dest (i: the sender).  Packed, exchanged,
  // unpacked.
  std::vector<unsigned char> out;
  std::vector<unsigned char> in;
  try {
    out.resize(total);
    in.resize(total);
  } catch (...) {
    return -1;
  }
  const auto* s = static_cast<const unsigned char*>(src);
  for (size_t e = 0; e < n * nelems; ++e) std::memcpy(out.data() + e * elem, s + e * ss * elem, elem);
  const int rc = TSU_SHMEM_COLL(tsu_try_alltoall(t->tsu, out.data(), in.data(), block, cb_));
  if (rc != 0) return rc;
  auto* d = static_cast<unsigned char*>(dest);
  for (size_t e = 0; e < n * nelems; ++e) std::memcpy(d + e * ds * elem, in.data() + e * elem, elem);
  return 0;
}

int team_reduce(Team* t, void* dest, const void* src, size_t nreduce, RType type, ROp op,
                const char* fn) noexcept {
  check_rop(type, op, fn);
  const size_t esize = rtype_size(type);
  const size_t bytes = mul_size(nreduce, esize, fn);
  if (bytes == 0) return 0;
  check_symmetric(dest, bytes, "dest", fn);
  check_symmetric(src, bytes, "source", fn);
  TsuReduce how{};
  if (!tsu_reduce_of(type, op, &how)) return reduce_by_gather(t, dest, src, nreduce, type, op);
  std::vector<unsigned char> copy;
  src = staged(src, bytes, dest, bytes, copy);
  return TSU_SHMEM_COLL(
      tsu_try_allreduce(t->tsu, src, dest, nreduce * how.per_elem, how.type, how.op, cb_));
}

}  // namespace tsu::shmem
