// The team collectives of shmem.h (OpenSHMEM 1.5): barrier_all, sync_all,
// team_sync and sync, broadcast, collect, fcollect, alltoall(s) per type and
// as bytes, and the reductions on every type: thin wrappers over
// collectives.cpp.
#include "typed_common.hpp"

namespace sh = tsu::shmem;

extern "C" void shmem_barrier_all(void) {
  constexpr const char* fn = "shmem_barrier_all";
  sh::check_init(fn);
  // The barrier completes the default context's puts and AMOs first.
  sh::quiet(sh::default_context(), fn);
  (void)sh::team_sync(sh::team(SHMEM_TEAM_WORLD, fn), fn);
}

extern "C" void shmem_sync_all(void) {
  constexpr const char* fn = "shmem_sync_all";
  sh::check_init(fn);
  (void)sh::team_sync(sh::team(SHMEM_TEAM_WORLD, fn), fn);
}

extern "C" int shmem_team_sync(shmem_team_t team) {
  constexpr const char* fn = "shmem_team_sync";
  sh::check_init(fn);
  return sh::team_sync(sh::team(team, fn), fn);
}

extern "C" int shmem_sync(shmem_team_t team) {
  constexpr const char* fn = "shmem_sync";
  sh::check_init(fn);
  return sh::team_sync(sh::team(team, fn), fn);
}

// The entry point shmem_<PRE><OP><POST>: shmem_int_collect (PRE int_) or
// shmem_collectmem (POST mem); DT, ST: element types, ELEM their size.
#define TSU_COLL_BLOCK(PRE, OP, POST, DT, ST, ELEM, IMPL)                                  \
  extern "C" int shmem_##PRE##OP##POST(shmem_team_t team, DT* dest, const ST* source,      \
                                       size_t nelems) {                                    \
    constexpr const char* fn = "shmem_" #PRE #OP #POST;                                    \
    sh::check_init(fn);                                                                    \
    return sh::IMPL(sh::team(team, fn), dest, source, sh::checked_bytes(nelems, ELEM, fn), \
                    fn);                                                                   \
  }
#define TSU_COLL(PRE, POST, DT, ST, ELEM)                                                    \
  extern "C" int shmem_##PRE##broadcast##POST(shmem_team_t team, DT* dest, const ST* source, \
                                              size_t nelems, int PE_root) {                  \
    constexpr const char* fn = "shmem_" #PRE "broadcast" #POST;                              \
    sh::check_init(fn);                                                                      \
    return sh::team_broadcast(sh::team(team, fn), dest, source,                              \
                              sh::checked_bytes(nelems, ELEM, fn), PE_root, fn);             \
  }                                                                                          \
  TSU_COLL_BLOCK(PRE, collect, POST, DT, ST, ELEM, team_collect)                             \
  TSU_COLL_BLOCK(PRE, fcollect, POST, DT, ST, ELEM, team_fcollect)                           \
  TSU_COLL_BLOCK(PRE, alltoall, POST, DT, ST, ELEM, team_alltoall)                           \
  extern "C" int shmem_##PRE##alltoalls##POST(shmem_team_t team, DT* dest, const ST* source, \
                                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems) { \
    constexpr const char* fn = "shmem_" #PRE "alltoalls" #POST;                              \
    sh::check_init(fn);                                                                      \
    return sh::team_alltoalls(sh::team(team, fn), dest, source, dst, sst, nelems, ELEM, fn); \
  }
#define TSU_TYPED_COLL(T, N) TSU_COLL(N##_, , T, T, sizeof(T))
TSU_SHMEM_RMA_TYPES(TSU_TYPED_COLL)
TSU_COLL(, mem, void, void, 1)

// Reductions: shmem_<N>_<OP>_reduce.
#define TSU_REDUCE(T, N, OP, ROP)                                                       \
  extern "C" int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, \
                                           size_t nreduce) {                            \
    constexpr const char* fn = "shmem_" #N "_" #OP "_reduce";                           \
    sh::check_init(fn);                                                                 \
    return sh::team_reduce(sh::team(team, fn), dest, source, nreduce,                   \
                           sh::RType::TSU_RTYPE(N), sh::ROp::ROP, fn);                  \
  }
#define TSU_REDUCE_BIT(T, N) \
  TSU_REDUCE(T, N, and, kAnd) TSU_REDUCE(T, N, or, kOr) TSU_REDUCE(T, N, xor, kXor)
#define TSU_REDUCE_ORD(T, N) TSU_REDUCE(T, N, max, kMax) TSU_REDUCE(T, N, min, kMin)
#define TSU_REDUCE_ARITH(T, N) TSU_REDUCE(T, N, sum, kSum) TSU_REDUCE(T, N, prod, kProd)
TSU_SHMEM_REDUCE_BIT_TYPES(TSU_REDUCE_BIT)
TSU_SHMEM_REDUCE_ORD_TYPES(TSU_REDUCE_ORD)
TSU_SHMEM_REDUCE_ORD_TYPES(TSU_REDUCE_ARITH)
TSU_SHMEM_REDUCE_CPLX_TYPES(TSU_REDUCE_ARITH)
