/* Part of <shmem.h>; do not include directly.
 *
 * Point-to-point synchronization on the sync types:
 *   shmem_TYPENAME_{wait_until,wait_until_all,wait_until_any,wait_until_some,
 *     wait_until_all_vector,wait_until_any_vector,wait_until_some_vector,
 *     test,test_all,test_any,test_some,test_all_vector,test_any_vector,
 *     test_some_vector}
 *   deprecated: shmem_TYPENAME_wait, shmem_wait, shmem_wait_until (long)
 *
 * status (may be NULL): elements whose status is non-zero are left out.
 * _any returns the index of one element that satisfies the comparison, or
 * SIZE_MAX when every element is left out (or nelems is 0); _some stores the
 * indices of all satisfying elements in `indices` and returns how many. */
#ifndef TSUNAGI_SHMEM_P2P_H
#define TSUNAGI_SHMEM_P2P_H

#define TSU_SHMEM_DECL_SYNC(T, N)                                                         \
  TSU_SHMEM_EXT SHMEM_API void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);     \
  TSU_SHMEM_EXT SHMEM_API void shmem_##N##_wait_until_all(T *ivars, size_t nelems,        \
                                                          const int *status, int cmp,     \
                                                          T cmp_value);                   \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems,      \
                                                            const int *status, int cmp,   \
                                                            T cmp_value);                 \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_wait_until_some(                             \
      T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value); \
  TSU_SHMEM_EXT SHMEM_API void shmem_##N##_wait_until_all_vector(                         \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);                \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_wait_until_any_vector(                       \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);                \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_wait_until_some_vector(                      \
      T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,               \
      T *cmp_values);                                                                     \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_test(T *ivar, int cmp, T cmp_value);            \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_test_all(T *ivars, size_t nelems,               \
                                                   const int *status, int cmp,            \
                                                   T cmp_value);                          \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_test_any(T *ivars, size_t nelems,            \
                                                      const int *status, int cmp,         \
                                                      T cmp_value);                       \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_test_some(                                   \
      T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value); \
  TSU_SHMEM_EXT SHMEM_API int shmem_##N##_test_all_vector(                                \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);                \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_test_any_vector(                             \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);                \
  TSU_SHMEM_EXT SHMEM_API size_t shmem_##N##_test_some_vector(                            \
      T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,               \
      T *cmp_values);                                                                     \
  /* Deprecated since 1.4: waits while *ivar == cmp_value. */                             \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED void shmem_##N##_wait(T *ivar, T cmp_value);
TSU_SHMEM_SYNC_TYPES(TSU_SHMEM_DECL_SYNC)
#undef TSU_SHMEM_DECL_SYNC

/* The 1.2 untyped forms on long.  Not marked deprecated: in C11 and C++ the
 * same names are also the type-generic ones. */
SHMEM_API void shmem_wait_until(long *ivar, int cmp, long cmp_value);
SHMEM_API void shmem_wait(long *ivar, long cmp_value);

#endif /* TSUNAGI_SHMEM_P2P_H */
