/* Part of <shmem.h>; do not include directly.
 *
 * RMA and put-with-signal, typed, sized and untyped, each with its
 * shmem_ctx_ form.  Names generated here, per TYPENAME of
 * TSU_SHMEM_RMA_TYPES:
 *   shmem_[ctx_]TYPENAME_{put,get,p,g,iput,iget,put_nbi,get_nbi,
 *                         put_signal,put_signal_nbi}
 *   shmem_[ctx_]{put,get,iput,iget,put_nbi,get_nbi}{8,16,32,64,128}
 *   shmem_[ctx_]put{8,16,32,64,128}_signal[_nbi]
 *   shmem_[ctx_]{putmem,getmem,putmem_nbi,getmem_nbi,putmem_signal[_nbi]} */
#ifndef TSUNAGI_SHMEM_RMA_H
#define TSUNAGI_SHMEM_RMA_H

/* One family for a TYPE: B is the name's stem (shmem_int, shmem_ctx_int), C
 * the leading context parameter (TSU_SHMEM_NOARG or TSU_SHMEM_CTXARG).
 * TYPENAME is pasted at the first expansion so that a program's own macro of
 * that name (uint, say) cannot reach it. */
#define TSU_SHMEM_DECL_RMA_P(B, C, T)                                                \
  TSU_SHMEM_EXT SHMEM_API void B##_put(C() T *dest, const T *source, size_t nelems,  \
                                       int pe);                                      \
  TSU_SHMEM_EXT SHMEM_API void B##_get(C() T *dest, const T *source, size_t nelems,  \
                                       int pe);                                      \
  TSU_SHMEM_EXT SHMEM_API void B##_p(C() T *dest, T value, int pe);                  \
  TSU_SHMEM_EXT SHMEM_API T B##_g(C() const T *source, int pe);                      \
  TSU_SHMEM_EXT SHMEM_API void B##_iput(C() T *dest, const T *source, ptrdiff_t dst, \
                                        ptrdiff_t sst, size_t nelems, int pe);       \
  TSU_SHMEM_EXT SHMEM_API void B##_iget(C() T *dest, const T *source, ptrdiff_t dst, \
                                        ptrdiff_t sst, size_t nelems, int pe);       \
  TSU_SHMEM_EXT SHMEM_API void B##_put_nbi(C() T *dest, const T *source,             \
                                           size_t nelems, int pe);                   \
  TSU_SHMEM_EXT SHMEM_API void B##_get_nbi(C() T *dest, const T *source,             \
                                           size_t nelems, int pe);                   \
  TSU_SHMEM_EXT SHMEM_API void B##_put_signal(C() T *dest, const T *source,          \
                                              size_t nelems, uint64_t *sig_addr,     \
                                              uint64_t signal, int sig_op, int pe);  \
  TSU_SHMEM_EXT SHMEM_API void B##_put_signal_nbi(C() T *dest, const T *source,      \
                                                  size_t nelems, uint64_t *sig_addr, \
                                                  uint64_t signal, int sig_op, int pe);
#define TSU_SHMEM_DECL_RMA(T, N)                      \
  TSU_SHMEM_DECL_RMA_P(shmem_##N, TSU_SHMEM_NOARG, T) \
  TSU_SHMEM_DECL_RMA_P(shmem_ctx_##N, TSU_SHMEM_CTXARG, T)
TSU_SHMEM_RMA_TYPES(TSU_SHMEM_DECL_RMA)

/* Sized forms: elements of BITS bits, untyped pointers. */
#define TSU_SHMEM_DECL_SIZED_P(P, C, BITS)                                                \
  SHMEM_API void P##put##BITS(C() void *dest, const void *source, size_t nelems, int pe); \
  SHMEM_API void P##get##BITS(C() void *dest, const void *source, size_t nelems, int pe); \
  SHMEM_API void P##iput##BITS(C() void *dest, const void *source, ptrdiff_t dst,         \
                               ptrdiff_t sst, size_t nelems, int pe);                     \
  SHMEM_API void P##iget##BITS(C() void *dest, const void *source, ptrdiff_t dst,         \
                               ptrdiff_t sst, size_t nelems, int pe);                     \
  SHMEM_API void P##put##BITS##_nbi(C() void *dest, const void *source, size_t nelems,    \
                                    int pe);                                              \
  SHMEM_API void P##get##BITS##_nbi(C() void *dest, const void *source, size_t nelems,    \
                                    int pe);                                              \
  SHMEM_API void P##put##BITS##_signal(C() void *dest, const void *source, size_t nelems, \
                                       uint64_t *sig_addr, uint64_t signal, int sig_op,   \
                                       int pe);                                           \
  SHMEM_API void P##put##BITS##_signal_nbi(C() void *dest, const void *source,            \
                                           size_t nelems, uint64_t *sig_addr,             \
                                           uint64_t signal, int sig_op, int pe);
#define TSU_SHMEM_DECL_SIZED(BITS, BYTES)               \
  TSU_SHMEM_DECL_SIZED_P(shmem_, TSU_SHMEM_NOARG, BITS) \
  TSU_SHMEM_DECL_SIZED_P(shmem_ctx_, TSU_SHMEM_CTXARG, BITS)
TSU_SHMEM_SIZES(TSU_SHMEM_DECL_SIZED)

/* Byte-granular forms. */
#define TSU_SHMEM_DECL_MEM_P(P, C)                                                         \
  SHMEM_API void P##putmem(C() void *dest, const void *source, size_t nelems, int pe);     \
  SHMEM_API void P##getmem(C() void *dest, const void *source, size_t nelems, int pe);     \
  SHMEM_API void P##putmem_nbi(C() void *dest, const void *source, size_t nelems, int pe); \
  SHMEM_API void P##getmem_nbi(C() void *dest, const void *source, size_t nelems, int pe); \
  SHMEM_API void P##putmem_signal(C() void *dest, const void *source, size_t nelems,       \
                                  uint64_t *sig_addr, uint64_t signal, int sig_op,         \
                                  int pe);                                                 \
  SHMEM_API void P##putmem_signal_nbi(C() void *dest, const void *source, size_t nelems,   \
                                      uint64_t *sig_addr, uint64_t signal, int sig_op,     \
                                      int pe);
TSU_SHMEM_DECL_MEM_P(shmem_, TSU_SHMEM_NOARG)
TSU_SHMEM_DECL_MEM_P(shmem_ctx_, TSU_SHMEM_CTXARG)

#undef TSU_SHMEM_DECL_RMA_P
#undef TSU_SHMEM_DECL_RMA
#undef TSU_SHMEM_DECL_SIZED_P
#undef TSU_SHMEM_DECL_SIZED
#undef TSU_SHMEM_DECL_MEM_P

#endif /* TSUNAGI_SHMEM_RMA_H */
