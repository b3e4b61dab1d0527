/** @file tsunagi.h
 * tsunagi — a low-level communication layer for PGAS runtimes, task schedulers
 * and RPC runtimes.  This is the whole public C API (C11, stable ABI).
 *
 * Contract (see docs/api.md for the long form):
 *  - Every function is thread-safe unless its comment says otherwise.
 *  - tsu_try_* calls never block.  They return
 *      TSU_OK      the request was accepted; its callback will be called exactly
 *                  once with the final status (possibly before tsu_try_* returns:
 *                  intra-node requests that bypass the progress engine complete
 *                  inline, in the caller's thread),
 *      TSU_EAGAIN  a bounded internal queue is full or a fence is pending; nothing
 *                  was done and the callback will not be called: retry later,
 *      < 0         the arguments were rejected; nothing was done, the callback will
 *                  not be called, and tsu_last_error() describes why.
 *  - A request that reaches its target and fails there (out of bounds, freed
 *    segment) completes with an error status passed to its callback.  Its
 *    whole range is checked where it is applied before any byte moves, so a
 *    failed put, get or copy has written nothing, on every route (the rank
 *    itself, node peers, other nodes) and at every size.  A range in the
 *    caller's own memory is checked at the call instead.
 *  - Manual progress (TSU_PROGRESS_MANUAL): the blocking calls tsu_barrier,
 *    tsu_counter_wait, tsu_quiet, tsu_am_register, tsu_team_split and
 *    tsu_finalize drive progress while they wait, so requests aimed at a rank
 *    blocked in them (RMA and atomics from other nodes, AM requests, tagged
 *    rendezvous) are served, whichever route they come by.
 *  - Requests are unordered unless tsu_fence() is used.
 *  - Addresses are structs: a global address names {rank, segment, offset}; a local
 *    address names {segment, offset} in the caller's own registered memory.
 *  - Nothing here aborts the process or throws.
 */
#ifndef TSUNAGI_TSUNAGI_H
#define TSUNAGI_TSUNAGI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TSU_API __attribute__((visibility("default")))
#else
#define TSU_API
#endif

#define TSU_VERSION_MAJOR 0
#define TSU_VERSION_MINOR 1
#define TSU_VERSION_PATCH 0

/* ------------------------------------------------------------------------- */
/* Status codes.  0 = accepted/done, positive = retry, negative = error.       */
/* ------------------------------------------------------------------------- */
typedef int32_t tsu_status_t;

enum {
  TSU_OK = 0,                       /**< accepted, or completed successfully       */
  TSU_EAGAIN = 1,                   /**< queue full / fence pending: retry later   */
  TSU_ERR_INVALID_ARG = -1,         /**< an argument is malformed (bad enum, size) */
  TSU_ERR_NULL_POINTER = -2,        /**< a required pointer is NULL                */
  TSU_ERR_NOT_INITIALIZED = -3,     /**< called before tsu_init / after finalize   */
  TSU_ERR_ALREADY_INITIALIZED = -4, /**< tsu_init called twice                     */
  TSU_ERR_BAD_RANK = -5,            /**< rank >= size                              */
  TSU_ERR_BAD_SEGMENT = -6,         /**< segment id unknown, freed or not yours    */
  TSU_ERR_OUT_OF_BOUNDS = -7,       /**< offset + length exceeds the segment       */
  TSU_ERR_MISALIGNED = -8,          /**< atomic target not aligned to its size     */
  TSU_ERR_UNSUPPORTED = -9,         /**< valid, but not supported for this target  */
  TSU_ERR_UNREACHABLE = -10,        /**< no transport reaches that rank            */
  TSU_ERR_NO_MEMORY = -11,          /**< allocation or mapping failed              */
  TSU_ERR_SYSTEM = -12,             /**< an operating-system call failed           */
  TSU_ERR_BOOTSTRAP = -13,          /**< the launcher's bootstrap service failed   */
  TSU_ERR_CONFIG = -14,             /**< a configuration value is invalid          */
  TSU_ERR_PEER_LOST = -15,          /**< the target rank is gone                   */
  TSU_ERR_TRUNCATED = -16,          /**< a message was longer than its buffer      */
  TSU_ERR_CANCELED = -17,           /**< the request was canceled                  */
  TSU_ERR_LIMIT = -18,              /**< a fixed limit was reached (e.g. segments) */
  TSU_ERR_DEPENDENCY = -19          /**< a request this one followed failed         */
};

/** A fixed, human-readable name for a status code.
 * @return a static string ("unknown status" for a code that has none); never NULL. */
TSU_API const char *tsu_strerror(tsu_status_t status);

/** The detailed message of the last error returned to the calling thread, e.g.
 * "tsu_try_put: offset 4096 + length 16 exceeds segment 0 of rank 1 (4096 B)".
 * @return the message, or an empty string when none; valid until the thread's
 *         next failing call.  Never NULL. */
TSU_API const char *tsu_last_error(void);

/** The library's version.
 * @return "MAJOR.MINOR.PATCH" (a static string). */
TSU_API const char *tsu_version(void);

/* ------------------------------------------------------------------------- */
/* Initialisation and configuration                                          */
/* ------------------------------------------------------------------------- */
typedef enum {
  TSU_PROGRESS_THREAD = 0, /**< a dedicated progress thread per process (default) */
  TSU_PROGRESS_MANUAL = 1  /**< the user calls tsu_progress(); no extra thread     */
} tsu_progress_mode_t;

/** Bits of tsu_config_t.field_mask: a field is used only when its bit is set. */
enum {
  TSU_CONFIG_SEGMENT_SIZE = 1u << 0,
  TSU_CONFIG_RING_SIZE = 1u << 1,
  TSU_CONFIG_PROGRESS_MODE = 1u << 2,
  TSU_CONFIG_BYPASS = 1u << 3,
  TSU_CONFIG_SPIN_US = 1u << 4,
  TSU_CONFIG_LOG_LEVEL = 1u << 5,
  TSU_CONFIG_STATS = 1u << 6
};

/** Log levels for TSU_LOG / log_level. */
typedef enum {
  TSU_LOG_OFF = 0,
  TSU_LOG_ERROR = 1,
  TSU_LOG_WARN = 2,
  TSU_LOG_INFO = 3,
  TSU_LOG_DEBUG = 4,
  TSU_LOG_TRACE = 5
} tsu_log_level_t;

/** Optional configuration.  Values come from the built-in defaults, then the
 * environment (TSU_SEGMENT_SIZE, TSU_RING_SIZE, TSU_PROGRESS, TSU_BYPASS,
 * TSU_SPIN_US, TSU_LOG, TSU_STATS; `tsu-info` lists them all), then the fields of
 * this struct whose bit is set in field_mask.  Set struct_size to
 * sizeof(tsu_config_t) so the struct can grow without breaking binaries. */
typedef struct tsu_config {
  size_t struct_size;
  uint64_t field_mask;
  size_t segment_size;       /**< bytes of the main segment                   */
  uint32_t ring_size;        /**< slots in the command ring (power of two)    */
  int32_t progress_mode;     /**< tsu_progress_mode_t                         */
  int32_t bypass;            /**< 1: intra-node RMA/atomics run in the caller */
  uint32_t spin_us;          /**< idle progress thread spins this long, then sleeps */
  int32_t log_level;         /**< tsu_log_level_t                             */
  int32_t stats;             /**< 1: print per-rank counters at finalize      */
} tsu_config_t;

/** Starts tsunagi in this process.  Collective: every rank of the job calls it
 * once.  Started by `tsurun` the ranks rendezvous through its bootstrap
 * service; started without it, the process is a job of one rank.
 * @param config optional settings (NULL: defaults and the environment).
 * @retval TSU_OK                      initialized.
 * @retval TSU_ERR_ALREADY_INITIALIZED tsunagi is already initialized.
 * @retval TSU_ERR_UNSUPPORTED         a rank started by a launcher called it again after
 *                                     tsu_finalize (only a job of one rank can restart).
 * @retval TSU_ERR_CONFIG              a TSU_* variable or a field of `config` is invalid
 *                                     (tsu_last_error names it), or TSU_NET names no
 *                                     transport of this build.
 * @retval TSU_ERR_BOOTSTRAP           the launcher's bootstrap service failed or refused
 *                                     this rank.
 * @retval TSU_ERR_NO_MEMORY           the main segment could not be created or mapped.
 * @retval TSU_ERR_LIMIT               out of file descriptors (RLIMIT_NOFILE).
 * @retval TSU_ERR_SYSTEM              another system call failed (eventfd, epoll, socket,
 *                                     thread creation).  */
TSU_API tsu_status_t tsu_init(const tsu_config_t *config);

/** Stops tsunagi.  Collective.  Completes every request still in flight (their
 * callbacks run), waits for all ranks, unmaps all segments and stops the
 * progress thread.  Must not run concurrently with other tsunagi calls of the
 * same process.
 * @retval TSU_OK               finalized.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_UNSUPPORTED  called from a completion callback or a handler.
 * @retval TSU_ERR_BOOTSTRAP    the final barrier or the bootstrap's goodbye failed;
 *                              this process is finalized all the same. */
TSU_API tsu_status_t tsu_finalize(void);

/** Whether tsunagi is initialized.
 * @return 1 between a successful tsu_init and tsu_finalize, else 0. */
TSU_API int tsu_initialized(void);

/** This process's rank in the job (0 .. size - 1).
 * @retval TSU_OK               *rank written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER rank is NULL. */
TSU_API tsu_status_t tsu_rank(uint32_t *rank);
/** The number of ranks in the job.
 * @retval TSU_OK               *size written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER size is NULL. */
TSU_API tsu_status_t tsu_size(uint32_t *size);
/** Node index of a rank (ranks sharing memory share a node).
 * @retval TSU_OK               *node written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER node is NULL.
 * @retval TSU_ERR_BAD_RANK     rank >= job size. */
TSU_API tsu_status_t tsu_node_of(uint32_t rank, uint32_t *node);
/** The number of nodes in the job.
 * @retval TSU_OK               *count written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER count is NULL. */
TSU_API tsu_status_t tsu_node_count(uint32_t *count);

/** Runs pending progress work (commands, completions, callbacks) in the calling
 * thread.  Required in TSU_PROGRESS_MANUAL mode; harmless in thread mode.
 * When it finds nothing to do and TSU_YIELD is on (auto: more threads on the
 * node than CPUs, see tsu_set_busy_threads), it also calls sched_yield, so a
 * polling loop on a shared CPU lets the peer it waits for run.
 * @retval TSU_OK               always once initialized (whether or not there was work).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize. */
TSU_API tsu_status_t tsu_progress(void);

/** Collective, blocking: returns when every rank has entered it.  In manual
 * progress it drives progress while it waits (requests aimed at this rank
 * from any route are served; while other pthreads make progress passes
 * meanwhile, a user-level thread scheduler's workers for instance, it
 * leaves the polling to them and checks again every 50 us).  On a pthread
 * with a wait hook (a user-level thread scheduler's worker,
 * tsu_set_wait_hook) a helper pthread waits in
 * the bootstrap barrier and the caller waits through the hook, so the
 * scheduler runs its other threads meanwhile.
 * @retval TSU_OK               every rank has entered the barrier.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_UNSUPPORTED  called from a completion callback or a handler.
 * @retval TSU_ERR_BOOTSTRAP    the bootstrap barrier failed (a rank or the launcher
 *                              is gone). */
TSU_API tsu_status_t tsu_barrier(void);

/* ------------------------------------------------------------------------- */
/* Memory: segments and addresses                                             */
/* ------------------------------------------------------------------------- */
typedef uint32_t tsu_seg_t;
#define TSU_SEG_MAIN ((tsu_seg_t)0) /**< every rank's main segment */

/** {rank, segment, offset}: memory anywhere in the job. */
typedef struct tsu_gaddr_s {
  uint32_t rank;
  tsu_seg_t seg;
  uint64_t offset;
} tsu_gaddr_t;

/** {segment, offset}: memory of the calling rank. */
typedef struct tsu_laddr_s {
  tsu_seg_t seg;
  uint32_t reserved; /**< must be 0 */
  uint64_t offset;
} tsu_laddr_t;

/** Builds a global address.
 * @return {rank, seg, offset}. */
static inline tsu_gaddr_t tsu_gaddr(uint32_t rank, tsu_seg_t seg, uint64_t offset) {
  tsu_gaddr_t g;
  g.rank = rank;
  g.seg = seg;
  g.offset = offset;
  return g;
}
/** Builds a local address (reserved set to 0).
 * @return {seg, offset}. */
static inline tsu_laddr_t tsu_laddr(tsu_seg_t seg, uint64_t offset) {
  tsu_laddr_t l;
  l.seg = seg;
  l.reserved = 0;
  l.offset = offset;
  return l;
}
/** Moves a global address by `delta` bytes.
 * @return g with offset + delta. */
static inline tsu_gaddr_t tsu_gaddr_add(tsu_gaddr_t g, uint64_t delta) {
  g.offset += delta;
  return g;
}

/** Segment ids.  A rank can have 15361 segments live at once (the main one
 * included; more gives TSU_ERR_LIMIT).  Ids of freed segments are reused, but
 * each id carries a generation (id = generation << 14 | index), so an id kept
 * after tsu_segment_free ("stale") keeps failing with TSU_ERR_BAD_SEGMENT on
 * every route and never reaches a later segment.  A freed index is reused
 * only behind at least 1023 others, so a stale id could alias a new segment
 * only after the 18-bit generation wrapped: at least 2^18 * 1024 =
 * 268,435,456 frees by the owning rank (about 4.3e9 when few are live).
 * Ids are opaque: compare them, do not compute with them. */

/** Allocates a new segment in shared memory: node peers reach it with plain
 * loads and stores, so every operation (including atomics) on it runs at
 * memory speed.  Zero-filled.  Local operation.  Each holds a file descriptor
 * while it lives.
 * @param size bytes (rounded up to whole pages).
 * @param seg  receives the segment id.
 * @param base receives its address in this process.
 * @retval TSU_OK               *seg and *base written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER seg or base is NULL.
 * @retval TSU_ERR_INVALID_ARG  size is 0.
 * @retval TSU_ERR_LIMIT        15361 segments are live, or out of file descriptors
 *                              (RLIMIT_NOFILE).
 * @retval TSU_ERR_NO_MEMORY    the shared memory could not be sized or mapped.
 * @retval TSU_ERR_SYSTEM       creating the shared-memory file failed otherwise. */
TSU_API tsu_status_t tsu_segment_alloc(size_t size, tsu_seg_t *seg, void **base);

/** Flags of tsu_segment_alloc_ex. */
#define TSU_SEG_NIC_ATOMICS 0x1u /**< atomics on the segment run in the network adapter */

/** Who executes the atomics aimed at a segment (tsu_segment_atomic_site). */
typedef enum {
  TSU_ATOMIC_SITE_CPU = 0, /**< the owner's CPU (the default for every segment) */
  TSU_ATOMIC_SITE_NIC = 1  /**< the network transport's adapter, for every issuer */
} tsu_atomic_site_t;

/** tsu_segment_alloc with flags.  flags 0 is tsu_segment_alloc.
 *
 * TSU_SEG_NIC_ATOMICS: every atomic on the segment, from every issuer (the
 * owner's own threads and its node peers included), is executed by the
 * network transport's adapter (libfabric atomics over TSU_NET=ofi), never by a
 * CPU, so one executor owns each word.  Puts, gets and copies keep their
 * usual routes.  Granted only where the job has a network transport (ranks on
 * other nodes) whose adapter accepts every (type, op) of tsu_try_atomic
 * (TSU_NET=ofi with native RMA and a provider offering FI_ATOMIC, e.g.
 * tcp;ofi_rxm); elsewhere (udp, a job on one node, TSU_OFI_RMA=0) refused
 * with TSU_ERR_UNSUPPORTED and the reason in tsu_last_error().  The call
 * then runs one NIC atomic on the new segment (a fetch-add of 0 at offset
 * 0, from the owner through its own adapter address) before returning: a
 * provider that refuses it (ENOSYS) leaves the segment with CPU atomics,
 * as tsu_segment_atomic_site says; later refusals fail the atomic with
 * TSU_ERR_UNSUPPORTED (switching sites then would break atomicity).  A NIC
 * segment's memory stays mapped and registered with the adapter until
 * tsu_finalize, also after tsu_segment_free (an issuer that cached its key
 * must never reach other memory).  The owner's plain loads and stores on
 * its memory are unchanged; atomics on its words must go through
 * tsu_try_atomic (a CPU atomic through a pointer would be a second executor).
 * Local operation, like tsu_segment_alloc.
 * @param size  bytes (rounded up to whole pages); at least 8 with TSU_SEG_NIC_ATOMICS.
 * @param flags 0 or TSU_SEG_NIC_ATOMICS.
 * @retval TSU_OK               *seg and *base written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER seg or base is NULL.
 * @retval TSU_ERR_INVALID_ARG  size is 0 (below 8 with TSU_SEG_NIC_ATOMICS), or an
 *                              unknown flag.
 * @retval TSU_ERR_UNSUPPORTED  TSU_SEG_NIC_ATOMICS, and the job's network transport
 *                              cannot execute every atomic in its adapter (or there
 *                              is none), or the call was made inside a completion
 *                              callback or the progress thread (it waits).
 * @retval TSU_ERR_LIMIT        as tsu_segment_alloc.
 * @retval TSU_ERR_NO_MEMORY    as tsu_segment_alloc.
 * @retval TSU_ERR_SYSTEM       as tsu_segment_alloc, or the adapter failed the first
 *                              NIC atomic otherwise than by refusing it. */
TSU_API tsu_status_t tsu_segment_alloc_ex(size_t size, unsigned flags, tsu_seg_t *seg,
                                          void **base);

/** Who executes atomics on one of the caller's segments.
 * @retval TSU_OK               *site written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER site is NULL.
 * @retval TSU_ERR_BAD_SEGMENT  seg is not a live segment of this rank. */
TSU_API tsu_status_t tsu_segment_atomic_site(tsu_seg_t seg, tsu_atomic_site_t *site);

/** Registers existing user memory as a segment.  Node peers reach it through
 * Cross Memory Attach (one copy, a system call each).  Atomics on it fail with
 * TSU_ERR_UNSUPPORTED on every route, the owner's own included (atomics need
 * a segment from tsu_segment_alloc or the main segment): node peers cannot
 * reach it with CPU atomics, and all atomics on a word must go one way.
 * Put, get and copy work.  The memory must stay valid until tsu_segment_free.
 * @retval TSU_OK               *seg written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER base or seg is NULL.
 * @retval TSU_ERR_INVALID_ARG  size is 0, or base + size wraps around.
 * @retval TSU_ERR_LIMIT        15361 segments are live. */
TSU_API tsu_status_t tsu_mem_register(void *base, size_t size, tsu_seg_t *seg);

/** Frees an allocated segment or deregisters registered memory.  Later requests
 * naming it fail with TSU_ERR_BAD_SEGMENT at the target, even after its id was
 * reused (see "Segment ids" above).  Requests racing with the free (issued
 * before it returned, not yet applied) are the caller's error, as with any
 * free.  The main segment cannot be freed.
 * @retval TSU_OK               freed.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  seg is TSU_SEG_MAIN.
 * @retval TSU_ERR_BAD_SEGMENT  seg is not a live segment of this rank (never allocated,
 *                              or freed already). */
TSU_API tsu_status_t tsu_segment_free(tsu_seg_t seg);

/** Base and size of one of the caller's segments.
 * @retval TSU_OK               *base and *size written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER base or size is NULL.
 * @retval TSU_ERR_BAD_SEGMENT  seg is not a live segment of this rank. */
TSU_API tsu_status_t tsu_segment_info(tsu_seg_t seg, void **base, size_t *size);

/** Pointer -> local address of the caller's memory (searches its segments).
 * @retval TSU_OK               *out written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER ptr or out is NULL.
 * @retval TSU_ERR_BAD_SEGMENT  ptr is in no segment of this rank. */
TSU_API tsu_status_t tsu_laddr_of(const void *ptr, tsu_laddr_t *out);
/** Pointer -> global address of the caller's memory (its own rank).
 * @retval TSU_OK               *out written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER ptr or out is NULL.
 * @retval TSU_ERR_BAD_SEGMENT  ptr is in no segment of this rank. */
TSU_API tsu_status_t tsu_gaddr_of(const void *ptr, tsu_gaddr_t *out);

/** Local address -> pointer usable for `len` bytes by the calling process.
 * @retval TSU_OK                *out written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER  out is NULL.
 * @retval TSU_ERR_BAD_SEGMENT   addr.seg is not a live segment of this rank.
 * @retval TSU_ERR_OUT_OF_BOUNDS offset + len exceeds the segment. */
TSU_API tsu_status_t tsu_laddr_ptr(tsu_laddr_t addr, size_t len, void **out);
/** Global address -> pointer usable for `len` bytes by the calling process: the
 * caller's own memory, or a node peer's shared segment (mapped in this
 * process).  A peer's registered memory or a rank on another node gives
 * TSU_ERR_UNREACHABLE.
 * @retval TSU_OK                *out written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER  out is NULL.
 * @retval TSU_ERR_BAD_RANK      addr.rank >= job size.
 * @retval TSU_ERR_UNREACHABLE   the rank is on another node, or the segment is a node
 *                               peer's registered memory.
 * @retval TSU_ERR_BAD_SEGMENT   the segment does not exist (or was freed).
 * @retval TSU_ERR_OUT_OF_BOUNDS offset + len exceeds the segment.
 * @retval TSU_ERR_LIMIT         mapping the peer's segment needs a file descriptor and
 *                               none is left.
 * @retval TSU_ERR_NO_MEMORY     no memory for this process's table of the peer's mappings.
 * @retval TSU_ERR_SYSTEM        opening or mapping the peer's segment failed. */
TSU_API tsu_status_t tsu_gaddr_ptr(tsu_gaddr_t addr, size_t len, void **out);

/* ------------------------------------------------------------------------- */
/* Completion                                                                 */
/* ------------------------------------------------------------------------- */
/** Called exactly once per accepted request, with its final status.  Runs in the
 * issuing thread (bypass), on the progress thread, or inside tsu_progress(). It
 * must not block; it may issue new requests. */
typedef void (*tsu_cb_fn_t)(tsu_status_t status, void *arg);

typedef struct tsu_cb_s {
  tsu_cb_fn_t fn; /**< NULL: no notification (use tsu_quiet) */
  void *arg;
} tsu_cb_t;

/** Builds a callback.
 * @return {fn, arg}. */
static inline tsu_cb_t tsu_cb(tsu_cb_fn_t fn, void *arg) {
  tsu_cb_t cb;
  cb.fn = fn;
  cb.arg = arg;
  return cb;
}
/** The callback that notifies nobody (wait with tsu_quiet).
 * @return {NULL, NULL}. */
static inline tsu_cb_t tsu_cb_none(void) { return tsu_cb((tsu_cb_fn_t)0, (void *)0); }

/** A completion counter: hand tsu_counter_cb(&c) to many requests, then wait for
 * N completions.  The first error status any of them completed with is kept. */
typedef struct tsu_counter {
  uint64_t completed;   /**< accessed atomically by the library */
  int32_t first_error;  /**< TSU_OK until a request fails       */
  uint32_t reserved;
} tsu_counter_t;

/** Sets a counter to zero completions and no error.  NULL is ignored. */
TSU_API void tsu_counter_init(tsu_counter_t *counter);
/** A callback that counts one completion on `counter` (and keeps the first
 * error status).  The counter must outlive every request given the callback.
 * @return the callback, to pass to tsu_try_* calls. */
TSU_API tsu_cb_t tsu_counter_cb(tsu_counter_t *counter);
/** Completions counted so far (acquire: the requests' effects are visible).
 * @return the count; 0 when counter is NULL. */
TSU_API uint64_t tsu_counter_value(const tsu_counter_t *counter);
/** Blocks (driving progress in manual mode) until `n` requests have completed.
 * Returns at once, without checking initialization, when the count is
 * already reached.  Inside a user-level thread whose pthread has a park hook
 * (tsu_set_park_hook) the caller is parked until a completion counted on
 * `counter` wakes it; the counter's address is its key, so the counter may be
 * freed as soon as the wait returns.
 * @retval TSU_OK               n completions, none failed.
 * @retval (an error)           n completions; the first error status any counted
 *                              request completed with (any code a callback can get).
 * @retval TSU_ERR_NULL_POINTER counter is NULL.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_UNSUPPORTED  it would block inside a completion callback or a
 *                              handler (progress context). */
TSU_API tsu_status_t tsu_counter_wait(tsu_counter_t *counter, uint64_t n);

/* ------------------------------------------------------------------------- */
/* RMA                                                                         */
/* ------------------------------------------------------------------------- */
/** dst (any rank) <- src (caller's memory), len bytes (0 is allowed).
 * @retval TSU_OK                accepted; the callback gets the final status: TSU_OK,
 *                               or TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (the
 *                               target range, nothing written), TSU_ERR_PEER_LOST,
 *                               TSU_ERR_SYSTEM / TSU_ERR_LIMIT (mapping a node peer's
 *                               segment or Cross Memory Attach failed).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK      dst.rank >= job size.
 * @retval TSU_ERR_INVALID_ARG   src.reserved is not 0.
 * @retval TSU_ERR_BAD_SEGMENT   src.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS src.offset + len exceeds the caller's segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches dst.rank. */
TSU_API tsu_status_t tsu_try_put(tsu_gaddr_t dst, tsu_laddr_t src, size_t len, tsu_cb_t cb);
/** dst (caller's memory) <- src (any rank), len bytes (0 is allowed).
 * @retval TSU_OK                accepted; the callback gets the final status: TSU_OK,
 *                               or TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (the
 *                               source range, nothing written), TSU_ERR_PEER_LOST,
 *                               TSU_ERR_SYSTEM / TSU_ERR_LIMIT (mapping a node peer's
 *                               segment or Cross Memory Attach failed).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK      src.rank >= job size.
 * @retval TSU_ERR_INVALID_ARG   dst.reserved is not 0.
 * @retval TSU_ERR_BAD_SEGMENT   dst.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS dst.offset + len exceeds the caller's segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches src.rank. */
TSU_API tsu_status_t tsu_try_get(tsu_laddr_t dst, tsu_gaddr_t src, size_t len, tsu_cb_t cb);
/** dst <- src between any two global addresses, including when neither is the
 * caller's (third-party copy).  Overlapping ranges give unspecified contents.
 * A side on the calling rank is bounds-checked at the call (like put's source
 * and get's destination: TSU_ERR_OUT_OF_BOUNDS, nothing started), as is a
 * length no segment can have; other sides are checked whole at their owner
 * before any byte moves.
 * @retval TSU_OK                accepted; the callback gets TSU_OK, or
 *                               TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (a remote
 *                               side, nothing written), TSU_ERR_PEER_LOST,
 *                               TSU_ERR_SYSTEM / TSU_ERR_LIMIT (mapping a node peer's
 *                               segment or Cross Memory Attach failed).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK      dst.rank or src.rank >= job size.
 * @retval TSU_ERR_OUT_OF_BOUNDS len exceeds any possible segment (2^57 B), or a side on
 *                               the calling rank exceeds its segment.
 * @retval TSU_ERR_BAD_SEGMENT   a side on the calling rank names no live segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches one of the ranks. */
TSU_API tsu_status_t tsu_try_copy(tsu_gaddr_t dst, tsu_gaddr_t src, size_t len, tsu_cb_t cb);

/** Orders: requests the calling thread issues after tsu_fence() start only after
 * every request it issued before has completed.  Never blocks: until then its
 * tsu_try_* calls return TSU_EAGAIN.
 * @retval TSU_OK               the fence is set (or nothing was outstanding).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize. */
TSU_API tsu_status_t tsu_fence(void);

/** Blocks (driving progress in manual mode) until every request the calling
 * thread has issued has completed and its callback has returned.  Requests
 * with a callback report their status there only; implicit-completion
 * requests (tsu_try_*_nbi) report here.  Inside a user-level thread with a
 * park hook (tsu_set_park_hook) it waits for every request of its pthread,
 * parked until the completion that drains them wakes it.
 * @retval TSU_OK               nothing of this thread is in flight, and no
 *                              implicit-completion request failed since the
 *                              thread's previous tsu_quiet.
 * @retval (a request's error)  the first error of the thread's tsu_try_*_nbi
 *                              requests since its previous tsu_quiet (message in
 *                              tsu_last_error).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_UNSUPPORTED  called inside a completion callback or on the progress
 *                              thread (it would deadlock). */
TSU_API tsu_status_t tsu_quiet(void);

/* ------------------------------------------------------------------------- */
/* Vector and strided transfers (OpenSHMEM iput/iget, GASNet VIS)             */
/* ------------------------------------------------------------------------- */
/* One piece of a vector transfer: `len` bytes at offset `remote` of the remote
 * segment and at offset `local` of the caller's segment. */
typedef struct tsu_piece_s {
  uint64_t remote;
  uint64_t local;
  uint64_t len;
} tsu_piece_t;

/** Vector put: a list of pieces from one segment of the caller to one remote
 * segment of `rank`, moved as ONE request with one completion (cb called
 * once).  The pieces array is copied before the call returns.  Every local
 * piece is checked at the call (nothing started); every remote piece is
 * checked at the target before any byte moves: one bad piece fails the whole
 * request with its status and nothing is written (at the target for a put, in
 * the caller's memory for a get).  Pieces of zero length are allowed; count 0
 * completes at once with TSU_OK (the segments are not checked then).  Over
 * the network pieces are packed into as few messages as the transport's
 * message size allows.  Overlapping pieces give unspecified contents.
 * @retval TSU_OK                accepted (with count 0 or on a bypassed route the
 *                               callback has run already); the callback gets TSU_OK,
 *                               or TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (a
 *                               remote piece, or the local segment freed meanwhile;
 *                               nothing written), TSU_ERR_PEER_LOST, TSU_ERR_SYSTEM /
 *                               TSU_ERR_LIMIT (mapping a node peer's segment or Cross
 *                               Memory Attach failed), TSU_ERR_UNREACHABLE (the route
 *                               went away).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER  pieces is NULL and count is not 0.
 * @retval TSU_ERR_INVALID_ARG   count > 2^24.
 * @retval TSU_ERR_BAD_RANK      rank >= job size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches rank.
 * @retval TSU_ERR_NO_MEMORY     no memory for the copy of the pieces.
 * @retval TSU_ERR_BAD_SEGMENT   local_seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS a local piece exceeds local_seg, or a remote piece's
 *                               offset + len passes 2^64. */
TSU_API tsu_status_t tsu_try_putv(uint32_t rank, tsu_seg_t remote_seg, tsu_seg_t local_seg,
                                  const tsu_piece_t *pieces, size_t count, tsu_cb_t cb);
/** Vector get: the pieces of a remote segment of `rank` into one segment of
 * the caller, as ONE request; same checks and guarantees as tsu_try_putv (a
 * bad remote piece fails the whole request and nothing is written in the
 * caller's memory).
 * @retval TSU_OK                accepted; the callback gets the codes listed for
 *                               tsu_try_putv's callback.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER  pieces is NULL and count is not 0.
 * @retval TSU_ERR_INVALID_ARG   count > 2^24.
 * @retval TSU_ERR_BAD_RANK      rank >= job size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches rank.
 * @retval TSU_ERR_NO_MEMORY     no memory for the copy of the pieces.
 * @retval TSU_ERR_BAD_SEGMENT   local_seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS a local piece exceeds local_seg, or a remote piece's
 *                               offset + len passes 2^64. */
TSU_API tsu_status_t tsu_try_getv(uint32_t rank, tsu_seg_t remote_seg, tsu_seg_t local_seg,
                                  const tsu_piece_t *pieces, size_t count, tsu_cb_t cb);

/* A regular shape of blocks: count[0] blocks of `block` bytes, their starts
 * `stride[0]` apart (2-D), repeated count[1] times `stride[1]` apart (3-D;
 * count[1] = 1 for 2-D).  The remote and local sides have their own strides;
 * both move the same count[0] * count[1] blocks in the same order. */
typedef struct tsu_strided_s {
  uint64_t block;
  uint64_t count[2];
  uint64_t remote_stride[2];
  uint64_t local_stride[2];
} tsu_strided_t;

/** Strided put: the blocks of `shape` starting at src (local) to the blocks
 * starting at dst (remote), as one request with one completion; same checks
 * and guarantees as tsu_try_putv (a block past the segment's end fails the
 * whole request, nothing written).  A zero count or block completes with
 * TSU_OK (the segments are not checked then).  At most 2^24 blocks
 * (count[0] * count[1], also when block is 0).
 * @retval TSU_OK                accepted; the callback gets the codes listed for
 *                               tsu_try_putv's callback.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER  shape is NULL.
 * @retval TSU_ERR_INVALID_ARG   src.reserved is not 0, or more than 2^24 blocks.
 * @retval TSU_ERR_BAD_RANK      dst.rank >= job size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches dst.rank.
 * @retval TSU_ERR_NO_MEMORY     no memory for the list of blocks.
 * @retval TSU_ERR_BAD_SEGMENT   src.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS a local block exceeds src.seg, or a block's offset on
 *                               either side passes 2^64. */
TSU_API tsu_status_t tsu_try_put_strided(tsu_gaddr_t dst, tsu_laddr_t src,
                                         const tsu_strided_t *shape, tsu_cb_t cb);
/** Strided get: the blocks of `shape` starting at src (remote) into the
 * blocks starting at dst (local); as tsu_try_put_strided.
 * @retval TSU_OK                accepted; the callback gets the codes listed for
 *                               tsu_try_putv's callback.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER  shape is NULL.
 * @retval TSU_ERR_INVALID_ARG   dst.reserved is not 0, or more than 2^24 blocks.
 * @retval TSU_ERR_BAD_RANK      src.rank >= job size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches src.rank.
 * @retval TSU_ERR_NO_MEMORY     no memory for the list of blocks.
 * @retval TSU_ERR_BAD_SEGMENT   dst.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS a local block exceeds dst.seg, or a block's offset on
 *                               either side passes 2^64. */
TSU_API tsu_status_t tsu_try_get_strided(tsu_laddr_t dst, tsu_gaddr_t src,
                                         const tsu_strided_t *shape, tsu_cb_t cb);

/* ------------------------------------------------------------------------- */
/* Implicit completion (OpenSHMEM *_nbi, GASNet implicit handles, UCX        */
/* requests without a callback)                                               */
/* ------------------------------------------------------------------------- */
/* The same requests as tsu_try_put / get / copy / atomic, without a callback:
 * they complete with the calling thread's next tsu_quiet(), which waits for
 * them (and every other request of the thread) and returns the first error
 * any of them met since the thread's previous tsu_quiet (TSU_OK if none;
 * tsu_last_error() says which).  Their errors are reported nowhere else.
 * tsu_fence() orders them like any request.  Return codes as tsu_try_*: TSU_OK
 * accepted (an intra-node bypassed request is already done), TSU_EAGAIN retry,
 * < 0 rejected at the call.  The calling thread does no per-request
 * bookkeeping beyond its issued count: this is the cheapest way to issue.
 * A get's destination and an atomic's `result` are written by the time
 * tsu_quiet returns. */

/** tsu_try_put without a callback: completes with the thread's next
 * tsu_quiet (see "Implicit completion" above).
 * @retval TSU_OK                accepted (a bypassed request is done already); a
 *                               failure reaches the thread's next tsu_quiet:
 *                               TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (the
 *                               target range, nothing written), TSU_ERR_PEER_LOST,
 *                               TSU_ERR_SYSTEM / TSU_ERR_LIMIT.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK      dst.rank >= job size.
 * @retval TSU_ERR_INVALID_ARG   src.reserved is not 0.
 * @retval TSU_ERR_BAD_SEGMENT   src.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS src.offset + len exceeds the caller's segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches dst.rank. */
TSU_API tsu_status_t tsu_try_put_nbi(tsu_gaddr_t dst, tsu_laddr_t src, size_t len);
/** tsu_try_get without a callback: dst is written by the time the thread's
 * next tsu_quiet returns (see "Implicit completion" above).
 * @retval TSU_OK                accepted (a bypassed request is done already); a
 *                               failure reaches the thread's next tsu_quiet:
 *                               TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (the
 *                               source range, nothing written), TSU_ERR_PEER_LOST,
 *                               TSU_ERR_SYSTEM / TSU_ERR_LIMIT.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK      src.rank >= job size.
 * @retval TSU_ERR_INVALID_ARG   dst.reserved is not 0.
 * @retval TSU_ERR_BAD_SEGMENT   dst.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS dst.offset + len exceeds the caller's segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches src.rank. */
TSU_API tsu_status_t tsu_try_get_nbi(tsu_laddr_t dst, tsu_gaddr_t src, size_t len);
/** tsu_try_copy without a callback: completes with the thread's next
 * tsu_quiet (see "Implicit completion" above).
 * @retval TSU_OK                accepted (a bypassed request is done already); a
 *                               failure reaches the thread's next tsu_quiet:
 *                               TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (a remote
 *                               side, nothing written), TSU_ERR_PEER_LOST,
 *                               TSU_ERR_SYSTEM / TSU_ERR_LIMIT.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK      dst.rank or src.rank >= job size.
 * @retval TSU_ERR_OUT_OF_BOUNDS len exceeds any possible segment (2^57 B), or a side on
 *                               the calling rank exceeds its segment.
 * @retval TSU_ERR_BAD_SEGMENT   a side on the calling rank names no live segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches one of the ranks. */
TSU_API tsu_status_t tsu_try_copy_nbi(tsu_gaddr_t dst, tsu_gaddr_t src, size_t len);
/* tsu_try_atomic_nbi follows tsu_try_atomic below. */

/* ------------------------------------------------------------------------- */
/* Remote atomics                                                             */
/* ------------------------------------------------------------------------- */
typedef enum {
  TSU_AOP_LOAD = 0,      /**< result = *t                                   */
  TSU_AOP_STORE = 1,     /**< *t = operand                                  */
  TSU_AOP_ADD = 2,       /**< *t += operand                                 */
  TSU_AOP_FETCH_ADD = 3, /**< result = *t; *t += operand                    */
  TSU_AOP_SWAP = 4,      /**< result = *t; *t = operand                     */
  TSU_AOP_CAS = 5,       /**< result = *t; if (*t == compare) *t = operand  */
  TSU_AOP_FETCH_AND = 6, /**< result = *t; *t &= operand (integers only)    */
  TSU_AOP_FETCH_OR = 7,  /**< result = *t; *t |= operand (integers only)    */
  TSU_AOP_FETCH_XOR = 8, /**< result = *t; *t ^= operand (integers only)    */
  TSU_AOP_AND = 9,       /**< *t &= operand (integers only)                 */
  TSU_AOP_OR = 10,       /**< *t |= operand (integers only)                 */
  TSU_AOP_XOR = 11       /**< *t ^= operand (integers only)                 */
} tsu_aop_t;

typedef enum {
  TSU_TYPE_INT32 = 0,
  TSU_TYPE_UINT32 = 1,
  TSU_TYPE_INT64 = 2,
  TSU_TYPE_UINT64 = 3,
  TSU_TYPE_DOUBLE = 4 /**< load, store, add, fetch-add, swap, CAS (bitwise compare) */
} tsu_atype_t;

/** One atomic operation on the word at `target` (4- or 8-byte, naturally
 * aligned, in an allocated or main segment).  `operand` and `compare` point to
 * a value of `type`, read before the call returns (NULL where the op needs none);
 * `result` (for fetching ops and load) is written before the callback runs and
 * must stay valid until then.  Atomicity holds between all tsunagi atomics on the
 * word, whoever issues them: they are CPU atomics on the target's memory, or,
 * on a segment allocated with TSU_SEG_NIC_ATOMICS, all NIC atomics.
 * @retval TSU_OK                accepted; the callback gets TSU_OK, or
 *                               TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (nothing
 *                               changed), TSU_ERR_UNSUPPORTED (the word is in
 *                               registered memory: on every route, the owner's own
 *                               included), TSU_ERR_PEER_LOST.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   op is not valid for type (e.g. bitwise ops on DOUBLE),
 *                               or an unknown op or type.
 * @retval TSU_ERR_NULL_POINTER  operand, compare or result is NULL where op needs it.
 * @retval TSU_ERR_BAD_RANK      target.rank >= job size.
 * @retval TSU_ERR_MISALIGNED    target.offset is not a multiple of the type's size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches target.rank. */
TSU_API tsu_status_t tsu_try_atomic(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                    const void *operand, const void *compare, void *result,
                                    tsu_cb_t cb);

/** tsu_try_atomic without a callback: completes with the thread's tsu_quiet
 * (see "Implicit completion" above); `result` is written by then.
 * @retval TSU_OK                accepted (a bypassed request is done already); a
 *                               failure reaches the thread's next tsu_quiet:
 *                               TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS (nothing
 *                               changed), TSU_ERR_UNSUPPORTED (the word is in
 *                               registered memory), TSU_ERR_PEER_LOST.
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   op is not valid for type, or an unknown op or type.
 * @retval TSU_ERR_NULL_POINTER  operand, compare or result is NULL where op needs it.
 * @retval TSU_ERR_BAD_RANK      target.rank >= job size.
 * @retval TSU_ERR_MISALIGNED    target.offset is not a multiple of the type's size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches target.rank. */
TSU_API tsu_status_t tsu_try_atomic_nbi(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                        const void *operand, const void *compare, void *result);

/** tsu_try_atomic(TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64): *result = *t; *t += v.
 * @return as tsu_try_atomic. */
static inline tsu_status_t tsu_try_fetch_add_u64(tsu_gaddr_t t, uint64_t v, uint64_t *result,
                                                 tsu_cb_t cb) {
  return tsu_try_atomic(t, TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &v, (const void *)0, result, cb);
}
/** tsu_try_atomic(TSU_AOP_ADD, TSU_TYPE_UINT64): *t += v.
 * @return as tsu_try_atomic. */
static inline tsu_status_t tsu_try_add_u64(tsu_gaddr_t t, uint64_t v, tsu_cb_t cb) {
  return tsu_try_atomic(t, TSU_AOP_ADD, TSU_TYPE_UINT64, &v, (const void *)0, (void *)0, cb);
}
/** tsu_try_atomic(TSU_AOP_CAS, TSU_TYPE_UINT64): *result = *t; if (*t == expected)
 * *t = desired.
 * @return as tsu_try_atomic. */
static inline tsu_status_t tsu_try_cas_u64(tsu_gaddr_t t, uint64_t expected, uint64_t desired,
                                           uint64_t *result, tsu_cb_t cb) {
  return tsu_try_atomic(t, TSU_AOP_CAS, TSU_TYPE_UINT64, &desired, &expected, result, cb);
}

/* ------------------------------------------------------------------------- */
/* Ordered requests (seed 001: ACP's acp_copy handles)                        */
/* ------------------------------------------------------------------------- */
/* A put, get, copy or atomic issued with a *_ordered call gets a handle (a
 * tsu_req_t: the calling thread's sequence number of ordered requests, from 1)
 * and may name an earlier handle of the same thread as its predecessor:
 *   after = a handle    it starts only once that request has completed (its
 *                       callback returned); several requests naming the same
 *                       handle run in parallel with each other after it;
 *   after = TSU_REQ_ALL it starts once every earlier ordered request of the
 *                       thread has completed;
 *   after = TSU_REQ_NONE unordered (as tsu_try_*).
 * A request held behind its predecessor is kept by the issuing process and
 * started by its progress engine the moment the predecessor completes: the
 * calling thread does not wait in between, and chains of third-party copies
 * (A->B, B->C, C->D) need no tsu_req_wait between the links.  If the
 * predecessor failed (or any earlier request, for TSU_REQ_ALL), the follower
 * does not run: its callback gets TSU_ERR_DEPENDENCY, and its own followers
 * fail the same way.  A failure stays visible to followers until a
 * tsu_req_wait of the thread covering it has reported it.
 * tsu_req_wait(h) waits for h and every ordered request the thread issued
 * before it.  Handles belong to the thread that got them; plain tsu_try_*
 * requests are outside this order (tsu_quiet waits for everything, ordered
 * requests included, held ones too).  Held requests are checked at the call
 * like any request; the target checks its side when the request runs. */
typedef uint64_t tsu_req_t;
#define TSU_REQ_NONE ((tsu_req_t)0)         /**< no predecessor: unordered      */
#define TSU_REQ_ALL ((tsu_req_t)UINT64_MAX) /**< after every earlier request    */

/** tsu_try_put that starts only after the request `after` (see "Ordered
 * requests" above).  On TSU_OK, *req (if req is not NULL) is the new handle.
 * @retval TSU_OK                accepted (run, or held behind `after`); the callback
 *                               gets TSU_OK, TSU_ERR_DEPENDENCY (the predecessor
 *                               failed: nothing was done), or a failure of the put
 *                               itself (TSU_ERR_BAD_SEGMENT / TSU_ERR_OUT_OF_BOUNDS at
 *                               the target, TSU_ERR_PEER_LOST, TSU_ERR_SYSTEM).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry
 *                               (no handle was given out).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   `after` is not TSU_REQ_NONE, TSU_REQ_ALL or a handle
 *                               this thread was given, or src.reserved is not 0.
 * @retval TSU_ERR_BAD_RANK      dst.rank >= job size.
 * @retval TSU_ERR_BAD_SEGMENT   src.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS src.offset + len exceeds the caller's segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches dst.rank.
 * @retval TSU_ERR_NO_MEMORY     the request could not be recorded. */
TSU_API tsu_status_t tsu_try_put_ordered(tsu_gaddr_t dst, tsu_laddr_t src, size_t len,
                                         tsu_req_t after, tsu_cb_t cb, tsu_req_t *req);
/** tsu_try_get that starts only after the request `after` (see "Ordered
 * requests" above).  On TSU_OK, *req (if not NULL) is the new handle.
 * @retval TSU_OK                accepted; the callback gets TSU_OK, TSU_ERR_DEPENDENCY
 *                               (the predecessor failed: nothing was read), or a
 *                               failure of the get itself (as tsu_try_get).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   `after` is not TSU_REQ_NONE, TSU_REQ_ALL or a handle
 *                               this thread was given, or dst.reserved is not 0.
 * @retval TSU_ERR_BAD_RANK      src.rank >= job size.
 * @retval TSU_ERR_BAD_SEGMENT   dst.seg is not a live segment of the caller.
 * @retval TSU_ERR_OUT_OF_BOUNDS dst.offset + len exceeds the caller's segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches src.rank.
 * @retval TSU_ERR_NO_MEMORY     the request could not be recorded. */
TSU_API tsu_status_t tsu_try_get_ordered(tsu_laddr_t dst, tsu_gaddr_t src, size_t len,
                                         tsu_req_t after, tsu_cb_t cb, tsu_req_t *req);
/** tsu_try_copy (third party) that starts only after the request `after` (see
 * "Ordered requests" above).  On TSU_OK, *req (if not NULL) is the new handle.
 * @retval TSU_OK                accepted; the callback gets TSU_OK, TSU_ERR_DEPENDENCY
 *                               (the predecessor failed: nothing was copied), or a
 *                               failure of the copy itself (as tsu_try_copy).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   `after` is not TSU_REQ_NONE, TSU_REQ_ALL or a handle
 *                               this thread was given.
 * @retval TSU_ERR_BAD_RANK      dst.rank or src.rank >= job size.
 * @retval TSU_ERR_OUT_OF_BOUNDS len exceeds any possible segment (2^57 B), or a side on
 *                               the calling rank exceeds its segment.
 * @retval TSU_ERR_BAD_SEGMENT   a side on the calling rank names no live segment.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches one of the ranks.
 * @retval TSU_ERR_NO_MEMORY     the request could not be recorded. */
TSU_API tsu_status_t tsu_try_copy_ordered(tsu_gaddr_t dst, tsu_gaddr_t src, size_t len,
                                          tsu_req_t after, tsu_cb_t cb, tsu_req_t *req);
/** tsu_try_atomic that starts only after the request `after` (see "Ordered
 * requests" above).  `operand` and `compare` are read at the call; `result`
 * must stay valid until the callback.  On TSU_OK, *req (if not NULL) is the
 * new handle.
 * @retval TSU_OK                accepted; the callback gets TSU_OK, TSU_ERR_DEPENDENCY
 *                               (the predecessor failed: the word is unchanged), or a
 *                               failure of the atomic itself (as tsu_try_atomic).
 * @retval TSU_EAGAIN            the command ring is full or a fence is pending: retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   `after` is not TSU_REQ_NONE, TSU_REQ_ALL or a handle
 *                               this thread was given, or op is not valid for type.
 * @retval TSU_ERR_NULL_POINTER  operand, compare or result is NULL where op needs it.
 * @retval TSU_ERR_BAD_RANK      target.rank >= job size.
 * @retval TSU_ERR_MISALIGNED    target.offset is not a multiple of the type's size.
 * @retval TSU_ERR_UNREACHABLE   no transport reaches target.rank.
 * @retval TSU_ERR_NO_MEMORY     the request could not be recorded. */
TSU_API tsu_status_t tsu_try_atomic_ordered(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                            const void *operand, const void *compare,
                                            void *result, tsu_req_t after, tsu_cb_t cb,
                                            tsu_req_t *req);
/** Waits until the ordered request `req` and every ordered request the calling
 * thread issued before it have completed (their callbacks returned).
 * TSU_REQ_ALL: every ordered request issued so far; TSU_REQ_NONE: returns at
 * once.  Drives progress (manual mode); inside a user-level thread whose
 * pthread has a park hook (tsu_set_park_hook) the caller is parked until a
 * completion of the thread's ordered requests wakes it.
 * Reports each failure once: the first failure among the covered requests
 * since an earlier wait reported them, which then no longer fails followers.
 * @retval TSU_OK                all of them succeeded.
 * @retval (a request's error)   the first covered request that failed (its own
 *                               status, or TSU_ERR_DEPENDENCY); tsu_last_error() names
 *                               its handle.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   req is not a handle this thread was given.
 * @retval TSU_ERR_UNSUPPORTED   called from a completion callback, a handler or the
 *                               progress thread (it would block progress). */
TSU_API tsu_status_t tsu_req_wait(tsu_req_t req);
/** tsu_req_wait without waiting: one progress pass if the caller may drive
 * progress, then TSU_EAGAIN if `req` or an earlier ordered request of the
 * thread has not completed, else what tsu_req_wait would return.
 * @retval TSU_OK                all of them succeeded.
 * @retval TSU_EAGAIN            not all of them have completed yet.
 * @retval (a request's error)   as tsu_req_wait.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG   req is not a handle this thread was given. */
TSU_API tsu_status_t tsu_req_test(tsu_req_t req);

/* ------------------------------------------------------------------------- */
/* Waiting inside user-level threads                                           */
/* ------------------------------------------------------------------------- */
/** The hook's type: runs other work, returns 1 if it ran something, 0 if not. */
typedef int (*tsu_wait_hook_fn_t)(void *ctx);
/** Sets the calling pthread's wait hook, for user-level thread schedulers
 * (libtsunagi-ult installs one on each of its workers; another scheduler may
 * do the same).  While a hook is set on the calling pthread, tsunagi's
 * blocking calls made on it (tsu_counter_wait, tsu_quiet, tsu_barrier-style
 * collective waits, tsu_am_register, tsu_team_split) and tsu_progress when it
 * found nothing to do call fn(ctx) between polls (those that can park
 * through tsu_set_park_hook do so instead when a park hook is set).  fn runs other work and
 * returns when the waiting call should poll again: 1 if it ran something, 0
 * if it had nothing to run (the call then pauses as usual: spin, yield,
 * sleep).  The waiting call goes on on the same pthread, so fn must come back
 * on the pthread it was called on.  fn is never called in progress context
 * (callbacks, handlers).  fn NULL removes the hook (ctx is then ignored).
 * Per pthread; replaces the pthread's previous hook; works before tsu_init and
 * after tsu_finalize.
 * @retval TSU_OK               always: the hook is set (or removed); nothing is
 *                              checked. */
TSU_API tsu_status_t tsu_set_wait_hook(tsu_wait_hook_fn_t fn, void *ctx);

/** Tells tsunagi how many pthreads of this process run or poll without
 * sleeping (default 1: the thread that calls tsunagi), e.g. a user-level
 * thread scheduler's workers (libtsunagi-ult passes its worker count at
 * tsu_ult_init, and 0 at tsu_ult_finalize).  TSU_YIELD=auto turns yielding
 * on (tsu_yield_when_idle) when the node's ranks times this count (each rank
 * taken to run as many as this one) exceed the CPUs this process may use at
 * tsu_init.  Progress threads are not counted: they spin briefly, then sleep
 * (counting them made the 8 B pingpong of two ranks on two CPUs 30-50x slower).
 * threads 0: back to 1.  Per process; works before tsu_init (kept for it)
 * and after tsu_finalize.
 * @retval TSU_OK               always: the count is set. */
TSU_API tsu_status_t tsu_set_busy_threads(uint32_t threads);

/** Whether a wait that found nothing to do gives the CPU away (sched_yield):
 * TSU_YIELD, with auto resolved as tsu_set_busy_threads says.  Schedulers
 * running their own spinning waits should follow it.  Before tsu_init (and
 * after tsu_finalize): TSU_YIELD from the environment, auto counting this
 * process's busy threads alone against its CPUs.
 * @return 1 yes, 0 no. */
TSU_API int tsu_yield_when_idle(void);

/** A blocking call's waiter record, handed to a park hook (opaque; it lives
 * in the waiting call's frame until the call returns). */
typedef struct tsu_waiter tsu_waiter_t;
/** Park flag: nothing but this pthread drives progress (TSU_PROGRESS_MANUAL):
 * while the thread is parked the scheduler must keep calling tsu_progress()
 * on this pthread when it has nothing else to run, instead of sleeping. */
#define TSU_PARK_DRIVE_PROGRESS 1u
/** The park hook: suspends the calling user-level thread until the completion
 * it waits for wakes it.  It switches away from the caller and, once the
 * caller's context is saved (no other pthread could resume it before),
 * calls tsu_waiter_commit(waiter, token) with its own handle for the thread:
 * 1 means parked (resume it only when unpark(ctx, token) is called), 0 means
 * the wake came first (resume it now).  Returns 1 after the thread was
 * resumed, 0 at once if it cannot park the caller (the call then waits
 * through the wait hook, polling, as before).  `flags`: TSU_PARK_*. */
typedef int (*tsu_park_fn_t)(void *ctx, tsu_waiter_t *waiter, uint32_t flags);
/** The unpark hook: makes the parked thread `token` runnable on the pthread it
 * parked on.  Called exactly once per committed park, from any pthread (the
 * progress thread, another worker) or from the parking pthread itself inside
 * a completion callback; must not block. */
typedef void (*tsu_unpark_fn_t)(void *ctx, void *token);
/** Sets the calling pthread's park hook (next to its wait hook): while both
 * park and unpark are set, tsu_counter_wait, tsu_quiet and the collective
 * waits made on this pthread park the caller until their completion wakes it,
 * instead of resuming it to poll.  park NULL removes the hook.  Per pthread;
 * works before tsu_init and after tsu_finalize.
 * @retval TSU_OK               the hook is set (or removed).
 * @retval TSU_ERR_INVALID_ARG  park is set and unpark is NULL (nothing changed). */
TSU_API tsu_status_t tsu_set_park_hook(tsu_park_fn_t park, tsu_unpark_fn_t unpark, void *ctx);
/** For park hooks only: records `token` for `waiter` after the parking thread's
 * context is saved.
 * @return 1 parked: unpark(ctx, token) will be called exactly once;
 *         0 already woken (or waiter NULL): resume the thread now. */
TSU_API int tsu_waiter_commit(tsu_waiter_t *waiter, void *token);

/** A layer's finalize hook (see tsu_add_finalize_hook). */
typedef void (*tsu_finalize_hook_fn_t)(void *ctx);
#define TSU_FINALIZE_HOOKS_MAX 16u
/** For layers that call tsunagi from pthreads of their own (a user-level
 * thread scheduler's workers, a runtime's helper thread): tsu_finalize calls
 * fn(ctx) on its own pthread once every rank has reached tsu_finalize (until
 * then those pthreads may still serve other ranks) and before it tears
 * anything down, latest added first.  fn must return only once those
 * pthreads make no more tsunagi calls (calls after tsu_finalize returned are
 * safe: they say TSU_ERR_NOT_INITIALIZED).  fn may call tsunagi (the runtime
 * is whole) but not tsu_init or tsu_finalize.  Hooks belong to this
 * tsu_init: they run once and are gone after tsu_finalize.
 * @retval TSU_OK               added.
 * @retval TSU_ERR_NULL_POINTER fn is NULL.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_LIMIT        TSU_FINALIZE_HOOKS_MAX hooks are set. */
TSU_API tsu_status_t tsu_add_finalize_hook(tsu_finalize_hook_fn_t fn, void *ctx);
/** Removes a hook that tsu_add_finalize_hook added with the same fn and ctx.
 * @retval TSU_OK               removed.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  no such hook. */
TSU_API tsu_status_t tsu_remove_finalize_hook(tsu_finalize_hook_fn_t fn, void *ctx);

/* ------------------------------------------------------------------------- */
/* Statistics                                                                  */
/* ------------------------------------------------------------------------- */
/** Writes this rank's counters (ops, bytes, EAGAINs, batches, sleeps) and its
 * network transport's (udp, ofi or tcp) to stderr, as TSU_STATS=1 does at finalize.
 * @retval TSU_OK               written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize. */
TSU_API tsu_status_t tsu_stats_print(void);

#ifdef __cplusplus
}
#endif

/** Messaging: active messages, tagged messages, collectives. */
#include "tsunagi/am.h"
#include "tsunagi/msg.h"
#include "tsunagi/coll.h"

#endif /**< TSUNAGI_TSUNAGI_H */
