/* Part of <shmem.h>; do not include directly.
 *
 * Atomic memory operations, each with its shmem_ctx_ form.  Names generated
 * here:
 *   standard types: shmem_[ctx_]TYPENAME_atomic_{fetch,set,compare_swap,swap,
 *     fetch_inc,inc,fetch_add,add} and _nbi of the fetching ones
 *   extended types (float, double): atomic_{fetch,set,swap}, fetch_nbi, swap_nbi
 *   bitwise types: atomic_{fetch_and,and,fetch_or,or,fetch_xor,xor},
 *     fetch_{and,or,xor}_nbi
 *   deprecated: shmem_TYPENAME_{fadd,finc,add,inc,cswap,swap,fetch,set},
 *     shmem_swap (long) */
#ifndef TSUNAGI_SHMEM_AMO_H
#define TSUNAGI_SHMEM_AMO_H

/* B is the name's stem (shmem_int, shmem_ctx_int), C the context parameter. */
#define TSU_SHMEM_DECL_AMO_EXT_P(B, C, T)                                          \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_fetch(C() const T *source, int pe);         \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_set(C() T *dest, T value, int pe);       \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_swap(C() T *dest, T value, int pe);         \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_fetch_nbi(C() T *fetch, const T *source, \
                                                    int pe);                       \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_swap_nbi(C() T *fetch, T *dest, T value, int pe);
#define TSU_SHMEM_DECL_AMO_STD_P(B, C, T)                                               \
  TSU_SHMEM_DECL_AMO_EXT_P(B, C, T)                                                     \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_compare_swap(C() T *dest, T cond, T value,       \
                                                    int pe);                            \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_fetch_inc(C() T *dest, int pe);                  \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_inc(C() T *dest, int pe);                     \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_fetch_add(C() T *dest, T value, int pe);         \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_add(C() T *dest, T value, int pe);            \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_compare_swap_nbi(C() T *fetch, T *dest,       \
                                                           T cond, T value, int pe);    \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_fetch_inc_nbi(C() T *fetch, T *dest, int pe); \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_fetch_add_nbi(C() T *fetch, T *dest, T value, \
                                                        int pe);
#define TSU_SHMEM_DECL_AMO_BIT_P(B, C, T)                                               \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_fetch_and(C() T *dest, T value, int pe);         \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_and(C() T *dest, T value, int pe);            \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_fetch_or(C() T *dest, T value, int pe);          \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_or(C() T *dest, T value, int pe);             \
  TSU_SHMEM_EXT SHMEM_API T B##_atomic_fetch_xor(C() T *dest, T value, int pe);         \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_xor(C() T *dest, T value, int pe);            \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_fetch_and_nbi(C() T *fetch, T *dest, T value, \
                                                        int pe);                        \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_fetch_or_nbi(C() T *fetch, T *dest, T value,  \
                                                       int pe);                         \
  TSU_SHMEM_EXT SHMEM_API void B##_atomic_fetch_xor_nbi(C() T *fetch, T *dest, T value, \
                                                        int pe);

#define TSU_SHMEM_DECL_AMO_STD(T, N)                      \
  TSU_SHMEM_DECL_AMO_STD_P(shmem_##N, TSU_SHMEM_NOARG, T) \
  TSU_SHMEM_DECL_AMO_STD_P(shmem_ctx_##N, TSU_SHMEM_CTXARG, T)
#define TSU_SHMEM_DECL_AMO_EXT(T, N)                      \
  TSU_SHMEM_DECL_AMO_EXT_P(shmem_##N, TSU_SHMEM_NOARG, T) \
  TSU_SHMEM_DECL_AMO_EXT_P(shmem_ctx_##N, TSU_SHMEM_CTXARG, T)
#define TSU_SHMEM_DECL_AMO_BIT(T, N)                      \
  TSU_SHMEM_DECL_AMO_BIT_P(shmem_##N, TSU_SHMEM_NOARG, T) \
  TSU_SHMEM_DECL_AMO_BIT_P(shmem_ctx_##N, TSU_SHMEM_CTXARG, T)
TSU_SHMEM_AMO_STD_TYPES(TSU_SHMEM_DECL_AMO_STD)
TSU_SHMEM_AMO_EXT_TYPES(TSU_SHMEM_DECL_AMO_EXT)
TSU_SHMEM_AMO_BIT_TYPES(TSU_SHMEM_DECL_AMO_BIT)

/* Deprecated since 1.4 (the 1.3 names). */
#define TSU_SHMEM_DECL_AMO_OLD_FP(T, N)                                                    \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED T shmem_##N##_fetch(const T *source, int pe);   \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED void shmem_##N##_set(T *dest, T value, int pe); \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED T shmem_##N##_swap(T *dest, T value, int pe);
#define TSU_SHMEM_DECL_AMO_OLD_INT(T, N)                                                 \
  TSU_SHMEM_DECL_AMO_OLD_FP(T, N)                                                        \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED T shmem_##N##_cswap(T *dest, T cond, T value, \
                                                               int pe);                  \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED T shmem_##N##_finc(T *dest, int pe);          \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED void shmem_##N##_inc(T *dest, int pe);        \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED T shmem_##N##_fadd(T *dest, T value, int pe); \
  TSU_SHMEM_EXT SHMEM_API SHMEM_DEPRECATED void shmem_##N##_add(T *dest, T value, int pe);
TSU_SHMEM_AMO_OLD_INT_TYPES(TSU_SHMEM_DECL_AMO_OLD_INT)
TSU_SHMEM_AMO_OLD_FP_TYPES(TSU_SHMEM_DECL_AMO_OLD_FP)
/* The 1.2 untyped swap on long.  Not marked deprecated: in C11 and C++ the
 * same name is also the (deprecated, still common) type-generic swap. */
SHMEM_API long shmem_swap(long *dest, long value, int pe);

#undef TSU_SHMEM_DECL_AMO_EXT_P
#undef TSU_SHMEM_DECL_AMO_STD_P
#undef TSU_SHMEM_DECL_AMO_BIT_P
#undef TSU_SHMEM_DECL_AMO_STD
#undef TSU_SHMEM_DECL_AMO_EXT
#undef TSU_SHMEM_DECL_AMO_BIT
#undef TSU_SHMEM_DECL_AMO_OLD_FP
#undef TSU_SHMEM_DECL_AMO_OLD_INT

#endif /* TSUNAGI_SHMEM_AMO_H */
