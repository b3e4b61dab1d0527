/* OpenSHMEM 1.5 on tsunagi (libtsunagi-shmem).  docs/shmem.md says what is
 * supported, how it maps onto tsunagi, and the thread levels.
 *
 * This header is C11 and C++: C gets the type-generic names through _Generic,
 * C++ through overloads.  Symmetric data objects are the symmetric heap
 * (shmem_malloc and friends, SHMEM_SYMMETRIC_SIZE bytes) and the program's
 * global and static variables. */
#ifndef TSUNAGI_SHMEM_H
#define TSUNAGI_SHMEM_H

#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <complex.h>
#endif

#if defined(__GNUC__)
#define SHMEM_API __attribute__((visibility("default")))
#define SHMEM_DEPRECATED __attribute__((deprecated))
#define SHMEM_NORETURN __attribute__((noreturn))
#else
#define SHMEM_API
#define SHMEM_DEPRECATED
#define SHMEM_NORETURN
#endif

#ifdef __cplusplus
#include <complex>
extern "C" {
#endif

/* ---- Library constants ------------------------------------------------- */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "tsunagi-shmem"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* pSync arrays of the active-set collectives: every element set to
 * SHMEM_SYNC_VALUE before first use; the library leaves them so. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 4
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- Handles ------------------------------------------------------------ */
typedef struct tsu_shmem_ctx *shmem_ctx_t;
typedef struct tsu_shmem_team *shmem_team_t;

/** The context every thread shares (thread-safe under SHMEM_THREAD_MULTIPLE). */
extern SHMEM_API shmem_ctx_t const SHMEM_CTX_DEFAULT;
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

extern SHMEM_API shmem_team_t SHMEM_TEAM_WORLD;
extern SHMEM_API shmem_team_t SHMEM_TEAM_SHARED;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

typedef struct {
  int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* ---- Library setup, exit and query -------------------------------------- */
SHMEM_API void shmem_init(void);
SHMEM_API int shmem_init_thread(int requested, int *provided);
SHMEM_API void shmem_query_thread(int *provided);
SHMEM_API void shmem_finalize(void);
SHMEM_API SHMEM_NORETURN void shmem_global_exit(int status);
SHMEM_API int shmem_my_pe(void);
SHMEM_API int shmem_n_pes(void);
SHMEM_API int shmem_pe_accessible(int pe);
SHMEM_API int shmem_addr_accessible(const void *addr, int pe);
SHMEM_API void *shmem_ptr(const void *dest, int pe);
SHMEM_API void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
SHMEM_API void shmem_info_get_version(int *major, int *minor);
SHMEM_API void shmem_info_get_name(char *name);
SHMEM_API void shmem_pcontrol(const int level, ...);

/* 1.0-1.3 names still in use */
SHMEM_API SHMEM_DEPRECATED void start_pes(int npes);
SHMEM_API int _my_pe(void);
SHMEM_API int _num_pes(void);
SHMEM_API int my_pe(void);
SHMEM_API int num_pes(void);
/* Cache management (deprecated since 1.3; no-ops: the memory is coherent) */
SHMEM_API SHMEM_DEPRECATED void shmem_set_cache_inv(void);
SHMEM_API SHMEM_DEPRECATED void shmem_set_cache_line_inv(void *dest);
SHMEM_API SHMEM_DEPRECATED void shmem_clear_cache_inv(void);
SHMEM_API SHMEM_DEPRECATED void shmem_clear_cache_line_inv(void *dest);
SHMEM_API SHMEM_DEPRECATED void shmem_udcflush(void);
SHMEM_API SHMEM_DEPRECATED void shmem_udcflush_line(void *dest);

/* ---- Memory management -------------------------------------------------- */
SHMEM_API void *shmem_malloc(size_t size);
SHMEM_API void *shmem_malloc_with_hints(size_t size, long hints);
SHMEM_API void *shmem_calloc(size_t count, size_t size);
SHMEM_API void *shmem_align(size_t alignment, size_t size);
SHMEM_API void *shmem_realloc(void *ptr, size_t size);
SHMEM_API void shmem_free(void *ptr);
SHMEM_API SHMEM_DEPRECATED void *shmalloc(size_t size);
SHMEM_API SHMEM_DEPRECATED void *shmemalign(size_t alignment, size_t size);
SHMEM_API SHMEM_DEPRECATED void *shrealloc(void *ptr, size_t size);
SHMEM_API SHMEM_DEPRECATED void shfree(void *ptr);

/* ---- Teams -------------------------------------------------------------- */
SHMEM_API int shmem_team_my_pe(shmem_team_t team);
SHMEM_API int shmem_team_n_pes(shmem_team_t team);
SHMEM_API int shmem_team_get_config(shmem_team_t team, long config_mask,
                                    shmem_team_config_t *config);
SHMEM_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
SHMEM_API int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                                       const shmem_team_config_t *config, long config_mask,
                                       shmem_team_t *new_team);
SHMEM_API int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                                  const shmem_team_config_t *xaxis_config, long xaxis_mask,
                                  shmem_team_t *xaxis_team,
                                  const shmem_team_config_t *yaxis_config, long yaxis_mask,
                                  shmem_team_t *yaxis_team);
SHMEM_API void shmem_team_destroy(shmem_team_t team);

/* ---- Contexts ----------------------------------------------------------- */
SHMEM_API int shmem_ctx_create(long options, shmem_ctx_t *ctx);
SHMEM_API int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
SHMEM_API void shmem_ctx_destroy(shmem_ctx_t ctx);
SHMEM_API int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ---- Memory ordering ---------------------------------------------------- */
SHMEM_API void shmem_fence(void);
SHMEM_API void shmem_ctx_fence(shmem_ctx_t ctx);
SHMEM_API void shmem_quiet(void);
SHMEM_API void shmem_ctx_quiet(shmem_ctx_t ctx);

/* ---- Distributed locks -------------------------------------------------- */
SHMEM_API void shmem_set_lock(long *lock);
SHMEM_API void shmem_clear_lock(long *lock);
SHMEM_API int shmem_test_lock(long *lock);

/* ---- Signals ------------------------------------------------------------ */
SHMEM_API uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
SHMEM_API uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ---- Typed families (RMA, atomics, collectives, point-to-point sync) ---- */
#include <shmem/shmem_types.h>
#include <shmem/shmem_rma.h>
#include <shmem/shmem_amo.h>
#include <shmem/shmem_p2p.h>
#include <shmem/shmem_coll.h>
/* The type-generic names: C11 _Generic and C++ overloads. */
#include <shmem/shmem_generic.h>

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSUNAGI_SHMEM_H */
