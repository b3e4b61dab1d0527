// The seam between libtsunagi-shmem's files: the typed entry points of
// shmem.h (generated per type in typed_*.cpp) call these byte- and
// kind-level functions, which sit on tsunagi's public C API only.
//
// Every function here is called after the entry point checked that the
// library is initialized (check_init) and reports bad arguments itself with
// fail(), which names the entry point (`fn`), prints the message and ends the
// job (docs/shmem.md, "Errors").
#pragma once

#include <shmem.h>
#include <tsunagi/coll.h>
#include <tsunagi/tsunagi.h>

#include <cstddef>
#include <cstdint>

namespace tsu::shmem {

// ---- State, errors --------------------------------------------------------
int my_pe() noexcept;
int n_pes() noexcept;
bool debug_checks() noexcept;  // SHMEM_DEBUG=1: every argument is checked

// Ends the job: prints "tsunagi-shmem: <fn>: <message>" on stderr and calls
// shmem_global_exit(1).
[[noreturn]] void fail(const char* fn, const char* format, ...) noexcept
    __attribute__((format(printf, 2, 3)));
// fail() unless shmem_init ran and shmem_finalize did not.
void check_init(const char* fn) noexcept;
void check_pe(int pe, const char* fn) noexcept;  // 0 <= pe < n_pes

// ---- Symmetric memory -----------------------------------------------------
// A symmetric address on `pe`, as tsunagi addresses it.  fail()s when `addr`
// (with `len` bytes) is not inside a symmetric data object (the heap or the
// program's data/bss), or pe is out of range.
tsu_gaddr_t to_gaddr(const void* addr, size_t len, int pe, const char* fn) noexcept;
// A pointer by which this process can load, store and run CPU atomics on
// `pe`'s copy of the symmetric object at `addr` (the heap of a node peer, or
// our own object), or nullptr when there is none (another node, a peer's
// static data, or TSU_BYPASS=0).  Never fails.
void* direct_ptr(const void* addr, int pe) noexcept;
// Whether [addr, addr + len) lies in our symmetric heap / our static data.
bool in_heap(const void* addr, size_t len) noexcept;
bool in_static(const void* addr, size_t len) noexcept;
// The local address of our own memory when it is inside a tsunagi segment
// (heap, static data, internal area); false otherwise.
bool local_laddr(const void* addr, size_t len, tsu_laddr_t* out) noexcept;

// Collective symmetric heap (barrier inside, as the specification says).
void* heap_alloc(size_t size, size_t alignment, const char* fn) noexcept;  // nullptr: no room
void heap_free(void* ptr, const char* fn) noexcept;
void* heap_realloc(void* ptr, size_t size, const char* fn) noexcept;

// ---- Contexts ---------------------------------------------------------------
struct Context;
// The context behind a handle; fail()s on SHMEM_CTX_INVALID or a destroyed one.
Context* context(shmem_ctx_t ctx, const char* fn) noexcept;
Context* default_context() noexcept;

// ---- RMA --------------------------------------------------------------------
// Blocking put: returns once `src` may be reused (local completion).
void put(Context* c, void* dest, const void* src, size_t bytes, int pe, const char* fn) noexcept;
// Blocking get: returns with `dest` written.
void get(Context* c, void* dest, const void* src, size_t bytes, int pe, const char* fn) noexcept;
// Non-blocking: complete at the context's next quiet.
void put_nbi(Context* c, void* dest, const void* src, size_t bytes, int pe,
             const char* fn) noexcept;
void get_nbi(Context* c, void* dest, const void* src, size_t bytes, int pe,
             const char* fn) noexcept;
// Strided: element i goes from src[i * sst] to dest[i * dst] (strides in
// elements of `elem` bytes).
void iput(Context* c, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem, int pe, const char* fn) noexcept;
void iget(Context* c, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem, int pe, const char* fn) noexcept;
// Put, then update the signal word after the data (sig_op SHMEM_SIGNAL_SET or
// SHMEM_SIGNAL_ADD).  nbi: completes at the next quiet.
void put_signal(Context* c, void* dest, const void* src, size_t bytes, uint64_t* sig_addr,
                uint64_t signal, int sig_op, int pe, bool nbi, const char* fn) noexcept;

// ---- Atomics ----------------------------------------------------------------
// The word types: every OpenSHMEM atomic type is one of these by size and
// signedness (float/double use the bit pattern for fetch/set/swap).
enum class Word { kI32, kU32, kI64, kU64, kF32, kF64 };
enum class Amo {
  kFetch, kSet, kCompareSwap, kSwap, kFetchInc, kInc, kFetchAdd, kAdd,
  kFetchAnd, kAnd, kFetchOr, kOr, kFetchXor, kXor
};
// One atomic on `pe`'s word at `dest`.  `operand`/`compare` point to a value of
// the word's type (nullptr where unused); `result` receives the old value of
// fetching ops (blocking: on return; nbi: by the next quiet).
void atomic(Context* c, void* dest, Amo op, Word type, const void* operand, const void* compare,
            void* result, int pe, bool nbi, const char* fn) noexcept;

// ---- Ordering -----------------------------------------------------------------
void quiet(Context* c, const char* fn) noexcept;
void fence(Context* c, const char* fn) noexcept;

// ---- Point-to-point synchronization ------------------------------------------
// The comparison types of wait/test (short .. ptrdiff_t) as word kinds:
enum class SyncType { kI16, kU16, kI32, kU32, kI64, kU64 };
// Whether *ivar `cmp` value holds (a relaxed-acquire load of our own copy).
bool test(const void* ivar, int cmp, const void* value, SyncType type, const char* fn) noexcept;
// One pause of a waiting loop: polls progress, lets a user-level thread's
// scheduler run others, yields or sleeps as the machine calls for.
void wait_pause(unsigned* spins) noexcept;
// Waits until test() holds.
void wait_until(const void* ivar, int cmp, const void* value, SyncType type,
                const char* fn) noexcept;

// ---- Teams and collectives (collectives.cpp, teams.cpp) ------------------------
struct Team;
Team* team(shmem_team_t t, const char* fn) noexcept;  // fail()s on invalid
// Element types of reductions.
enum class RType {
  kChar, kSChar, kShort, kInt, kLong, kLongLong, kPtrdiff,
  kUChar, kUShort, kUInt, kULong, kULongLong,
  kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64, kSize,
  kFloat, kDouble, kLongDouble, kComplexF, kComplexD
};
enum class ROp { kAnd, kOr, kXor, kMax, kMin, kSum, kProd };

// Team forms: return 0 on success, non-zero on failure, as the specification's.
int team_sync(Team* t, const char* fn) noexcept;
int team_broadcast(Team* t, void* dest, const void* src, size_t bytes, int root,
                   const char* fn) noexcept;
int team_collect(Team* t, void* dest, const void* src, size_t bytes, const char* fn) noexcept;
int team_fcollect(Team* t, void* dest, const void* src, size_t bytes, const char* fn) noexcept;
int team_alltoall(Team* t, void* dest, const void* src, size_t bytes, const char* fn) noexcept;
int team_alltoalls(Team* t, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t elem, const char* fn) noexcept;
int team_reduce(Team* t, void* dest, const void* src, size_t nreduce, RType type, ROp op,
                const char* fn) noexcept;

// Active-set forms (deprecated in 1.5, still in wide use): the set is
// PE_start + i * 2^logPE_stride, i < PE_size; only its members call.
struct ActiveSet {
  int start;
  int log_stride;
  int size;
};
void set_barrier(ActiveSet s, long* pSync, bool quiet_first, const char* fn) noexcept;
void set_broadcast(ActiveSet s, void* dest, const void* src, size_t bytes, int root,
                   long* pSync, const char* fn) noexcept;
void set_collect(ActiveSet s, void* dest, const void* src, size_t bytes, long* pSync,
                 const char* fn) noexcept;
void set_fcollect(ActiveSet s, void* dest, const void* src, size_t bytes, long* pSync,
                  const char* fn) noexcept;
void set_alltoall(ActiveSet s, void* dest, const void* src, size_t bytes, long* pSync,
                  const char* fn) noexcept;
void set_alltoalls(ActiveSet s, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t elem, long* pSync, const char* fn) noexcept;
void set_reduce(ActiveSet s, void* dest, const void* src, size_t nreduce, RType type, ROp op,
                long* pSync, const char* fn) noexcept;

}  // namespace tsu::shmem

// ---- Added by the core (teams.cpp defines these) ------------------------------
namespace tsu::shmem {
// The world PE of the team's member `team_pe`, or -1 when out of range.
int team_world_pe(Team* t, int team_pe) noexcept;
// The public handle of a team.
shmem_team_t team_handle_of(Team* t) noexcept;
// Waits until `counter` counted n completions, driving progress in the
// calling thread (tsu_counter_wait's backoff sleeps 20 us at a time once it
// has yielded a while, which made every barrier cost that much); runs a
// user-level thread's other threads meanwhile (tsu_progress's wait hook).
// Returns the first error counted.
tsu_status_t wait_counter(tsu_counter_t* counter, uint64_t n) noexcept;
// Called by shmem_init once the heap is up, and by shmem_finalize.
void teams_init() noexcept;
void teams_finalize() noexcept;
}  // namespace tsu::shmem
