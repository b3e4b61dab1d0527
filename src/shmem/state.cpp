// Library setup, exit and query: shmem_init .. shmem_finalize, the PE queries,
// shmem_global_exit, and the error path every entry point shares.
#include "shmem_internal.hpp"
#include "state.hpp"

#include <tsunagi/am.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace tsu::shmem {
namespace {

State g_state;
std::mutex g_init_mutex;

// SHMEM_SYMMETRIC_SIZE: bytes, with an optional K/M/G/T suffix (powers of 1024).
size_t symmetric_size_from_env(const char* fn) {
  constexpr size_t kDefault = size_t{256} << 20;
  const char* text = std::getenv("SHMEM_SYMMETRIC_SIZE");
  if (!text || !*text) return kDefault;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  double scale = 1;
  switch (*end) {
    case 'k': case 'K': scale = 1024.0; ++end; break;
    case 'm': case 'M': scale = 1024.0 * 1024; ++end; break;
    case 'g': case 'G': scale = 1024.0 * 1024 * 1024; ++end; break;
    case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'b' || *end == 'B') ++end;
  const double bytes = value * scale;
  if (errno || end == text || *end || !(bytes >= 1) || bytes > 1e15)
    fail(fn, "SHMEM_SYMMETRIC_SIZE='%s' is not a size (bytes, or a number with K, M, G or T)",
         text);
  return static_cast<size_t>(bytes);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0 &&
         strcasecmp(v, "false") != 0;
}

// Another PE called shmem_global_exit: end this process with its status.
void on_global_exit(tsu_am_token_t*, const uint64_t* args, uint32_t nargs, void*, size_t, void*) {
  std::fflush(nullptr);
  ::_exit(nargs ? static_cast<int>(args[0]) : 1);
}

void start(int requested, const char* fn) {
  std::lock_guard lock(g_init_mutex);
  State& s = g_state;
  const int phase = s.phase.load(std::memory_order_acquire);
  if (phase == 1) return;  // a later shmem_init has no effect
  if (phase == 2) fail(fn, "called after shmem_finalize (OpenSHMEM cannot be restarted)");
  s.debug = env_flag("SHMEM_DEBUG");
  const size_t heap = symmetric_size_from_env(fn);
  if (!tsu_initialized()) {
    check_tsu(tsu_init(nullptr), fn, "starting tsunagi");
    s.owns_tsunagi = true;
  }
  uint32_t rank = 0, size = 0;
  check_tsu(tsu_rank(&rank), fn, "tsu_rank");
  check_tsu(tsu_size(&size), fn, "tsu_size");
  s.my_pe = static_cast<int>(rank);
  s.n_pes = static_cast<int>(size);
  // Loads and stores on node peers' memory follow tsunagi's own choice.
  const char* bypass = std::getenv("TSU_BYPASS");
  s.direct = !(bypass && std::strcmp(bypass, "0") == 0);
  s.thread_level = requested < 0 ? SHMEM_THREAD_MULTIPLE : SHMEM_THREAD_MULTIPLE;
  check_tsu(tsu_am_register(kAmGlobalExit, on_global_exit, nullptr), fn,
            "registering the global-exit handler");
  atomics_init(fn);
  map_symmetric(heap, fn);
  heap_reset(heap);
  contexts_init(fn);
  // The shared barrier only if every PE maps every heap (decided together).
  int32_t mapped = 1, everywhere = 0;
  for (char* peer_heap : s.heap_direct) mapped = mapped && peer_heap;
  tsu_counter_t agreed;
  tsu_counter_init(&agreed);
  check_tsu(tsu_try_allreduce(TSU_TEAM_WORLD, &mapped, &everywhere, 1, TSU_DT_INT32, TSU_OP_MIN,
                              tsu_counter_cb(&agreed)),
            fn, "agreeing on the barrier");
  check_tsu(wait_counter(&agreed, 1), fn, "agreeing on the barrier");
  s.barrier_generation = 0;
  s.shared_barrier = everywhere != 0;
  s.phase.store(1, std::memory_order_release);
  teams_init();
  world_sync(fn);
}

}  // namespace

State& state() noexcept { return g_state; }
int my_pe() noexcept { return g_state.my_pe; }
int n_pes() noexcept { return g_state.n_pes; }
bool debug_checks() noexcept { return g_state.debug; }

void fail(const char* fn, const char* format, ...) noexcept {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  std::fprintf(stderr, "tsunagi-shmem: PE %d: %s: %s\n", g_state.my_pe, fn, text);
  std::fflush(stderr);
  // Failing during shmem_init, before the peers mapped our static pages:
  // leave nothing on /dev/shm.
  if (g_state.static_file[0]) shm_unlink(g_state.static_file);
  if (g_state.phase.load(std::memory_order_acquire) == 1) shmem_global_exit(1);
  std::fflush(nullptr);
  ::_exit(1);
}

void check_init(const char* fn) noexcept {
  if (__builtin_expect(g_state.phase.load(std::memory_order_relaxed) != 1, 0)) {
    if (g_state.phase.load(std::memory_order_acquire) == 2)
      fail(fn, "called after shmem_finalize");
    fail(fn, "called before shmem_init");
  }
}

void check_pe(int pe, const char* fn) noexcept {
  if (__builtin_expect(pe < 0 || pe >= g_state.n_pes, 0))
    fail(fn, "PE %d is out of range (the job has %d PEs)", pe, g_state.n_pes);
}

void check_tsu(tsu_status_t st, const char* fn, const char* what) noexcept {
  if (st == TSU_OK) return;
  fail(fn, "%s failed: %s (%s)", what, tsu_strerror(st), tsu_last_error());
}

namespace {

// A barrier of every PE through PE 0's heap, when every PE's heap is mapped
// here: each PE adds itself to the arrival count; the last one resets it and
// moves the generation on, which the others wait for.  Invariant: a PE
// arrives at barrier g+1 only after it saw generation g+1, which the last
// arriver of barrier g publishes after resetting the count, so the count
// never mixes two barriers.
void shared_barrier(State& s) noexcept {
  auto* words = reinterpret_cast<uint64_t*>(s.heap_direct[0]);
  uint64_t* count = words;
  uint64_t* generation = words + 8;  // its own cache line
  const uint64_t gen = s.barrier_generation;
  s.barrier_generation = gen + 1;
  if (__atomic_fetch_add(count, 1, __ATOMIC_ACQ_REL) + 1 == static_cast<uint64_t>(s.n_pes)) {
    __atomic_store_n(count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(generation, gen + 1, __ATOMIC_RELEASE);
    return;
  }
  unsigned spins = 0;
  while (__atomic_load_n(generation, __ATOMIC_ACQUIRE) == gen) wait_pause(&spins);
}

}  // namespace

void world_sync(const char* fn) noexcept {
  State& s = g_state;
  if (s.shared_barrier) {
    shared_barrier(s);
    return;
  }
  tsu_counter_t done;
  tsu_counter_init(&done);
  check_tsu(tsu_try_barrier(TSU_TEAM_WORLD, tsu_counter_cb(&done)), fn, "the barrier");
  check_tsu(wait_counter(&done, 1), fn, "the barrier");
}

}  // namespace tsu::shmem

using namespace tsu::shmem;

extern "C" {

void shmem_init(void) { start(SHMEM_THREAD_MULTIPLE, "shmem_init"); }

int shmem_init_thread(int requested, int* provided) {
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
    fail("shmem_init_thread", "requested thread level %d is not a SHMEM_THREAD_* value",
         requested);
  start(requested, "shmem_init_thread");
  if (provided) *provided = state().thread_level;
  return 0;
}

void shmem_query_thread(int* provided) {
  check_init("shmem_query_thread");
  if (!provided) fail("shmem_query_thread", "provided is NULL");
  *provided = state().thread_level;
}

void shmem_finalize(void) {
  std::lock_guard lock(g_init_mutex);
  State& s = state();
  if (s.phase.load(std::memory_order_acquire) != 1) return;  // nothing to do
  quiet(default_context(), "shmem_finalize");
  world_sync("shmem_finalize");
  teams_finalize();
  contexts_finalize();
  s.phase.store(2, std::memory_order_release);
  unmap_symmetric();
  if (s.owns_tsunagi) tsu_finalize();
}

void shmem_global_exit(int status) {
  State& s = state();
  std::fflush(nullptr);
  if (s.phase.load(std::memory_order_acquire) == 1) {
    const uint64_t arg = static_cast<uint32_t>(status);
    for (int pe = 0; pe < s.n_pes; ++pe) {
      if (pe == s.my_pe) continue;
      // Best effort: a PE already gone is what we want anyway.
      for (int tries = 0; tries < 100000; ++tries) {
        const tsu_status_t st = tsu_try_am_short(static_cast<uint32_t>(pe), kAmGlobalExit, &arg,
                                                 1, tsu_cb_none());
        if (st != TSU_EAGAIN) break;
        tsu_progress();
      }
    }
    // Let the messages leave before this process (and its progress thread) ends.
    tsu_quiet();
  }
  ::_exit(status);
}

int shmem_my_pe(void) {
  check_init("shmem_my_pe");
  return tsu::shmem::my_pe();
}
int shmem_n_pes(void) {
  check_init("shmem_n_pes");
  return n_pes();
}
int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
int my_pe(void) { return shmem_my_pe(); }
int num_pes(void) { return shmem_n_pes(); }
void start_pes(int) { start(SHMEM_THREAD_MULTIPLE, "start_pes"); }

int shmem_pe_accessible(int pe) {
  check_init("shmem_pe_accessible");
  return pe >= 0 && pe < n_pes();
}

int shmem_addr_accessible(const void* addr, int pe) {
  check_init("shmem_addr_accessible");
  if (pe < 0 || pe >= n_pes()) return 0;
  return in_heap(addr, 1) || in_static(addr, 1);
}

void* shmem_ptr(const void* dest, int pe) {
  check_init("shmem_ptr");
  if (pe < 0 || pe >= n_pes()) return nullptr;
  if (pe == tsu::shmem::my_pe()) return (in_heap(dest, 1) || in_static(dest, 1)) ? const_cast<void*>(dest)
                                                                     : nullptr;
  return direct_ptr(dest, pe);
}

void* shmem_team_ptr(shmem_team_t team_handle, const void* dest, int pe) {
  check_init("shmem_team_ptr");
  if (team_handle == SHMEM_TEAM_INVALID) return nullptr;
  const int world = team_world_pe(team(team_handle, "shmem_team_ptr"), pe);
  return world < 0 ? nullptr : shmem_ptr(dest, world);
}

void shmem_info_get_version(int* major, int* minor) {
  if (major) *major = SHMEM_MAJOR_VERSION;
  if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char* name) {
  if (!name) return;
  std::snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

// Cache management of the 1.0-1.2 API: the memory is coherent, so there is
// nothing to invalidate or flush.
void shmem_set_cache_inv(void) {}
void shmem_set_cache_line_inv(void*) {}
void shmem_clear_cache_inv(void) {}
void shmem_clear_cache_line_inv(void*) {}
void shmem_udcflush(void) {}
void shmem_udcflush_line(void*) {}

// Profiling control: the library has no profiling levels to switch.
void shmem_pcontrol(const int, ...) {}

}  // extern "C"
