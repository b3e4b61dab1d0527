// The symmetric heap: shmem_malloc and friends.  Every PE runs the same
// sequence of collective calls, so a deterministic allocator (first fit,
// blocks merged on free) gives every object the same offset on every PE.
#include "shmem_internal.hpp"
#include "state.hpp"

#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace tsu::shmem {
namespace {

// Every block starts on a cache line: objects of different owners never
// share one, and any type's alignment is met.
constexpr size_t kMinAlign = 64;

struct Heap {
  std::mutex mutex;
  std::map<size_t, size_t> free_blocks;  // offset -> bytes
  std::map<size_t, size_t> used;         // offset -> bytes (as handed out)
  size_t size = 0;
};

Heap g_heap;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The allocation routines' implicit barrier is shmem_barrier_all: it quiets
// the default context too.
void barrier_all(const char* fn) {
  quiet(default_context(), fn);
  world_sync(fn);
}

// Takes `size` bytes aligned to `alignment` from the first block that fits.
bool take(size_t size, size_t alignment, size_t* out) {
  for (auto it = g_heap.free_blocks.begin(); it != g_heap.free_blocks.end(); ++it) {
    const size_t start = round_up(it->first, alignment);
    const size_t end = it->first + it->second;
    if (start > end || end - start < size) continue;
    const size_t block = it->first;
    g_heap.free_blocks.erase(it);
    if (start > block) g_heap.free_blocks.emplace(block, start - block);
    if (end > start + size) g_heap.free_blocks.emplace(start + size, end - start - size);
    g_heap.used.emplace(start, size);
    *out = start;
    return true;
  }
  return false;
}

// Returns [offset, offset + size) to the free blocks, merged with neighbours.
void give_back(size_t offset, size_t size) {
  auto next = g_heap.free_blocks.lower_bound(offset);
  if (next != g_heap.free_blocks.end() && offset + size == next->first) {
    size += next->second;
    next = g_heap.free_blocks.erase(next);
  }
  if (next != g_heap.free_blocks.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  g_heap.free_blocks.emplace(offset, size);
}

size_t offset_of(void* ptr, const char* fn) {
  const State& s = state();
  const size_t off = static_cast<size_t>(static_cast<char*>(ptr) - s.heap_base);
  auto it = g_heap.used.find(off);
  if (off >= s.heap_size || it == g_heap.used.end())
    fail(fn, "%p was not returned by shmem_malloc, shmem_calloc, shmem_align or shmem_realloc "
             "(or was freed already)",
         ptr);
  return off;
}

}  // namespace

void heap_reset(size_t size) noexcept {
  std::lock_guard lock(g_heap.mutex);
  g_heap.free_blocks.clear();
  g_heap.used.clear();
  g_heap.size = size;
  g_heap.free_blocks.emplace(kHeapReserved, size - kHeapReserved);
}

void* heap_alloc(size_t size, size_t alignment, const char* fn) noexcept {
  size_t off = 0;
  bool ok;
  {
    std::lock_guard lock(g_heap.mutex);
    ok = take(round_up(size, kMinAlign), alignment < kMinAlign ? kMinAlign : alignment, &off);
  }
  // Collective: no PE uses the object before every PE has it.
  barrier_all(fn);
  return ok ? state().heap_base + off : nullptr;
}

void heap_free(void* ptr, const char* fn) noexcept {
  {
    // A bad pointer ends the job before the barrier lets the others go on.
    std::lock_guard lock(g_heap.mutex);
    offset_of(ptr, fn);
  }
  // Collective: every PE is done with the object before anyone reuses it.
  barrier_all(fn);
  std::lock_guard lock(g_heap.mutex);
  const size_t off = offset_of(ptr, fn);
  const size_t size = g_heap.used[off];
  g_heap.used.erase(off);
  give_back(off, size);
}

void* heap_realloc(void* ptr, size_t size, const char* fn) noexcept {
  {
    std::lock_guard lock(g_heap.mutex);
    offset_of(ptr, fn);  // a bad pointer fails before the barrier
  }
  barrier_all(fn);
  size_t off = 0, old_size = 0;
  bool ok;
  {
    std::lock_guard lock(g_heap.mutex);
    const size_t old = offset_of(ptr, fn);
    old_size = g_heap.used[old];
    const size_t want = round_up(size, kMinAlign);
    // Taken before the old block is returned, so the copy never overlaps;
    // the same choice on every PE keeps the result symmetric.
    ok = take(want, kMinAlign, &off);
    if (ok) {
      std::memcpy(state().heap_base + off, state().heap_base + old, std::min(old_size, want));
      g_heap.used.erase(old);
      give_back(old, old_size);
    }
  }
  barrier_all(fn);
  return ok ? state().heap_base + off : nullptr;
}

}  // namespace tsu::shmem

using namespace tsu::shmem;

extern "C" {

void* shmem_malloc(size_t size) {
  check_init("shmem_malloc");
  if (size == 0) return nullptr;
  return heap_alloc(size, 0, "shmem_malloc");
}

void* shmem_malloc_with_hints(size_t size, long hints) {
  check_init("shmem_malloc_with_hints");
  if (hints & ~(SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE))
    fail("shmem_malloc_with_hints", "unknown hint bits 0x%lx", hints);
  if (size == 0) return nullptr;
  // Every word of the heap already takes remote atomics and signals.
  return heap_alloc(size, 0, "shmem_malloc_with_hints");
}

void* shmem_calloc(size_t count, size_t size) {
  check_init("shmem_calloc");
  if (count == 0 || size == 0) return nullptr;
  if (size > SIZE_MAX / count) {
    barrier_all("shmem_calloc");
    return nullptr;
  }
  void* p = heap_alloc(count * size, 0, "shmem_calloc");
  if (p) std::memset(p, 0, count * size);
  // Zeroed everywhere before anyone writes to a peer's copy.
  barrier_all("shmem_calloc");
  return p;
}

void* shmem_align(size_t alignment, size_t size) {
  check_init("shmem_align");
  if (alignment == 0 || (alignment & (alignment - 1)))
    fail("shmem_align", "alignment %zu is not a power of two", alignment);
  if (size == 0) return nullptr;
  // The heap starts on a kHeapAlign boundary in every process; a larger
  // alignment could not be the same offset everywhere.
  if (alignment > kHeapAlign) {
    barrier_all("shmem_align");
    return nullptr;
  }
  return heap_alloc(size, alignment, "shmem_align");
}

void* shmem_realloc(void* ptr, size_t size) {
  check_init("shmem_realloc");
  if (!ptr) return size ? heap_alloc(size, 0, "shmem_realloc") : nullptr;
  if (size == 0) {
    heap_free(ptr, "shmem_realloc");
    return nullptr;
  }
  return heap_realloc(ptr, size, "shmem_realloc");
}

void shmem_free(void* ptr) {
  check_init("shmem_free");
  if (!ptr) return;
  heap_free(ptr, "shmem_free");
}

void* shmalloc(size_t size) { return shmem_malloc(size); }
void* shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
void* shrealloc(void* ptr, size_t size) { return shmem_realloc(ptr, size); }
void shfree(void* ptr) { shmem_free(ptr); }

}  // extern "C"
