/* What the OpenSHMEM test programs share: CHECK() ends the job with a message
 * on a mismatch, and the type lists of the OpenSHMEM 1.5 tables as X-macros,
 * X(TYPE, TYPENAME). */
#ifndef TSU_SHMEM_TEST_H
#define TSU_SHMEM_TEST_H

#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check names the PE, the place and the values, then ends the whole
 * job with status 1 (the others may be waiting on this PE). */
#define CHECK(cond, ...)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), __FILE__,  \
              __LINE__, #cond);                                                      \
      fprintf(stderr, __VA_ARGS__);                                                  \
      fputc('\n', stderr);                                                           \
      fflush(stderr);                                                                \
      shmem_global_exit(1);                                                          \
    }                                                                                \
  } while (0)

/* PE 0 says the program ran to the end. */
#define TEST_DONE(name)                                                  \
  do {                                                                   \
    if (shmem_my_pe() == 0) printf("%s: ok on %d PEs\n", name, shmem_n_pes()); \
  } while (0)

/* Table "Standard RMA Types and Names". */
#define RMA_TYPES(X)                                                              \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)      \
  X(signed char, schar) X(short, short) X(int, int) X(long, long)                 \
  X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)        \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)  \
  X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)           \
  X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)   \
  X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Tables of the atomic memory operations: standard, extended, bitwise. */
#define AMO_STD_TYPES(X)                                                       \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)       \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)   \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)    \
  X(ptrdiff_t, ptrdiff)
#define AMO_EXT_ONLY_TYPES(X) X(float, float) X(double, double)
#define AMO_BIT_TYPES(X)                                                      \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

/* Table "Point-to-point synchronization types". */
#define SYNC_TYPES(X)                                                          \
  X(short, short) X(int, int) X(long, long) X(long long, longlong)             \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)      \
  X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)         \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

#endif
