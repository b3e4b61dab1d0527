/* Compile-only check of shmem.h's C11 type-generic names: each is called
 * once for every type the specification lists for it (the fixed-width and
 * size/ptrdiff types reach their C type's function), with and without a
 * context where the name has a shmem_ctx_ form.  Built -Wall -Wextra
 * -Wpedantic -Werror: a call that reached the wrong type's function would
 * pass an incompatible pointer; the value-returning ones are also checked
 * for their type with _Static_assert. */
#include <shmem.h>

#define SAME_TYPE(expr, T) _Static_assert(_Generic((expr), T: 1, default: 0), #expr " is " #T)

/* ---- RMA and team collectives: the standard RMA types -------------------- */
#define RMA_TYPES(X)                                                             \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)     \
  X(signed char, schar) X(short, short) X(int, int) X(long, long)                \
  X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)       \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
  X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)          \
  X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)  \
  X(size_t, size) X(ptrdiff_t, ptrdiff)

#define RMA_CALLS(T, N)                                              \
  void rma_##N(shmem_ctx_t ctx, shmem_team_t team, T *d, const T *s, \
               uint64_t *sig);                                       \
  void rma_##N(shmem_ctx_t ctx, shmem_team_t team, T *d, const T *s, \
               uint64_t *sig) {                                      \
    T v;                                                             \
    shmem_put(d, s, 1, 0);                                           \
    shmem_put(ctx, d, s, 1, 0);                                      \
    shmem_get(d, s, 1, 0);                                           \
    shmem_get(ctx, d, s, 1, 0);                                      \
    shmem_put_nbi(d, s, 1, 0);                                       \
    shmem_put_nbi(ctx, d, s, 1, 0);                                  \
    shmem_get_nbi(d, s, 1, 0);                                       \
    shmem_get_nbi(ctx, d, s, 1, 0);                                  \
    shmem_iput(d, s, 2, 1, 1, 0);                                    \
    shmem_iput(ctx, d, s, 2, 1, 1, 0);                               \
    shmem_iget(d, s, 1, 2, 1, 0);                                    \
    shmem_iget(ctx, d, s, 1, 2, 1, 0);                               \
    shmem_put_signal(d, s, 1, sig, 1, SHMEM_SIGNAL_SET, 0);          \
    shmem_put_signal(ctx, d, s, 1, sig, 1, SHMEM_SIGNAL_ADD, 0);     \
    shmem_put_signal_nbi(d, s, 1, sig, 1, SHMEM_SIGNAL_SET, 0);      \
    shmem_put_signal_nbi(ctx, d, s, 1, sig, 1, SHMEM_SIGNAL_ADD, 0); \
    SAME_TYPE(shmem_g(s, 0), T);                                     \
    SAME_TYPE(shmem_g(ctx, s, 0), T);                                \
    v = shmem_g(s, 0);                                               \
    v = shmem_g(ctx, d, 0);                                          \
    shmem_p(d, v, 0);                                                \
    shmem_p(ctx, d, v, 0);                                           \
    (void)shmem_broadcast(team, d, s, 1, 0);                         \
    (void)shmem_collect(team, d, s, 1);                              \
    (void)shmem_fcollect(team, d, s, 1);                             \
    (void)shmem_alltoall(team, d, s, 1);                             \
    (void)shmem_alltoalls(team, d, s, 1, 1, 1);                      \
  }
RMA_TYPES(RMA_CALLS)

/* ---- Atomics ------------------------------------------------------------- */
#define AMO_STD_TYPES(X)                                                     \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)     \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32) \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)  \
  X(ptrdiff_t, ptrdiff)
#define AMO_EXT_TYPES(X) X(float, float) X(double, double)
#define AMO_BIT_TYPES(X)                                                         \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

/* fetch, set, swap: every AMO type. */
#define AMO_EXT_CALLS(T, N)                        \
  void amo_ext_##N(shmem_ctx_t ctx, T *d, T *f);   \
  void amo_ext_##N(shmem_ctx_t ctx, T *d, T *f) {  \
    T v = 1;                                       \
    SAME_TYPE(shmem_atomic_fetch(d, 0), T);        \
    SAME_TYPE(shmem_atomic_fetch(ctx, d, 0), T);   \
    SAME_TYPE(shmem_atomic_swap(d, v, 0), T);      \
    SAME_TYPE(shmem_atomic_swap(ctx, d, v, 0), T); \
    v = shmem_atomic_fetch(d, 0);                  \
    v = shmem_atomic_fetch(ctx, d, 0);             \
    shmem_atomic_set(d, v, 0);                     \
    shmem_atomic_set(ctx, d, v, 0);                \
    v = shmem_atomic_swap(d, v, 0);                \
    v = shmem_atomic_swap(ctx, d, v, 0);           \
    shmem_atomic_fetch_nbi(f, d, 0);               \
    shmem_atomic_fetch_nbi(ctx, f, d, 0);          \
    shmem_atomic_swap_nbi(f, d, v, 0);             \
    shmem_atomic_swap_nbi(ctx, f, d, v, 0);        \
  }
#define AMO_STD_CALLS(T, N)                              \
  AMO_EXT_CALLS(T, N)                                    \
  void amo_std_##N(shmem_ctx_t ctx, T *d, T *f);         \
  void amo_std_##N(shmem_ctx_t ctx, T *d, T *f) {        \
    T v = 1;                                             \
    SAME_TYPE(shmem_atomic_compare_swap(d, v, v, 0), T); \
    SAME_TYPE(shmem_atomic_fetch_inc(ctx, d, 0), T);     \
    SAME_TYPE(shmem_atomic_fetch_add(d, v, 0), T);       \
    v = shmem_atomic_compare_swap(d, v, v, 0);           \
    v = shmem_atomic_compare_swap(ctx, d, v, v, 0);      \
    v = shmem_atomic_fetch_inc(d, 0);                    \
    v = shmem_atomic_fetch_inc(ctx, d, 0);               \
    shmem_atomic_inc(d, 0);                              \
    shmem_atomic_inc(ctx, d, 0);                         \
    v = shmem_atomic_fetch_add(d, v, 0);                 \
    v = shmem_atomic_fetch_add(ctx, d, v, 0);            \
    shmem_atomic_add(d, v, 0);                           \
    shmem_atomic_add(ctx, d, v, 0);                      \
    shmem_atomic_compare_swap_nbi(f, d, v, v, 0);        \
    shmem_atomic_compare_swap_nbi(ctx, f, d, v, v, 0);   \
    shmem_atomic_fetch_inc_nbi(f, d, 0);                 \
    shmem_atomic_fetch_inc_nbi(ctx, f, d, 0);            \
    shmem_atomic_fetch_add_nbi(f, d, v, 0);              \
    shmem_atomic_fetch_add_nbi(ctx, f, d, v, 0);         \
  }
#define AMO_BIT_CALLS(T, N)                             \
  void amo_bit_##N(shmem_ctx_t ctx, T *d, T *f);        \
  void amo_bit_##N(shmem_ctx_t ctx, T *d, T *f) {       \
    T v = 1;                                            \
    SAME_TYPE(shmem_atomic_fetch_and(d, v, 0), T);      \
    SAME_TYPE(shmem_atomic_fetch_xor(ctx, d, v, 0), T); \
    v = shmem_atomic_fetch_and(d, v, 0);                \
    v = shmem_atomic_fetch_and(ctx, d, v, 0);           \
    v = shmem_atomic_fetch_or(d, v, 0);                 \
    v = shmem_atomic_fetch_or(ctx, d, v, 0);            \
    v = shmem_atomic_fetch_xor(d, v, 0);                \
    v = shmem_atomic_fetch_xor(ctx, d, v, 0);           \
    shmem_atomic_and(d, v, 0);                          \
    shmem_atomic_and(ctx, d, v, 0);                     \
    shmem_atomic_or(d, v, 0);                           \
    shmem_atomic_or(ctx, d, v, 0);                      \
    shmem_atomic_xor(d, v, 0);                          \
    shmem_atomic_xor(ctx, d, v, 0);                     \
    shmem_atomic_fetch_and_nbi(f, d, v, 0);             \
    shmem_atomic_fetch_and_nbi(ctx, f, d, v, 0);        \
    shmem_atomic_fetch_or_nbi(f, d, v, 0);              \
    shmem_atomic_fetch_or_nbi(ctx, f, d, v, 0);         \
    shmem_atomic_fetch_xor_nbi(f, d, v, 0);             \
    shmem_atomic_fetch_xor_nbi(ctx, f, d, v, 0);        \
  }
AMO_STD_TYPES(AMO_STD_CALLS)
AMO_EXT_TYPES(AMO_EXT_CALLS)
AMO_BIT_TYPES(AMO_BIT_CALLS)

/* ---- Point-to-point synchronization -------------------------------------- */
#define SYNC_TYPES(X)                                                     \
  X(short, short) X(int, int) X(long, long) X(long long, longlong)        \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
  X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)    \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
#define SYNC_CALLS(T, N)                                                        \
  size_t sync_##N(T *ivars, T *values, const int *status, size_t *idx);         \
  size_t sync_##N(T *ivars, T *values, const int *status, size_t *idx) {        \
    size_t n = 0;                                                               \
    SAME_TYPE(shmem_test_any(ivars, 4, status, SHMEM_CMP_EQ, 1), size_t);       \
    SAME_TYPE(shmem_test_all(ivars, 4, status, SHMEM_CMP_EQ, 1), int);          \
    shmem_wait_until(ivars, SHMEM_CMP_NE, 0);                                   \
    shmem_wait_until_all(ivars, 4, status, SHMEM_CMP_GE, 1);                    \
    n += shmem_wait_until_any(ivars, 4, status, SHMEM_CMP_GT, 0);               \
    n += shmem_wait_until_some(ivars, 4, idx, status, SHMEM_CMP_LT, 9);         \
    shmem_wait_until_all_vector(ivars, 4, status, SHMEM_CMP_EQ, values);        \
    n += shmem_wait_until_any_vector(ivars, 4, status, SHMEM_CMP_EQ, values);   \
    n += shmem_wait_until_some_vector(ivars, 4, idx, status, SHMEM_CMP_EQ,      \
                                      values);                                  \
    n += (size_t)shmem_test(ivars, SHMEM_CMP_LE, 3);                            \
    n += (size_t)shmem_test_all(ivars, 4, status, SHMEM_CMP_EQ, 1);             \
    n += shmem_test_any(ivars, 4, NULL, SHMEM_CMP_EQ, 1);                       \
    n += shmem_test_some(ivars, 4, idx, status, SHMEM_CMP_EQ, 1);               \
    n += (size_t)shmem_test_all_vector(ivars, 4, status, SHMEM_CMP_EQ, values); \
    n += shmem_test_any_vector(ivars, 4, status, SHMEM_CMP_EQ, values);         \
    n += shmem_test_some_vector(ivars, 4, idx, status, SHMEM_CMP_EQ, values);   \
    return n;                                                                   \
  }
SYNC_TYPES(SYNC_CALLS)

/* ---- Reductions ---------------------------------------------------------- */
#define REDUCE_BIT_TYPES(X)                                                \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)  \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8) \
  X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)  \
  X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define REDUCE_ORD_TYPES(X)                                                     \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long) \
  X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)          \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)       \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)            \
  X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)     \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float)       \
  X(double, double) X(long double, longdouble)
#define REDUCE_BIT_CALLS(T, N)                                          \
  int red_bit_##N(shmem_team_t t, T *d, const T *s);                    \
  int red_bit_##N(shmem_team_t t, T *d, const T *s) {                   \
    return shmem_and_reduce(t, d, s, 2) + shmem_or_reduce(t, d, s, 2) + \
           shmem_xor_reduce(t, d, s, 2);                                \
  }
#define REDUCE_ARITH_CALLS(T, N)                                         \
  int red_arith_##N(shmem_team_t t, T *d, const T *s);                   \
  int red_arith_##N(shmem_team_t t, T *d, const T *s) {                  \
    return shmem_sum_reduce(t, d, s, 2) + shmem_prod_reduce(t, d, s, 2); \
  }
#define REDUCE_ORD_CALLS(T, N)                                          \
  REDUCE_ARITH_CALLS(T, N)                                              \
  int red_ord_##N(shmem_team_t t, T *d, const T *s);                    \
  int red_ord_##N(shmem_team_t t, T *d, const T *s) {                   \
    return shmem_max_reduce(t, d, s, 2) + shmem_min_reduce(t, d, s, 2); \
  }
REDUCE_BIT_TYPES(REDUCE_BIT_CALLS)
REDUCE_ORD_TYPES(REDUCE_ORD_CALLS)
REDUCE_ARITH_CALLS(float _Complex, complexf)
REDUCE_ARITH_CALLS(double _Complex, complexd)

/* ---- Synchronization by team, and the deprecated generic names ------------ */
void sync_forms(shmem_team_t team, long *pSync);
void sync_forms(shmem_team_t team, long *pSync) {
  (void)shmem_sync(team);
  (void)shmem_team_sync(team);
  shmem_barrier_all();
  shmem_sync_all();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  shmem_sync(0, 0, 2, pSync);
  shmem_barrier(0, 0, 2, pSync);
#pragma GCC diagnostic pop
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define OLD_INT_CALLS(T, N)            \
  T old_##N(T *d);                     \
  T old_##N(T *d) {                    \
    T v = shmem_fetch(d, 0);           \
    SAME_TYPE(shmem_fadd(d, v, 0), T); \
    shmem_set(d, v, 0);                \
    v = shmem_swap(d, v, 0);           \
    v = shmem_cswap(d, v, v, 0);       \
    v = shmem_finc(d, 0);              \
    shmem_inc(d, 0);                   \
    v = shmem_fadd(d, v, 0);           \
    shmem_add(d, v, 0);                \
    return v;                          \
  }
#define OLD_FP_CALLS(T, N)      \
  T old_##N(T *d);              \
  T old_##N(T *d) {             \
    T v = shmem_fetch(d, 0);    \
    shmem_set(d, v, 0);         \
    return shmem_swap(d, v, 0); \
  }
OLD_INT_CALLS(int, int)
OLD_INT_CALLS(long, long)
OLD_INT_CALLS(long long, longlong)
OLD_FP_CALLS(float, float)
OLD_FP_CALLS(double, double)
#define OLD_WAIT_CALLS(T, N)  \
  void old_wait_##N(T *ivar); \
  void old_wait_##N(T *ivar) { shmem_wait(ivar, 0); }
SYNC_TYPES(OLD_WAIT_CALLS)
#pragma GCC diagnostic pop

/* The 1.2 untyped symbols stay reachable by taking their address. */
void untyped(long *ivar);
void untyped(long *ivar) {
  long (*swap)(long *, long, int) = &shmem_swap;
  void (*wait_until)(long *, int, long) = &shmem_wait_until;
  void (*wait)(long *, long) = &shmem_wait;
  int (*sync)(shmem_team_t) = &shmem_sync;
  (void)swap(ivar, 1, 0);
  wait_until(ivar, SHMEM_CMP_EQ, 1);
  wait(ivar, 0);
  (void)sync(SHMEM_TEAM_WORLD);
}
