/* Part of <shmem.h>; do not include directly.
 *
 * The type-generic names of OpenSHMEM 1.5 (shmem_put, shmem_atomic_fetch_add,
 * shmem_wait_until, shmem_sum_reduce, ...): C11 _Generic macros, C++ inline
 * overloads.  Before C11 only the typed names exist.
 *
 * The generic lists hold each distinct C type once (int32_t is int here, so
 * it reaches shmem_int_put: both do the same).  They are X-macros called as
 * LIST(X, P, S), X receiving (P, S, TYPE, TYPENAME). */
#ifndef TSUNAGI_SHMEM_GENERIC_H
#define TSUNAGI_SHMEM_GENERIC_H

#define TSU_SHMEM_G_RMA(X, P, S)                                                 \
  X(P, S, float, float) X(P, S, double, double) X(P, S, long double, longdouble) \
  X(P, S, char, char) X(P, S, signed char, schar) X(P, S, short, short)          \
  X(P, S, int, int) X(P, S, long, long) X(P, S, long long, longlong)             \
  X(P, S, unsigned char, uchar) X(P, S, unsigned short, ushort)                  \
  X(P, S, unsigned int, uint) X(P, S, unsigned long, ulong)                      \
  X(P, S, unsigned long long, ulonglong)
#define TSU_SHMEM_G_AMO_STD(X, P, S)                                 \
  X(P, S, int, int) X(P, S, long, long) X(P, S, long long, longlong) \
  X(P, S, unsigned int, uint) X(P, S, unsigned long, ulong)          \
  X(P, S, unsigned long long, ulonglong)
#define TSU_SHMEM_G_AMO_EXT(X, P, S) \
  TSU_SHMEM_G_AMO_STD(X, P, S) X(P, S, float, float) X(P, S, double, double)
#define TSU_SHMEM_G_AMO_BIT(X, P, S)                        \
  X(P, S, unsigned int, uint) X(P, S, unsigned long, ulong) \
  X(P, S, unsigned long long, ulonglong) X(P, S, int32_t, int32) X(P, S, int64_t, int64)
#define TSU_SHMEM_G_AMO_OLD_INT(X, P, S) \
  X(P, S, int, int) X(P, S, long, long) X(P, S, long long, longlong)
#define TSU_SHMEM_G_AMO_OLD_ALL(X, P, S) \
  TSU_SHMEM_G_AMO_OLD_INT(X, P, S) X(P, S, float, float) X(P, S, double, double)
#define TSU_SHMEM_G_SYNC(X, P, S)                              \
  X(P, S, short, short) X(P, S, int, int) X(P, S, long, long)  \
  X(P, S, long long, longlong) X(P, S, unsigned short, ushort) \
  X(P, S, unsigned int, uint) X(P, S, unsigned long, ulong)    \
  X(P, S, unsigned long long, ulonglong)
#define TSU_SHMEM_G_REDUCE_BIT(X, P, S)                                                \
  X(P, S, unsigned char, uchar) X(P, S, unsigned short, ushort)                        \
  X(P, S, unsigned int, uint) X(P, S, unsigned long, ulong)                            \
  X(P, S, unsigned long long, ulonglong) X(P, S, int8_t, int8) X(P, S, int16_t, int16) \
  X(P, S, int32_t, int32) X(P, S, int64_t, int64)
#define TSU_SHMEM_G_REDUCE_ORD(X, P, S)                                 \
  X(P, S, char, char) X(P, S, signed char, schar) X(P, S, short, short) \
  X(P, S, int, int) X(P, S, long, long) X(P, S, long long, longlong)    \
  X(P, S, unsigned char, uchar) X(P, S, unsigned short, ushort)         \
  X(P, S, unsigned int, uint) X(P, S, unsigned long, ulong)             \
  X(P, S, unsigned long long, ulonglong) X(P, S, float, float)          \
  X(P, S, double, double) X(P, S, long double, longdouble)
#define TSU_SHMEM_G_REDUCE_ARITH(X, P, S) \
  TSU_SHMEM_G_REDUCE_ORD(X, P, S)         \
  X(P, S, TSU_SHMEM_COMPLEXF, complexf) X(P, S, TSU_SHMEM_COMPLEXD, complexd)

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#include <shmem/shmem_generic_c11.h>
#elif defined(__cplusplus)
#include <shmem/shmem_generic_cxx.h>
#endif

#endif /* TSUNAGI_SHMEM_GENERIC_H */
