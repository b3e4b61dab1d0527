// The active-set collectives of shmem.h, deprecated by OpenSHMEM 1.5 and
// still in wide use: barrier, the active-set sync, broadcast/collect/
// fcollect/alltoall(s){32,64} and the *_to_all reductions.  Thin wrappers
// over collectives.cpp's set_* forms.
#include "typed_common.hpp"

namespace sh = tsu::shmem;

namespace {

constexpr sh::ActiveSet set_of(int PE_start, int logPE_stride, int PE_size) noexcept {
  return sh::ActiveSet{PE_start, logPE_stride, PE_size};
}

}  // namespace

extern "C" void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  constexpr const char* fn = "shmem_barrier";
  sh::check_init(fn);
  sh::set_barrier(set_of(PE_start, logPE_stride, PE_size), pSync, /*quiet_first=*/true, fn);
}

// shmem_sync(PE_start, logPE_stride, PE_size, pSync): see shmem_coll.h.
extern "C" void tsu_shmem_sync_active_set(int PE_start, int logPE_stride, int PE_size,
                                          long* pSync) {
  constexpr const char* fn = "shmem_sync";
  sh::check_init(fn);
  sh::set_barrier(set_of(PE_start, logPE_stride, PE_size), pSync, /*quiet_first=*/false, fn);
}

#define TSU_SET_COLL_BLOCK(OP, BITS, BYTES, IMPL)                                 \
  extern "C" void shmem_##OP##BITS(void* dest, const void* source, size_t nelems, \
                                   int PE_start, int logPE_stride, int PE_size,   \
                                   long* pSync) {                                 \
    constexpr const char* fn = "shmem_" #OP #BITS;                                \
    sh::check_init(fn);                                                           \
    sh::IMPL(set_of(PE_start, logPE_stride, PE_size), dest, source,               \
             sh::checked_bytes(nelems, BYTES, fn), pSync, fn);                    \
  }
#define TSU_SET_COLL(BITS, BYTES)                                                      \
  extern "C" void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, \
                                        int PE_root, int PE_start, int logPE_stride,   \
                                        int PE_size, long* pSync) {                    \
    constexpr const char* fn = "shmem_broadcast" #BITS;                                \
    sh::check_init(fn);                                                                \
    sh::set_broadcast(set_of(PE_start, logPE_stride, PE_size), dest, source,           \
                      sh::checked_bytes(nelems, BYTES, fn), PE_root, pSync, fn);       \
  }                                                                                    \
  TSU_SET_COLL_BLOCK(collect, BITS, BYTES, set_collect)                                \
  TSU_SET_COLL_BLOCK(fcollect, BITS, BYTES, set_fcollect)                              \
  TSU_SET_COLL_BLOCK(alltoall, BITS, BYTES, set_alltoall)                              \
  extern "C" void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, \
                                        ptrdiff_t sst, size_t nelems, int PE_start,    \
                                        int logPE_stride, int PE_size, long* pSync) {  \
    constexpr const char* fn = "shmem_alltoalls" #BITS;                                \
    sh::check_init(fn);                                                                \
    sh::set_alltoalls(set_of(PE_start, logPE_stride, PE_size), dest, source, dst, sst, \
                      nelems, BYTES, pSync, fn);                                       \
  }
TSU_SET_COLL(32, 4)
TSU_SET_COLL(64, 8)

// shmem_<N>_<OP>_to_all; pWrk is not needed (the library keeps its own
// work space), pSync synchronizes as the specification describes.
#define TSU_TO_ALL(T, N, OP, ROP)                                                        \
  extern "C" void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce,       \
                                            int PE_start, int logPE_stride, int PE_size, \
                                            T* pWrk, long* pSync) {                      \
    constexpr const char* fn = "shmem_" #N "_" #OP "_to_all";                            \
    sh::check_init(fn);                                                                  \
    (void)pWrk;                                                                          \
    if (nreduce < 0) sh::fail(fn, "nreduce %d is negative", nreduce);                    \
    sh::set_reduce(set_of(PE_start, logPE_stride, PE_size), dest, source,                \
                   static_cast<size_t>(nreduce), sh::RType::TSU_RTYPE(N), sh::ROp::ROP,  \
                   pSync, fn);                                                           \
  }
#define TSU_TO_ALL_BIT(T, N) \
  TSU_TO_ALL(T, N, and, kAnd) TSU_TO_ALL(T, N, or, kOr) TSU_TO_ALL(T, N, xor, kXor)
#define TSU_TO_ALL_ORD(T, N) TSU_TO_ALL(T, N, max, kMax) TSU_TO_ALL(T, N, min, kMin)
#define TSU_TO_ALL_ARITH(T, N) TSU_TO_ALL(T, N, sum, kSum) TSU_TO_ALL(T, N, prod, kProd)
TSU_SHMEM_TOALL_INT_TYPES(TSU_TO_ALL_BIT)
TSU_SHMEM_TOALL_INT_TYPES(TSU_TO_ALL_ORD)
TSU_SHMEM_TOALL_FP_TYPES(TSU_TO_ALL_ORD)
TSU_SHMEM_TOALL_INT_TYPES(TSU_TO_ALL_ARITH)
TSU_SHMEM_TOALL_FP_TYPES(TSU_TO_ALL_ARITH)
TSU_SHMEM_REDUCE_CPLX_TYPES(TSU_TO_ALL_ARITH)
