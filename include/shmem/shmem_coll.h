/* Part of <shmem.h>; do not include directly.
 *
 * Collectives.  Team forms (1.5), returning 0 on success:
 *   shmem_TYPENAME_{broadcast,collect,fcollect,alltoall,alltoalls},
 *   shmem_{broadcastmem,collectmem,fcollectmem,alltoallmem,alltoallsmem},
 *   shmem_TYPENAME_{and,or,xor,max,min,sum,prod}_reduce,
 *   shmem_team_sync, shmem_sync(team), shmem_barrier_all, shmem_sync_all.
 * Deprecated active-set forms (the set is PE_start + i * 2^logPE_stride,
 * i < PE_size; pSync holds SHMEM_*_SYNC_SIZE longs set to SHMEM_SYNC_VALUE):
 *   shmem_barrier, shmem_sync(PE_start, logPE_stride, PE_size, pSync),
 *   shmem_{broadcast,collect,fcollect,alltoall,alltoalls}{32,64},
 *   shmem_TYPENAME_{and,or,xor,max,min,sum,prod}_to_all. */
#ifndef TSUNAGI_SHMEM_COLL_H
#define TSUNAGI_SHMEM_COLL_H

SHMEM_API void shmem_barrier_all(void);
SHMEM_API void shmem_sync_all(void);
SHMEM_API int shmem_team_sync(shmem_team_t team);

/* shmem_sync names two routines: the team form and the deprecated
 * active-set form.  The symbol shmem_sync is the team form; the active-set
 * one is tsu_shmem_sync_active_set, reached as shmem_sync(a, b, c, d) through
 * the argument-counting macro below (C99 and later) or a C++ overload. */
SHMEM_API int shmem_sync(shmem_team_t team);
SHMEM_API SHMEM_DEPRECATED void tsu_shmem_sync_active_set(int PE_start, int logPE_stride,
                                                          int PE_size, long *pSync);

#define TSU_SHMEM_DECL_COLL(T, N)                                                   \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_broadcast(shmem_team_t team, T *dest,     \
                                                    const T *source, size_t nelems, \
                                                    int PE_root);                   \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_collect(shmem_team_t team, T *dest,       \
                                                  const T *source, size_t nelems);  \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_fcollect(shmem_team_t team, T *dest,      \
                                                   const T *source, size_t nelems); \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_alltoall(shmem_team_t team, T *dest,      \
                                                   const T *source, size_t nelems); \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_alltoalls(shmem_team_t team, T *dest,     \
                                                    const T *source, ptrdiff_t dst, \
                                                    ptrdiff_t sst, size_t nelems);
TSU_SHMEM_RMA_TYPES(TSU_SHMEM_DECL_COLL)
#undef TSU_SHMEM_DECL_COLL

SHMEM_API int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                                 size_t nelems, int PE_root);
SHMEM_API int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
                               size_t nelems);
SHMEM_API int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                                size_t nelems);
SHMEM_API int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                                size_t nelems);
SHMEM_API int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                                 ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

/* NAME arrives pasted (shmem_int_sum_reduce): see shmem_rma.h. */
#define TSU_SHMEM_DECL_REDUCE(T, NAME)                                          \
  TSU_SHMEM_EXT SHMEM_API int NAME(shmem_team_t team, T *dest, const T *source, \
                                   size_t nreduce);
#define TSU_SHMEM_DECL_REDUCE_BIT(T, N)            \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_and_reduce) \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_or_reduce)  \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_xor_reduce)
#define TSU_SHMEM_DECL_REDUCE_ORD(T, N)            \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_max_reduce) \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_min_reduce)
#define TSU_SHMEM_DECL_REDUCE_ARITH(T, N)          \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_sum_reduce) \
  TSU_SHMEM_DECL_REDUCE(T, shmem_##N##_prod_reduce)
TSU_SHMEM_REDUCE_BIT_TYPES(TSU_SHMEM_DECL_REDUCE_BIT)
TSU_SHMEM_REDUCE_ORD_TYPES(TSU_SHMEM_DECL_REDUCE_ORD)
TSU_SHMEM_REDUCE_ORD_TYPES(TSU_SHMEM_DECL_REDUCE_ARITH)
#if defined(__cplusplus) || !defined(__STDC_NO_COMPLEX__)
TSU_SHMEM_REDUCE_CPLX_TYPES(TSU_SHMEM_DECL_REDUCE_ARITH)
#endif

/* ---- Deprecated active-set forms ---------------------------------------- */
SHMEM_API SHMEM_DEPRECATED void shmem_barrier(int PE_start, int logPE_stride, int PE_size,
                                              long *pSync);
#define TSU_SHMEM_DECL_SET_COLL(BITS, BYTES)                                           \
  SHMEM_API SHMEM_DEPRECATED void shmem_broadcast##BITS(                               \
      void *dest, const void *source, size_t nelems, int PE_root, int PE_start,        \
      int logPE_stride, int PE_size, long *pSync);                                     \
  SHMEM_API SHMEM_DEPRECATED void shmem_collect##BITS(void *dest, const void *source,  \
                                                      size_t nelems, int PE_start,     \
                                                      int logPE_stride, int PE_size,   \
                                                      long *pSync);                    \
  SHMEM_API SHMEM_DEPRECATED void shmem_fcollect##BITS(void *dest, const void *source, \
                                                       size_t nelems, int PE_start,    \
                                                       int logPE_stride, int PE_size,  \
                                                       long *pSync);                   \
  SHMEM_API SHMEM_DEPRECATED void shmem_alltoall##BITS(void *dest, const void *source, \
                                                       size_t nelems, int PE_start,    \
                                                       int logPE_stride, int PE_size,  \
                                                       long *pSync);                   \
  SHMEM_API SHMEM_DEPRECATED void shmem_alltoalls##BITS(                               \
      void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
      int PE_start, int logPE_stride, int PE_size, long *pSync);
TSU_SHMEM_DECL_SET_COLL(32, 4)
TSU_SHMEM_DECL_SET_COLL(64, 8)
#undef TSU_SHMEM_DECL_SET_COLL

#define TSU_SHMEM_DECL_TO_ALL(T, NAME)                                                      \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED void NAME(T *dest, const T *source, int nreduce, \
                                                     int PE_start, int logPE_stride,        \
                                                     int PE_size, T *pWrk, long *pSync);
#define TSU_SHMEM_DECL_TO_ALL_BIT(T, N)            \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_and_to_all) \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_or_to_all)  \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_xor_to_all)
#define TSU_SHMEM_DECL_TO_ALL_ORD(T, N)            \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_max_to_all) \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_min_to_all)
#define TSU_SHMEM_DECL_TO_ALL_ARITH(T, N)          \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_sum_to_all) \
  TSU_SHMEM_DECL_TO_ALL(T, shmem_##N##_prod_to_all)
TSU_SHMEM_TOALL_INT_TYPES(TSU_SHMEM_DECL_TO_ALL_BIT)
TSU_SHMEM_TOALL_INT_TYPES(TSU_SHMEM_DECL_TO_ALL_ORD)
TSU_SHMEM_TOALL_FP_TYPES(TSU_SHMEM_DECL_TO_ALL_ORD)
TSU_SHMEM_TOALL_INT_TYPES(TSU_SHMEM_DECL_TO_ALL_ARITH)
TSU_SHMEM_TOALL_FP_TYPES(TSU_SHMEM_DECL_TO_ALL_ARITH)
#if defined(__cplusplus) || !defined(__STDC_NO_COMPLEX__)
TSU_SHMEM_REDUCE_CPLX_TYPES(TSU_SHMEM_DECL_TO_ALL_ARITH)
#endif

#undef TSU_SHMEM_DECL_REDUCE
#undef TSU_SHMEM_DECL_REDUCE_BIT
#undef TSU_SHMEM_DECL_REDUCE_ORD
#undef TSU_SHMEM_DECL_REDUCE_ARITH
#undef TSU_SHMEM_DECL_TO_ALL
#undef TSU_SHMEM_DECL_TO_ALL_BIT
#undef TSU_SHMEM_DECL_TO_ALL_ORD
#undef TSU_SHMEM_DECL_TO_ALL_ARITH

/* shmem_sync(team) or, with four arguments, the deprecated active-set form. */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
#define TSU_SHMEM_SYNC_PICK(a1, a2, a3, a4, F, ...) F
#define shmem_sync(...)                                                                \
  TSU_SHMEM_SYNC_PICK(__VA_ARGS__, tsu_shmem_sync_active_set, tsu_shmem_sync_bad_args, \
                      tsu_shmem_sync_bad_args, shmem_sync, ~)(__VA_ARGS__)
#endif

#endif /* TSUNAGI_SHMEM_COLL_H */
