/* Part of <shmem.h>; do not include directly.
 *
 * C11: each generic name is a _Generic on the type its dest (or source,
 * ivar, fetch) points to.  Where a shmem_ctx_ form shares the name it has one
 * argument more, and TSU_SHMEM_PICKn (n = the ctx form's count) chooses by
 * the number of arguments. */
#ifndef TSUNAGI_SHMEM_GENERIC_C11_H
#define TSUNAGI_SHMEM_GENERIC_C11_H

/* One association of a _Generic; each starts with its comma. */
#define TSU_SHMEM_GASSOC(P, S, T, N) , T: P##N##S

/* Dispatch on the first argument x (G1), on the second after a context (GC)
 * or after a team (GT). */
#define TSU_SHMEM_G1(LIST, S, x, ...) \
  _Generic(*(x) LIST(TSU_SHMEM_GASSOC, shmem_, S))(x, __VA_ARGS__)
#define TSU_SHMEM_GC(LIST, S, c, x, ...) \
  _Generic(*(x) LIST(TSU_SHMEM_GASSOC, shmem_ctx_, S))(c, x, __VA_ARGS__)
#define TSU_SHMEM_GT(LIST, S, t, x, ...) \
  _Generic(*(x) LIST(TSU_SHMEM_GASSOC, shmem_, S))(t, x, __VA_ARGS__)

/* F lands on the ctx form with n arguments, on the plain one with n - 1. */
#define TSU_SHMEM_PICK3(a1, a2, a3, F, ...) F
#define TSU_SHMEM_PICK4(a1, a2, a3, a4, F, ...) F
#define TSU_SHMEM_PICK5(a1, a2, a3, a4, a5, F, ...) F
#define TSU_SHMEM_PICK6(a1, a2, a3, a4, a5, a6, F, ...) F
#define TSU_SHMEM_PICK7(a1, a2, a3, a4, a5, a6, a7, F, ...) F
#define TSU_SHMEM_PICK8(a1, a2, a3, a4, a5, a6, a7, a8, F, ...) F
#define TSU_SHMEM_CTX_OR_NOT(n, LIST, S, ...) \
  TSU_SHMEM_PICK##n(__VA_ARGS__, TSU_SHMEM_GC, TSU_SHMEM_G1, ~)(LIST, S, __VA_ARGS__)

/* ---- RMA ---------------------------------------------------------------- */
#define shmem_put(...) TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_RMA, _put, __VA_ARGS__)
#define shmem_get(...) TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_RMA, _get, __VA_ARGS__)
#define shmem_p(...) TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_RMA, _p, __VA_ARGS__)
#define shmem_g(...) TSU_SHMEM_CTX_OR_NOT(3, TSU_SHMEM_G_RMA, _g, __VA_ARGS__)
#define shmem_iput(...) TSU_SHMEM_CTX_OR_NOT(7, TSU_SHMEM_G_RMA, _iput, __VA_ARGS__)
#define shmem_iget(...) TSU_SHMEM_CTX_OR_NOT(7, TSU_SHMEM_G_RMA, _iget, __VA_ARGS__)
#define shmem_put_nbi(...) TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_RMA, _put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_RMA, _get_nbi, __VA_ARGS__)
#define shmem_put_signal(...) \
  TSU_SHMEM_CTX_OR_NOT(8, TSU_SHMEM_G_RMA, _put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(8, TSU_SHMEM_G_RMA, _put_signal_nbi, __VA_ARGS__)

/* ---- Atomics ------------------------------------------------------------ */
#define shmem_atomic_fetch(...) \
  TSU_SHMEM_CTX_OR_NOT(3, TSU_SHMEM_G_AMO_EXT, _atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_EXT, _atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_EXT, _atomic_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) \
  TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_AMO_STD, _atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) \
  TSU_SHMEM_CTX_OR_NOT(3, TSU_SHMEM_G_AMO_STD, _atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) \
  TSU_SHMEM_CTX_OR_NOT(3, TSU_SHMEM_G_AMO_STD, _atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_STD, _atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_STD, _atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_BIT, _atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_BIT, _atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_BIT, _atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_BIT, _atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_BIT, _atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_BIT, _atomic_xor, __VA_ARGS__)
/* Non-blocking fetching forms: dispatch on the fetch pointer. */
#define shmem_atomic_fetch_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_EXT, _atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_AMO_EXT, _atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(6, TSU_SHMEM_G_AMO_STD, _atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(4, TSU_SHMEM_G_AMO_STD, _atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_AMO_STD, _atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_AMO_BIT, _atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_AMO_BIT, _atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) \
  TSU_SHMEM_CTX_OR_NOT(5, TSU_SHMEM_G_AMO_BIT, _atomic_fetch_xor_nbi, __VA_ARGS__)
/* Deprecated (1.3) generic atomics; shmem_swap's long form is also a symbol. */
#define shmem_fetch(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_ALL, _fetch, __VA_ARGS__)
#define shmem_set(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_ALL, _set, __VA_ARGS__)
#define shmem_swap(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_ALL, _swap, __VA_ARGS__)
#define shmem_cswap(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_INT, _cswap, __VA_ARGS__)
#define shmem_finc(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_INT, _finc, __VA_ARGS__)
#define shmem_inc(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_INT, _inc, __VA_ARGS__)
#define shmem_fadd(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_INT, _fadd, __VA_ARGS__)
#define shmem_add(...) TSU_SHMEM_G1(TSU_SHMEM_G_AMO_OLD_INT, _add, __VA_ARGS__)

/* ---- Point-to-point synchronization ------------------------------------- */
#define shmem_wait_until(...) TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test, __VA_ARGS__)
#define shmem_test_all(...) TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test_all, __VA_ARGS__)
#define shmem_test_any(...) TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test_any, __VA_ARGS__)
#define shmem_test_some(...) TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) \
  TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _test_some_vector, __VA_ARGS__)
/* Deprecated: waits while *ivar == value; the long form is also a symbol. */
#define shmem_wait(...) TSU_SHMEM_G1(TSU_SHMEM_G_SYNC, _wait, __VA_ARGS__)

/* ---- Collectives (team forms) ------------------------------------------- */
#define shmem_broadcast(...) TSU_SHMEM_GT(TSU_SHMEM_G_RMA, _broadcast, __VA_ARGS__)
#define shmem_collect(...) TSU_SHMEM_GT(TSU_SHMEM_G_RMA, _collect, __VA_ARGS__)
#define shmem_fcollect(...) TSU_SHMEM_GT(TSU_SHMEM_G_RMA, _fcollect, __VA_ARGS__)
#define shmem_alltoall(...) TSU_SHMEM_GT(TSU_SHMEM_G_RMA, _alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) TSU_SHMEM_GT(TSU_SHMEM_G_RMA, _alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_BIT, _and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_BIT, _or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_BIT, _xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_ORD, _max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_ORD, _min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) \
  TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_ARITH, _sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) \
  TSU_SHMEM_GT(TSU_SHMEM_G_REDUCE_ARITH, _prod_reduce, __VA_ARGS__)

#endif /* TSUNAGI_SHMEM_GENERIC_C11_H */
