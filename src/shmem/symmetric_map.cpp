// Where symmetric data objects are: each PE's heap segment and its program's
// data/bss, registered with tsunagi, and how an address of ours names the
// same object on another PE.
#include "shmem_internal.hpp"
#include "state.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

namespace tsu::shmem {
namespace {

// The executable's writable PT_LOAD: .data and .bss, where the program's
// global and static variables live.  The executable is the first object
// dl_iterate_phdr reports.
struct DataRange {
  char* base = nullptr;
  size_t size = 0;
  char* relro_end = nullptr;  // end of the part made read-only after relocation
};

int find_data(struct dl_phdr_info* info, size_t, void* out) {
  auto* range = static_cast<DataRange*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && !range->base) {
      range->base = reinterpret_cast<char*>(info->dlpi_addr + ph.p_vaddr);
      range->size = ph.p_memsz;
    }
    if (ph.p_type == PT_GNU_RELRO)
      range->relro_end = reinterpret_cast<char*>(info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  return 1;  // the executable only
}

uintptr_t page_size() { return static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)); }

// Copies whole pages of the program's data, red zones a sanitizer keeps
// around globals included: word by word, uninstrumented (and volatile, so
// the loop does not become an intercepted memcpy).
__attribute__((no_sanitize("address", "thread")))
void copy_pages(void* to, const void* from, size_t len) {
  auto* d = static_cast<volatile uint64_t*>(to);
  const auto* s = static_cast<const volatile uint64_t*>(from);
  for (size_t i = 0; i < len / sizeof(uint64_t); ++i) d[i] = s[i];
}

std::string static_file_name(uint64_t token, int pe) {
  char name[64];
  std::snprintf(name, sizeof name, "/tsu-shmem-%016llx-%d", static_cast<unsigned long long>(token),
                pe);
  return name;
}

// Moves the writable pages of the program's data into a shared-memory file
// (same address, same contents), so node peers can map them and reach our
// global and static variables with loads, stores and CPU atomics, as they
// reach our heap.  Done before the data is registered with tsunagi, whose
// transports may pin the pages.  Nothing else writes the program's data
// meanwhile: shmem_init runs before the program's threads use SHMEM objects.
// Returns the file's token (0: not shared).
[[maybe_unused]] uint64_t share_static_data(const DataRange& data) {
  State& s = state();
  const uintptr_t page = page_size();
  uintptr_t begin = reinterpret_cast<uintptr_t>(data.base);
  if (data.relro_end && reinterpret_cast<uintptr_t>(data.relro_end) > begin)
    begin = reinterpret_cast<uintptr_t>(data.relro_end);
  begin = (begin + page - 1) & ~(page - 1);  // read-only-after-relocation pages stay private
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data.base) + data.size + page - 1) & ~(page - 1);
  if (end <= begin) return 0;
  const size_t len = end - begin;
  std::random_device rd;
  const uint64_t token = (uint64_t{rd()} << 32 | rd()) | 1;
  const std::string name = static_file_name(token, s.my_pe);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return 0;
  std::snprintf(s.static_file, sizeof s.static_file, "%s", name.c_str());
  bool ok = ftruncate(fd, static_cast<off_t>(len)) == 0;
  void* copy = ok ? mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (copy != MAP_FAILED) {
    copy_pages(copy, reinterpret_cast<void*>(begin), len);
    ok = mmap(reinterpret_cast<void*>(begin), len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
              fd, 0) != MAP_FAILED;
    munmap(copy, len);
  } else {
    ok = false;
  }
  close(fd);
  if (!ok) {
    shm_unlink(name.c_str());
    s.static_file[0] = '\0';
    return 0;
  }
  s.shared_static_base = reinterpret_cast<char*>(begin);
  s.shared_static_size = len;
  return token;
}

// Maps node peer `pe`'s shared static pages here; nullptr when it cannot.
char* map_peer_static(uint64_t token, int pe, size_t len) {
  const int fd = shm_open(static_file_name(token, pe).c_str(), O_RDWR, 0);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

// What each PE tells the others at init.
struct Layout {
  uint64_t heap_size;
  uint64_t static_size;
  uint64_t static_token;  // its shared static pages' file, 0: none
  uint64_t heap_skew;
  uint32_t heap_seg;
  uint32_t static_seg;
};

}  // namespace

void map_symmetric(size_t heap_size, const char* fn) noexcept {
  State& s = state();
  void* base = nullptr;
  tsu_seg_t my_heap = 0;
  check_tsu(tsu_segment_alloc(heap_size + kHeapAlign, &my_heap, &base), fn,
            "allocating the symmetric heap (SHMEM_SYMMETRIC_SIZE bytes)");
  const uintptr_t seg_base = reinterpret_cast<uintptr_t>(base);
  const uint64_t skew = ((seg_base + kHeapAlign - 1) & ~(kHeapAlign - 1)) - seg_base;
  base = static_cast<char*>(base) + skew;
  s.heap_base = static_cast<char*>(base);
  s.heap_size = heap_size;

  DataRange data;
  dl_iterate_phdr(find_data, &data);
  tsu_seg_t my_static = 0;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer takes the remapping for a write of all the program's
  // data by this thread, racing with every later access it cannot order with
  // it (a user-level thread's first read): its builds reach peers' static
  // data the registered way (Cross Memory Attach, atomics by message).
  const uint64_t token = 0;
#else
  const uint64_t token = s.direct && data.size ? share_static_data(data) : 0;
#endif
  if (data.size) {
    check_tsu(tsu_mem_register(data.base, data.size, &my_static), fn,
              "registering the program's global and static data");
    s.static_base = data.base;
    s.static_size = data.size;
  }

  const Layout mine{heap_size, data.size, token, skew, my_heap, my_static};
  std::vector<Layout> all(static_cast<size_t>(s.n_pes));
  tsu_counter_t done;
  tsu_counter_init(&done);
  check_tsu(tsu_try_allgather(TSU_TEAM_WORLD, &mine, all.data(), sizeof mine,
                              tsu_counter_cb(&done)),
            fn, "exchanging the symmetric layout");
  check_tsu(tsu_counter_wait(&done, 1), fn, "exchanging the symmetric layout");

  s.heap_seg.resize(all.size());
  s.heap_skew.resize(all.size());
  s.static_seg.resize(all.size());
  s.heap_direct.assign(all.size(), nullptr);
  s.static_direct.assign(all.size(), nullptr);
  for (size_t pe = 0; pe < all.size(); ++pe) {
    if (all[pe].heap_size != heap_size)
      fail(fn, "PE %zu has a symmetric heap of %llu bytes and this PE %zu: set the same "
               "SHMEM_SYMMETRIC_SIZE for every PE",
           pe, static_cast<unsigned long long>(all[pe].heap_size), heap_size);
    if (all[pe].static_size != data.size)
      fail(fn, "PE %zu runs another program (its static data is %llu bytes, ours %zu)", pe,
           static_cast<unsigned long long>(all[pe].static_size), data.size);
    s.heap_seg[pe] = all[pe].heap_seg;
    s.heap_skew[pe] = all[pe].heap_skew;
    s.static_seg[pe] = all[pe].static_seg;
    void* direct = nullptr;
    if (static_cast<int>(pe) == s.my_pe) {
      direct = s.heap_base;
    } else if (s.direct &&
               tsu_gaddr_ptr(tsu_gaddr(static_cast<uint32_t>(pe), all[pe].heap_seg,
                                       all[pe].heap_skew),
                             heap_size, &direct) != TSU_OK) {
      direct = nullptr;
    }
    s.heap_direct[pe] = static_cast<char*>(direct);
    if (static_cast<int>(pe) == s.my_pe)
      s.static_direct[pe] = s.shared_static_base;
    else if (direct && token && all[pe].static_token)
      s.static_direct[pe] = map_peer_static(all[pe].static_token, static_cast<int>(pe),
                                            s.shared_static_size);
  }
  // Every node peer has mapped our file: its name can go (nothing is left
  // behind if the job dies later).
  world_sync(fn);
  if (s.static_file[0]) shm_unlink(s.static_file);
  s.static_file[0] = '\0';
}

void unmap_symmetric() noexcept {
  State& s = state();
  for (size_t pe = 0; pe < s.static_direct.size(); ++pe)
    if (static_cast<int>(pe) != s.my_pe && s.static_direct[pe])
      munmap(s.static_direct[pe], s.shared_static_size);
  s.static_direct.clear();
  if (s.static_size) tsu_segment_free(s.static_seg[static_cast<size_t>(s.my_pe)]);
  if (s.heap_base) tsu_segment_free(s.heap_seg[static_cast<size_t>(s.my_pe)]);
  s.heap_base = nullptr;
  s.heap_size = 0;
  s.static_base = nullptr;
  s.static_size = 0;
  s.heap_seg.clear();
  s.heap_skew.clear();
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
                     s.heap_skew[p] +
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
  const size_t soff = static_cast<size_t>(static_cast<const char*>(addr) - s.shared_static_base);
  if (soff < s.shared_static_size) {
    char* base = s.static_direct[static_cast<size_t>(pe)];
    return base ? base + soff : nullptr;
  }
  return nullptr;
}

bool local_laddr(const void* addr, size_t len, tsu_laddr_t* out) noexcept {
  const State& s = state();
  const auto me = static_cast<size_t>(s.my_pe);
  if (in_heap(addr, len)) {
    *out = tsu_laddr(s.heap_seg[me], s.heap_skew[me] + static_cast<uint64_t>(
                                                           static_cast<const char*>(addr) - s.heap_base));
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
