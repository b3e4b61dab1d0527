// Puts and gets.  A peer whose copy of the object is mapped here (our own
// memory, a node peer's heap under tsunagi's bypass) is reached with memcpy;
// every other one through tsunagi's RMA, with local sides outside its
// segments carried by bounce buffers.
#include "context.hpp"
#include "state.hpp"

#include <algorithm>
#include <cstring>

namespace tsu::shmem {
namespace {

// A pointer to `pe`'s copy of [addr, addr + bytes), when mapped here.
char* direct_range(const void* addr, size_t bytes, int pe) noexcept {
  const State& s = state();
  const size_t off = static_cast<size_t>(static_cast<const char*>(addr) - s.heap_base);
  if (off < s.heap_size && bytes <= s.heap_size - off) {
    char* base = s.heap_direct[static_cast<size_t>(pe)];
    return base ? base + off : nullptr;
  }
  if (pe == s.my_pe && in_static(addr, bytes))
    return static_cast<char*>(const_cast<void*>(addr));
  const size_t soff = static_cast<size_t>(static_cast<const char*>(addr) - s.shared_static_base);
  if (soff < s.shared_static_size && bytes <= s.shared_static_size - soff) {
    char* base = s.static_direct[static_cast<size_t>(pe)];
    return base ? base + soff : nullptr;
  }
  return nullptr;
}

void check_issue(tsu_status_t st, const char* fn, const char* what, int pe) {
  if (st != TSU_OK) fail(fn, "%s PE %d failed: %s (%s)", what, pe, tsu_strerror(st),
                         tsu_last_error());
}

// Puts [src, src + bytes) to g through bounce buffers, counted on c.
void put_bounced(Context* c, tsu_gaddr_t g, const char* src, size_t bytes, int pe,
                 const char* fn) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, kBounceBytes);
    const Bounce b = bounce_take();
    std::memcpy(b.ptr, src + done, n);
    const tsu_cb_t cb = bounce_callback(c, b.index, nullptr, 0);
    check_issue(issue_retrying([&] { return tsu_try_put(tsu_gaddr_add(g, done), b.laddr, n, cb); }),
                fn, "a put to", pe);
    done += n;
  }
}

// Gets g into [dest, dest + bytes), counted on c: straight into a segment,
// else through bounce buffers copied out as each completes.
void get_counted(Context* c, char* dest, tsu_gaddr_t g, size_t bytes, int pe, const char* fn) {
  tsu_laddr_t local;
  if (local_laddr(dest, bytes, &local)) {
    const tsu_cb_t cb = c->count_one();
    check_issue(issue_retrying([&] { return tsu_try_get(local, g, bytes, cb); }), fn,
                "a get from", pe);
    return;
  }
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, kBounceBytes);
    const Bounce b = bounce_take();
    const tsu_cb_t cb = bounce_callback(c, b.index, dest + done, n);
    check_issue(issue_retrying([&] { return tsu_try_get(b.laddr, tsu_gaddr_add(g, done), n, cb); }),
                fn, "a get from", pe);
    done += n;
  }
}

// k elements of `elem` bytes, `stride` elements apart remotely and packed
// locally (a bounce buffer).
tsu_strided_t packed_elements(size_t elem, size_t k, ptrdiff_t stride) {
  tsu_strided_t shape{};
  shape.block = elem;
  shape.count[0] = k;
  shape.count[1] = 1;
  shape.remote_stride[0] = static_cast<uint64_t>(stride) * elem;
  shape.local_stride[0] = elem;
  return shape;
}

size_t span_bytes(ptrdiff_t stride, size_t nelems, size_t elem, const char* fn) {
  if (stride < 1) fail(fn, "stride %td is not positive", stride);
  const size_t s = static_cast<size_t>(stride);
  if (nelems > SIZE_MAX / s / elem) fail(fn, "%zu elements at stride %td overflow", nelems, stride);
  return ((nelems - 1) * s + 1) * elem;
}

}  // namespace

void put(Context* c, void* dest, const void* src, size_t bytes, int pe, const char* fn) noexcept {
  if (bytes == 0) return;
  pe = c->world_pe(pe, fn);
  if (char* d = direct_range(dest, bytes, pe)) {
    std::memmove(d, src, bytes);
    return;
  }
  put_bounced(c, to_gaddr(dest, bytes, pe, fn), static_cast<const char*>(src), bytes, pe, fn);
}

void put_nbi(Context* c, void* dest, const void* src, size_t bytes, int pe,
             const char* fn) noexcept {
  if (bytes == 0) return;
  pe = c->world_pe(pe, fn);
  if (char* d = direct_range(dest, bytes, pe)) {
    std::memmove(d, src, bytes);
    return;
  }
  const tsu_gaddr_t g = to_gaddr(dest, bytes, pe, fn);
  tsu_laddr_t local;
  if (local_laddr(src, bytes, &local)) {
    // The source stays untouched until the quiet: no copy needed.
    const tsu_cb_t cb = c->count_one();
    check_issue(issue_retrying([&] { return tsu_try_put(g, local, bytes, cb); }), fn,
                "a put to", pe);
    return;
  }
  put_bounced(c, g, static_cast<const char*>(src), bytes, pe, fn);
}

void get(Context* c, void* dest, const void* src, size_t bytes, int pe, const char* fn) noexcept {
  if (bytes == 0) return;
  pe = c->world_pe(pe, fn);
  if (const char* s = direct_range(src, bytes, pe)) {
    std::memmove(dest, s, bytes);
    return;
  }
  Context local;
  get_counted(&local, static_cast<char*>(dest), to_gaddr(src, bytes, pe, fn), bytes, pe, fn);
  quiet(&local, fn);  // a context of this call alone
}

void get_nbi(Context* c, void* dest, const void* src, size_t bytes, int pe,
             const char* fn) noexcept {
  if (bytes == 0) return;
  pe = c->world_pe(pe, fn);
  if (const char* s = direct_range(src, bytes, pe)) {
    std::memmove(dest, s, bytes);
    return;
  }
  get_counted(c, static_cast<char*>(dest), to_gaddr(src, bytes, pe, fn), bytes, pe, fn);
}

void iput(Context* c, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem, int pe, const char* fn) noexcept {
  if (nelems == 0) return;
  pe = c->world_pe(pe, fn);
  const size_t dspan = span_bytes(dst, nelems, elem, fn);
  span_bytes(sst, nelems, elem, fn);
  const auto* s = static_cast<const char*>(src);
  if (char* d = direct_range(dest, dspan, pe)) {
    for (size_t i = 0; i < nelems; ++i)
      std::memmove(d + i * static_cast<size_t>(dst) * elem, s + i * static_cast<size_t>(sst) * elem,
                   elem);
    return;
  }
  // Packed into bounce buffers, written out strided by one request each.
  const tsu_gaddr_t g = to_gaddr(dest, dspan, pe, fn);
  const size_t per = std::max<size_t>(1, kBounceBytes / elem);
  for (size_t first = 0; first < nelems; first += per) {
    const size_t k = std::min(per, nelems - first);
    const Bounce b = bounce_take();
    for (size_t i = 0; i < k; ++i)
      std::memcpy(b.ptr + i * elem, s + (first + i) * static_cast<size_t>(sst) * elem, elem);
    const tsu_strided_t shape = packed_elements(elem, k, dst);
    const tsu_cb_t cb = bounce_callback(c, b.index, nullptr, 0);
    const tsu_gaddr_t at = tsu_gaddr_add(g, first * static_cast<size_t>(dst) * elem);
    check_issue(issue_retrying([&] { return tsu_try_put_strided(at, b.laddr, &shape, cb); }), fn,
                "a strided put to", pe);
  }
}

void iget(Context* c, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem, int pe, const char* fn) noexcept {
  if (nelems == 0) return;
  pe = c->world_pe(pe, fn);
  span_bytes(dst, nelems, elem, fn);
  const size_t sspan = span_bytes(sst, nelems, elem, fn);
  auto* d = static_cast<char*>(dest);
  if (const char* s = direct_range(src, sspan, pe)) {
    for (size_t i = 0; i < nelems; ++i)
      std::memmove(d + i * static_cast<size_t>(dst) * elem, s + i * static_cast<size_t>(sst) * elem,
                   elem);
    return;
  }
  const tsu_gaddr_t g = to_gaddr(src, sspan, pe, fn);
  const size_t per = std::max<size_t>(1, kBounceBytes / elem);
  for (size_t first = 0; first < nelems; first += per) {
    const size_t k = std::min(per, nelems - first);
    const Bounce b = bounce_take();
    const tsu_strided_t shape = packed_elements(elem, k, sst);
    tsu_counter_t one;
    tsu_counter_init(&one);
    const tsu_gaddr_t at = tsu_gaddr_add(g, first * static_cast<size_t>(sst) * elem);
    check_issue(issue_retrying([&] {
                  return tsu_try_get_strided(b.laddr, at, &shape, tsu_counter_cb(&one));
                }),
                fn, "a strided get from", pe);
    const tsu_status_t st = wait_counter(&one, 1);
    if (st != TSU_OK) {
      bounce_give(b.index);
      check_issue(st, fn, "a strided get from", pe);
    }
    for (size_t i = 0; i < k; ++i)
      std::memcpy(d + (first + i) * static_cast<size_t>(dst) * elem, b.ptr + i * elem, elem);
    bounce_give(b.index);
  }
  (void)c;
}

void put_signal(Context* c, void* dest, const void* src, size_t bytes, uint64_t* sig_addr,
                uint64_t signal, int sig_op, int pe, bool nbi, const char* fn) noexcept {
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
    fail(fn, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
  const int world = c->world_pe(pe, fn);
  if (reinterpret_cast<uintptr_t>(sig_addr) % alignof(uint64_t))
    fail(fn, "the signal word %p is not 8-byte aligned", static_cast<void*>(sig_addr));
  char* d = bytes ? direct_range(dest, bytes, world) : nullptr;
  if (d || bytes == 0) {
    if (d) std::memmove(d, src, bytes);
  } else {
    // The signal may only land after the data: complete the data first.
    Context local;
    put_bounced(&local, to_gaddr(dest, bytes, world, fn), static_cast<const char*>(src), bytes,
                world, fn);
    quiet(&local, fn);  // a context of this call alone
  }
  // The signal's atomic is sequentially consistent: the data's stores are
  // visible before it on the direct route; the other route completed them.
  const Amo op = sig_op == SHMEM_SIGNAL_SET ? Amo::kSet : Amo::kAdd;
  atomic(c, sig_addr, op, Word::kU64, &signal, nullptr, nullptr, pe, nbi, fn);
}

}  // namespace tsu::shmem
