// Where symmetric data objects are: each PE's heap segment and its program's
// data/bss, registered with tsunagi, and how an address of ours names the
// same object on another PE.
#include "shmem_internal.hpp"
#include "state.hpp"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace tsu::shmem {
namespace {

// The executable's writable PT_LOAD: .data and .bss, where the program's
// global and static variables live.  The executable is the first object
// dl_iterate_phdr reports.
struct DataRange {
  char* base = nullptr;
  size_t size = 0;
};

int find_data(struct dl_phdr_info* info, size_t, void* out) {
  auto* range = static_cast<DataRange*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) {
      range->base = reinterpret_cast<char*>(info->dlpi_addr + ph.p_vaddr);
      range->size = ph.p_memsz;
      break;
    }
  }
  return 1;  // the executable only
}

// What each PE tells the others at init.
struct Layout {
  uint64_t heap_size;
  uint64_t static_size;
  uint32_t heap_seg;
  uint32_t static_seg;
};

}  // namespace

void map_symmetric(size_t heap_size, const char* fn) noexcept {
  State& s = state();
  void* base = nullptr;
  tsu_seg_t my_heap = 0;
  check_tsu(tsu_segment_alloc(heap_size, &my_heap, &base), fn,
            "allocating the symmetric heap (SHMEM_SYMMETRIC_SIZE bytes)");
  s.heap_base = static_cast<char*>(base);
  s.heap_size = heap_size;

  DataRange data;
  dl_iterate_phdr(find_data, &data);
  tsu_seg_t my_static = 0;
  if (data.size) {
    check_tsu(tsu_mem_register(data.base, data.size, &my_static), fn,
              "registering the program's global and static data");
    s.static_base = data.base;
    s.static_size = data.size;
  }

  const Layout mine{heap_size, data.size, my_heap, my_static};
  std::vector<Layout> all(static_cast<size_t>(s.n_pes));
  tsu_counter_t done;
  tsu_counter_init(&done);
  check_tsu(tsu_try_allgather(TSU_TEAM_WORLD, &mine, all.data(), sizeof mine,
                              tsu_counter_cb(&done)),
            fn, "exchanging the symmetric layout");
  check_tsu(tsu_counter_wait(&done, 1), fn, "exchanging the symmetric layout");

  s.heap_seg.resize(all.size());
  s.static_seg.resize(all.size());
  s.heap_direct.assign(all.size(), nullptr);
  for (size_t pe = 0; pe < all.size(); ++pe) {
    if (all[pe].heap_size != heap_size)
      fail(fn, "PE %zu has a symmetric heap of %llu bytes and this PE %zu: set the same "
               "SHMEM_SYMMETRIC_SIZE for every PE",
           pe, static_cast<unsigned long long>(all[pe].heap_size), heap_size);
    if (all[pe].static_size != data.size)
      fail(fn, "PE %zu runs another program (its static data is %llu bytes, ours %zu)", pe,
           static_cast<unsigned long long>(all[pe].static_size), data.size);
    s.heap_seg[pe] = all[pe].heap_seg;
    s.static_seg[pe] = all[pe].static_seg;
    void* direct = nullptr;
    if (static_cast<int>(pe) == s.my_pe) {
      direct = s.heap_base;
    } else if (s.direct &&
               tsu_gaddr_ptr(tsu_gaddr(static_cast<uint32_t>(pe), all[pe].heap_seg, 0), heap_size,
                             &direct) != TSU_OK) {
      direct = nullptr;
    }
    s.heap_direct[pe] = static_cast<char*>(direct);
  }
}

void unmap_symmetric() noexcept {
  State& s = state();
  if (s.static_size) tsu_segment_free(s.static_seg[static_cast<size_t>(s.my_pe)]);
  if (s.heap_base) tsu_segment_free(s.heap_seg[static_cast<size_t>(s.my_pe)]);
  s.heap_base = nullptr;
  s.heap_size = 0;
  s.static_base = nullptr;
  s.static_size = 0;
  s.heap_seg.clear();
  s.static_seg.clear();
  s.heap_direct.clear();
}

bool in_heap(const void* addr, size_t len) noexcept {
  const State& s = state();
  const size_t off = static_cast<size_t>(static_cast<const char*>(addr) - s.heap_base);
  return off < s.heap_size && len <= s.heap_size - off;
}

bool in_static(const void* addr, size_t len) noexcept {
  const State& s = state();
  const size_t off = static_cast<size_t>(static_cast<const char*>(addr) - s.static_base);
  return off < s.static_size && len <= s.static_size - off;
}

tsu_gaddr_t to_gaddr(const void* addr, size_t len, int pe, const char* fn) noexcept {
  const State& s = state();
  check_pe(pe, fn);
  const auto p = static_cast<size_t>(pe);
  if (in_heap(addr, len))
    return tsu_gaddr(static_cast<uint32_t>(pe), s.heap_seg[p],
                     static_cast<uint64_t>(static_cast<const char*>(addr) - s.heap_base));
  if (in_static(addr, len))
    return tsu_gaddr(static_cast<uint32_t>(pe), s.static_seg[p],
                     static_cast<uint64_t>(static_cast<const char*>(addr) - s.static_base));
  if (in_heap(addr, 1) || in_static(addr, 1))
    fail(fn, "%zu bytes at %p run past the end of their symmetric data object", len, addr);
  fail(fn, "address %p is not symmetric (neither in the symmetric heap nor in the program's "
           "global or static data)",
       addr);
}

void* direct_ptr(const void* addr, int pe) noexcept {
  const State& s = state();
  const size_t off = static_cast<size_t>(static_cast<const char*>(addr) - s.heap_base);
  if (off < s.heap_size) {
    char* base = s.heap_direct[static_cast<size_t>(pe)];
    return base ? base + off : nullptr;
  }
  if (pe == s.my_pe && in_static(addr, 1)) return const_cast<void*>(addr);
  return nullptr;
}

bool local_laddr(const void* addr, size_t len, tsu_laddr_t* out) noexcept {
  const State& s = state();
  const auto me = static_cast<size_t>(s.my_pe);
  if (in_heap(addr, len)) {
    *out = tsu_laddr(s.heap_seg[me],
                     static_cast<uint64_t>(static_cast<const char*>(addr) - s.heap_base));
    return true;
  }
  if (in_static(addr, len)) {
    *out = tsu_laddr(s.static_seg[me],
                     static_cast<uint64_t>(static_cast<const char*>(addr) - s.static_base));
    return true;
  }
  return false;
}

}  // namespace tsu::shmem
