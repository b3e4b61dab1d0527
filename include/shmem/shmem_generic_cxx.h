/* Part of <shmem.h>; do not include directly.
 *
 * C++: the generic names as inline overloads on the C functions.  Where a
 * name is also a C symbol on long (shmem_swap, shmem_wait, shmem_wait_until:
 * the 1.2 untyped forms) that symbol serves long and the overloads cover the
 * other types. */
#ifndef TSUNAGI_SHMEM_GENERIC_CXX_H
#define TSUNAGI_SHMEM_GENERIC_CXX_H

extern "C++" {

/* Each generator receives (P, S, TYPE, TYPENAME) from a TSU_SHMEM_G_ list and
 * pastes TYPENAME at once (see shmem_rma.h). */
#define TSU_SHMEM_CXX_RMA(P, S, T, N)                                                         \
  inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); } \
  inline void shmem_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                  \
    shmem_ctx_##N##_put(c, d, s, n, pe);                                                      \
  }                                                                                           \
  inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); } \
  inline void shmem_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                  \
    shmem_ctx_##N##_get(c, d, s, n, pe);                                                      \
  }                                                                                           \
  inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) {                             \
    shmem_##N##_put_nbi(d, s, n, pe);                                                         \
  }                                                                                           \
  inline void shmem_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {              \
    shmem_ctx_##N##_put_nbi(c, d, s, n, pe);                                                  \
  }                                                                                           \
  inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) {                             \
    shmem_##N##_get_nbi(d, s, n, pe);                                                         \
  }                                                                                           \
  inline void shmem_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {              \
    shmem_ctx_##N##_get_nbi(c, d, s, n, pe);                                                  \
  }                                                                                           \
  inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }                         \
  inline void shmem_p(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); }   \
  inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }                       \
  inline T shmem_g(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_g(c, s, pe); } \
  inline void shmem_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {  \
    shmem_##N##_iput(d, s, dst, sst, n, pe);                                                  \
  }                                                                                           \
  inline void shmem_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst,       \
                         size_t n, int pe) {                                                  \
    shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe);                                           \
  }                                                                                           \
  inline void shmem_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {  \
    shmem_##N##_iget(d, s, dst, sst, n, pe);                                                  \
  }                                                                                           \
  inline void shmem_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst,       \
                         size_t n, int pe) {                                                  \
    shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe);                                           \
  }                                                                                           \
  inline void shmem_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v,         \
                               int op, int pe) {                                              \
    shmem_##N##_put_signal(d, s, n, sig, v, op, pe);                                          \
  }                                                                                           \
  inline void shmem_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig,      \
                               uint64_t v, int op, int pe) {                                  \
    shmem_ctx_##N##_put_signal(c, d, s, n, sig, v, op, pe);                                   \
  }                                                                                           \
  inline void shmem_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v,     \
                                   int op, int pe) {                                          \
    shmem_##N##_put_signal_nbi(d, s, n, sig, v, op, pe);                                      \
  }                                                                                           \
  inline void shmem_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n,                 \
                                   uint64_t *sig, uint64_t v, int op, int pe) {               \
    shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig, v, op, pe);                               \
  }                                                                                           \
  inline int shmem_broadcast(shmem_team_t t, T *d, const T *s, size_t n, int root) {          \
    return shmem_##N##_broadcast(t, d, s, n, root);                                           \
  }                                                                                           \
  inline int shmem_collect(shmem_team_t t, T *d, const T *s, size_t n) {                      \
    return shmem_##N##_collect(t, d, s, n);                                                   \
  }                                                                                           \
  inline int shmem_fcollect(shmem_team_t t, T *d, const T *s, size_t n) {                     \
    return shmem_##N##_fcollect(t, d, s, n);                                                  \
  }                                                                                           \
  inline int shmem_alltoall(shmem_team_t t, T *d, const T *s, size_t n) {                     \
    return shmem_##N##_alltoall(t, d, s, n);                                                  \
  }                                                                                           \
  inline int shmem_alltoalls(shmem_team_t t, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst,  \
                             size_t n) {                                                      \
    return shmem_##N##_alltoalls(t, d, s, dst, sst, n);                                       \
  }
TSU_SHMEM_G_RMA(TSU_SHMEM_CXX_RMA, ~, ~)
#undef TSU_SHMEM_CXX_RMA

/* Atomics: fetch, set, swap on every AMO type (the extended list holds the
 * standard ones too). */
#define TSU_SHMEM_CXX_AMO_EXT(P, S, T, N)                                                     \
  inline T shmem_atomic_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); } \
  inline T shmem_atomic_fetch(shmem_ctx_t c, const T *s, int pe) {                            \
    return shmem_ctx_##N##_atomic_fetch(c, s, pe);                                            \
  }                                                                                           \
  inline void shmem_atomic_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }       \
  inline void shmem_atomic_set(shmem_ctx_t c, T *d, T v, int pe) {                            \
    shmem_ctx_##N##_atomic_set(c, d, v, pe);                                                  \
  }                                                                                           \
  inline T shmem_atomic_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); } \
  inline T shmem_atomic_swap(shmem_ctx_t c, T *d, T v, int pe) {                              \
    return shmem_ctx_##N##_atomic_swap(c, d, v, pe);                                          \
  }                                                                                           \
  inline void shmem_atomic_fetch_nbi(T *f, const T *s, int pe) {                              \
    shmem_##N##_atomic_fetch_nbi(f, s, pe);                                                   \
  }                                                                                           \
  inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe) {               \
    shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe);                                            \
  }                                                                                           \
  inline void shmem_atomic_swap_nbi(T *f, T *d, T v, int pe) {                                \
    shmem_##N##_atomic_swap_nbi(f, d, v, pe);                                                 \
  }                                                                                           \
  inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {                 \
    shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe);                                          \
  }
TSU_SHMEM_G_AMO_EXT(TSU_SHMEM_CXX_AMO_EXT, ~, ~)
#undef TSU_SHMEM_CXX_AMO_EXT

/* An operation with one value operand, fetching and not, blocking and
 * nbi; B and CB are the C stems (shmem_int, shmem_ctx_int). */
#define TSU_SHMEM_CXX_AMO_OP(T, OP, B, CB)                                            \
  inline T shmem_atomic_fetch_##OP(T *d, T v, int pe) {                               \
    return B##_atomic_fetch_##OP(d, v, pe);                                           \
  }                                                                                   \
  inline T shmem_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe) {                \
    return CB##_atomic_fetch_##OP(c, d, v, pe);                                       \
  }                                                                                   \
  inline void shmem_atomic_##OP(T *d, T v, int pe) { B##_atomic_##OP(d, v, pe); }     \
  inline void shmem_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe) {                   \
    CB##_atomic_##OP(c, d, v, pe);                                                    \
  }                                                                                   \
  inline void shmem_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe) {                \
    B##_atomic_fetch_##OP##_nbi(f, d, v, pe);                                         \
  }                                                                                   \
  inline void shmem_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { \
    CB##_atomic_fetch_##OP##_nbi(c, f, d, v, pe);                                     \
  }
#define TSU_SHMEM_CXX_AMO_STD(P, S, T, N)                                                       \
  TSU_SHMEM_CXX_AMO_OP(T, add, shmem_##N, shmem_ctx_##N)                                        \
  inline T shmem_atomic_compare_swap(T *d, T cond, T v, int pe) {                               \
    return shmem_##N##_atomic_compare_swap(d, cond, v, pe);                                     \
  }                                                                                             \
  inline T shmem_atomic_compare_swap(shmem_ctx_t c, T *d, T cond, T v, int pe) {                \
    return shmem_ctx_##N##_atomic_compare_swap(c, d, cond, v, pe);                              \
  }                                                                                             \
  inline void shmem_atomic_compare_swap_nbi(T *f, T *d, T cond, T v, int pe) {                  \
    shmem_##N##_atomic_compare_swap_nbi(f, d, cond, v, pe);                                     \
  }                                                                                             \
  inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T cond, T v, int pe) {   \
    shmem_ctx_##N##_atomic_compare_swap_nbi(c, f, d, cond, v, pe);                              \
  }                                                                                             \
  inline T shmem_atomic_fetch_inc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); } \
  inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe) {                                \
    return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe);                                          \
  }                                                                                             \
  inline void shmem_atomic_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }                 \
  inline void shmem_atomic_inc(shmem_ctx_t c, T *d, int pe) {                                   \
    shmem_ctx_##N##_atomic_inc(c, d, pe);                                                       \
  }                                                                                             \
  inline void shmem_atomic_fetch_inc_nbi(T *f, T *d, int pe) {                                  \
    shmem_##N##_atomic_fetch_inc_nbi(f, d, pe);                                                 \
  }                                                                                             \
  inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe) {                   \
    shmem_ctx_##N##_atomic_fetch_inc_nbi(c, f, d, pe);                                          \
  }
TSU_SHMEM_G_AMO_STD(TSU_SHMEM_CXX_AMO_STD, ~, ~)
#define TSU_SHMEM_CXX_AMO_BIT(P, S, T, N)                \
  TSU_SHMEM_CXX_AMO_OP(T, and, shmem_##N, shmem_ctx_##N) \
  TSU_SHMEM_CXX_AMO_OP(T, or, shmem_##N, shmem_ctx_##N)  \
  TSU_SHMEM_CXX_AMO_OP(T, xor, shmem_##N, shmem_ctx_##N)
TSU_SHMEM_G_AMO_BIT(TSU_SHMEM_CXX_AMO_BIT, ~, ~)
#undef TSU_SHMEM_CXX_AMO_OP
#undef TSU_SHMEM_CXX_AMO_STD
#undef TSU_SHMEM_CXX_AMO_BIT

/* ---- Point-to-point synchronization ------------------------------------- */
#define TSU_SHMEM_CXX_SYNC_SET(T, N, OP)                                        \
  inline auto shmem_##OP(T *v, size_t n, const int *st, int cmp, T x)           \
      -> decltype(shmem_##N##_##OP(v, n, st, cmp, x)) {                         \
    return shmem_##N##_##OP(v, n, st, cmp, x);                                  \
  }                                                                             \
  inline auto shmem_##OP##_vector(T *v, size_t n, const int *st, int cmp, T *x) \
      -> decltype(shmem_##N##_##OP##_vector(v, n, st, cmp, x)) {                \
    return shmem_##N##_##OP##_vector(v, n, st, cmp, x);                         \
  }
#define TSU_SHMEM_CXX_SYNC_SOME(T, N, OP)                                                \
  inline size_t shmem_##OP(T *v, size_t n, size_t *idx, const int *st, int cmp, T x) {   \
    return shmem_##N##_##OP(v, n, idx, st, cmp, x);                                      \
  }                                                                                      \
  inline size_t shmem_##OP##_vector(T *v, size_t n, size_t *idx, const int *st, int cmp, \
                                    T *x) {                                              \
    return shmem_##N##_##OP##_vector(v, n, idx, st, cmp, x);                             \
  }
#define TSU_SHMEM_CXX_SYNC(P, S, T, N)                                                      \
  TSU_SHMEM_CXX_SYNC_SET(T, N, wait_until_all) TSU_SHMEM_CXX_SYNC_SET(T, N, wait_until_any) \
  TSU_SHMEM_CXX_SYNC_SOME(T, N, wait_until_some) TSU_SHMEM_CXX_SYNC_SET(T, N, test_all)     \
  TSU_SHMEM_CXX_SYNC_SET(T, N, test_any) TSU_SHMEM_CXX_SYNC_SOME(T, N, test_some)           \
  inline int shmem_test(T *v, int cmp, T x) { return shmem_##N##_test(v, cmp, x); }         \
  /* Flags declared volatile, as the 1.2 signatures had them: */                            \
  inline int shmem_test(volatile T *v, int cmp, T x) {                                      \
    return shmem_##N##_test(const_cast<T *>(v), cmp, x);                                    \
  }                                                                                         \
  inline void shmem_wait_until(volatile T *v, int cmp, T x) {                               \
    shmem_##N##_wait_until(const_cast<T *>(v), cmp, x);                                     \
  }
TSU_SHMEM_G_SYNC(TSU_SHMEM_CXX_SYNC, ~, ~)
#undef TSU_SHMEM_CXX_SYNC_SET
#undef TSU_SHMEM_CXX_SYNC_SOME
#undef TSU_SHMEM_CXX_SYNC
/* shmem_wait_until on long is the C symbol; the other types: */
#define TSU_SHMEM_CXX_WAIT_UNTIL(P, S, T, N) \
  inline void shmem_wait_until(T *v, int cmp, T x) { shmem_##N##_wait_until(v, cmp, x); }
#define TSU_SHMEM_G_SYNC_NOT_LONG(X, P, S)                             \
  X(P, S, short, short) X(P, S, int, int) X(P, S, long long, longlong) \
  X(P, S, unsigned short, ushort) X(P, S, unsigned int, uint)          \
  X(P, S, unsigned long, ulong) X(P, S, unsigned long long, ulonglong)
TSU_SHMEM_G_SYNC_NOT_LONG(TSU_SHMEM_CXX_WAIT_UNTIL, ~, ~)
#undef TSU_SHMEM_CXX_WAIT_UNTIL

/* ---- Reductions (team forms) -------------------------------------------- */
#define TSU_SHMEM_CXX_REDUCE(T, OP, F)                                         \
  inline int shmem_##OP##_reduce(shmem_team_t t, T *d, const T *s, size_t n) { \
    return F(t, d, s, n);                                                      \
  }
#define TSU_SHMEM_CXX_REDUCE_BIT(P, S, T, N)           \
  TSU_SHMEM_CXX_REDUCE(T, and, shmem_##N##_and_reduce) \
  TSU_SHMEM_CXX_REDUCE(T, or, shmem_##N##_or_reduce)   \
  TSU_SHMEM_CXX_REDUCE(T, xor, shmem_##N##_xor_reduce)
#define TSU_SHMEM_CXX_REDUCE_ORD(P, S, T, N)           \
  TSU_SHMEM_CXX_REDUCE(T, max, shmem_##N##_max_reduce) \
  TSU_SHMEM_CXX_REDUCE(T, min, shmem_##N##_min_reduce)
#define TSU_SHMEM_CXX_REDUCE_ARITH(P, S, T, N)         \
  TSU_SHMEM_CXX_REDUCE(T, sum, shmem_##N##_sum_reduce) \
  TSU_SHMEM_CXX_REDUCE(T, prod, shmem_##N##_prod_reduce)
TSU_SHMEM_G_REDUCE_BIT(TSU_SHMEM_CXX_REDUCE_BIT, ~, ~)
TSU_SHMEM_G_REDUCE_ORD(TSU_SHMEM_CXX_REDUCE_ORD, ~, ~)
TSU_SHMEM_G_REDUCE_ARITH(TSU_SHMEM_CXX_REDUCE_ARITH, ~, ~)
#undef TSU_SHMEM_CXX_REDUCE
#undef TSU_SHMEM_CXX_REDUCE_BIT
#undef TSU_SHMEM_CXX_REDUCE_ORD
#undef TSU_SHMEM_CXX_REDUCE_ARITH

/* ---- Deprecated names --------------------------------------------------- */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
/* shmem_sync(PE_start, logPE_stride, PE_size, pSync), the active-set form. */
SHMEM_DEPRECATED inline void shmem_sync(int PE_start, int logPE_stride, int PE_size,
                                        long *pSync) {
  tsu_shmem_sync_active_set(PE_start, logPE_stride, PE_size, pSync);
}
#define TSU_SHMEM_CXX_OLD_ALL(P, S, T, N)                                                        \
  SHMEM_DEPRECATED inline T shmem_fetch(const T *s, int pe) { return shmem_##N##_fetch(s, pe); } \
  SHMEM_DEPRECATED inline void shmem_set(T *d, T v, int pe) { shmem_##N##_set(d, v, pe); }
#define TSU_SHMEM_CXX_OLD_INT(P, S, T, N)                                                        \
  SHMEM_DEPRECATED inline T shmem_cswap(T *d, T cond, T v, int pe) {                             \
    return shmem_##N##_cswap(d, cond, v, pe);                                                    \
  }                                                                                              \
  SHMEM_DEPRECATED inline T shmem_finc(T *d, int pe) { return shmem_##N##_finc(d, pe); }         \
  SHMEM_DEPRECATED inline void shmem_inc(T *d, int pe) { shmem_##N##_inc(d, pe); }               \
  SHMEM_DEPRECATED inline T shmem_fadd(T *d, T v, int pe) { return shmem_##N##_fadd(d, v, pe); } \
  SHMEM_DEPRECATED inline void shmem_add(T *d, T v, int pe) { shmem_##N##_add(d, v, pe); }
TSU_SHMEM_G_AMO_OLD_ALL(TSU_SHMEM_CXX_OLD_ALL, ~, ~)
TSU_SHMEM_G_AMO_OLD_INT(TSU_SHMEM_CXX_OLD_INT, ~, ~)
/* shmem_swap and shmem_wait on long are the C symbols; the other types: */
#define TSU_SHMEM_CXX_OLD_SWAP(P, S, T, N) \
  SHMEM_DEPRECATED inline T shmem_swap(T *d, T v, int pe) { return shmem_##N##_swap(d, v, pe); }
#define TSU_SHMEM_CXX_OLD_WAIT(P, S, T, N) \
  SHMEM_DEPRECATED inline void shmem_wait(T *v, T x) { shmem_##N##_wait(v, x); }
#define TSU_SHMEM_CXX_OLD_WAIT_VOLATILE(P, S, T, N)             \
  SHMEM_DEPRECATED inline void shmem_wait(volatile T *v, T x) { \
    shmem_##N##_wait(const_cast<T *>(v), x);                    \
  }
TSU_SHMEM_CXX_OLD_SWAP(~, ~, int, int)
TSU_SHMEM_CXX_OLD_SWAP(~, ~, long long, longlong)
TSU_SHMEM_CXX_OLD_SWAP(~, ~, float, float)
TSU_SHMEM_CXX_OLD_SWAP(~, ~, double, double)
TSU_SHMEM_G_SYNC_NOT_LONG(TSU_SHMEM_CXX_OLD_WAIT, ~, ~)
TSU_SHMEM_G_SYNC(TSU_SHMEM_CXX_OLD_WAIT_VOLATILE, ~, ~)
#undef TSU_SHMEM_CXX_OLD_ALL
#undef TSU_SHMEM_CXX_OLD_INT
#undef TSU_SHMEM_CXX_OLD_SWAP
#undef TSU_SHMEM_CXX_OLD_WAIT
#undef TSU_SHMEM_CXX_OLD_WAIT_VOLATILE
#undef TSU_SHMEM_G_SYNC_NOT_LONG
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

} /* extern "C++" */

#endif /* TSUNAGI_SHMEM_GENERIC_CXX_H */
