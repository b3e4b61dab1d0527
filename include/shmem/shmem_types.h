/* Part of <shmem.h>; do not include directly.
 *
 * The type lists of OpenSHMEM 1.5 as X-macros: each family in shmem.h is
 * written once and expanded over its list.  Every list calls X(TYPE, TYPENAME),
 * TYPENAME being the part of the function names (shmem_TYPENAME_put). */
#ifndef TSUNAGI_SHMEM_TYPES_H
#define TSUNAGI_SHMEM_TYPES_H

/* long long and _Complex are extensions before C99: declarations that use
 * them are marked so that a C89 program including shmem.h compiles cleanly
 * under -pedantic. */
#if defined(__GNUC__) && !defined(__cplusplus)
#define TSU_SHMEM_EXT __extension__
#else
#define TSU_SHMEM_EXT
#endif

/* The leading parameter of the shmem_ctx_ forms, passed to the declaring
 * macros by name and expanded there as C(): as a plain argument its comma
 * would split the arguments of the next macro (and an empty argument is not
 * C89). */
#define TSU_SHMEM_NOARG()
#define TSU_SHMEM_CTXARG() shmem_ctx_t ctx,

/* The complex element types of the reductions.  std::complex<T> has the
 * layout of C's T _Complex, so both languages reach the same symbols. */
#ifdef __cplusplus
#define TSU_SHMEM_COMPLEXF std::complex<float>
#define TSU_SHMEM_COMPLEXD std::complex<double>
#else
#define TSU_SHMEM_COMPLEXF float _Complex
#define TSU_SHMEM_COMPLEXD double _Complex
#endif

/* Standard RMA types (Table "Standard RMA Types and Names"). */
#define TSU_SHMEM_RMA_TYPES(X)                                                   \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)     \
  X(signed char, schar) X(short, short) X(int, int) X(long, long)                \
  X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)       \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
  X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)          \
  X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)  \
  X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Sized RMA: X(BITS, BYTES). */
#define TSU_SHMEM_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* Standard AMO types. */
#define TSU_SHMEM_AMO_STD_TYPES(X)                                           \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)     \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32) \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)  \
  X(ptrdiff_t, ptrdiff)
/* Extended AMO types (fetch, set, swap only). */
#define TSU_SHMEM_AMO_EXT_TYPES(X) X(float, float) X(double, double)
/* Bitwise AMO types. */
#define TSU_SHMEM_AMO_BIT_TYPES(X)                                               \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
/* The deprecated (1.3) atomic names: integer and floating-point ones. */
#define TSU_SHMEM_AMO_OLD_INT_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define TSU_SHMEM_AMO_OLD_FP_TYPES(X) X(float, float) X(double, double)

/* Point-to-point synchronization types. */
#define TSU_SHMEM_SYNC_TYPES(X)                                           \
  X(short, short) X(int, int) X(long, long) X(long long, longlong)        \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
  X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)    \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Reduction types: bitwise (and, or, xor), ordered (max, min), arithmetic
 * (sum, prod: the ordered ones and complex). */
#define TSU_SHMEM_REDUCE_BIT_TYPES(X)                                      \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)  \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8) \
  X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)  \
  X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define TSU_SHMEM_REDUCE_ORD_TYPES(X)                                           \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long) \
  X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)          \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)       \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)            \
  X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)     \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float)       \
  X(double, double) X(long double, longdouble)
#define TSU_SHMEM_REDUCE_CPLX_TYPES(X) \
  X(TSU_SHMEM_COMPLEXF, complexf) X(TSU_SHMEM_COMPLEXD, complexd)

/* Deprecated active-set reductions (shmem_TYPENAME_OP_to_all). */
#define TSU_SHMEM_TOALL_INT_TYPES(X) \
  X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define TSU_SHMEM_TOALL_FP_TYPES(X) \
  X(float, float) X(double, double) X(long double, longdouble)

#endif /* TSUNAGI_SHMEM_TYPES_H */
