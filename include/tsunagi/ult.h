/*
 * tsunagi user-level threads (C11): library libtsunagi-ult (CMake target
 * tsunagi::ult), on top of libtsunagi.  Compiles on its own.  Guide:
 * docs/ult.md.
 *
 * An M:N scheduler: a rank runs its user-level threads (ULTs) on a few worker
 * pthreads, each with its own run queue; an idle worker steals from the
 * others.  The API is shaped like pthreads, so porting is mechanical:
 *   pthread_create  -> tsu_ult_create        pthread_mutex_* -> tsu_ult_mutex_*
 *   pthread_exit    -> tsu_ult_exit          pthread_cond_*  -> tsu_ult_cond_*
 *   pthread_join    -> tsu_ult_join          pthread_barrier_* -> tsu_ult_barrier_*
 *   pthread_detach  -> tsu_ult_detach        pthread_key_*, pthread_[gs]etspecific
 *   sched_yield     -> tsu_ult_yield                          -> tsu_ult_key_* ...
 *   pthread_self    -> tsu_ult_self
 * Functions return tsu_status_t (TSU_OK, or an error with tsu_last_error()
 * set when tsunagi is initialized) instead of an errno value.
 *
 * Who may call what:
 *  - create, join, detach, mutex, cond, barrier and keys work from ULTs and
 *    from plain pthreads alike (a pthread that joins a ULT or waits for its
 *    mutex blocks on a futex; a ULT that does yields its worker instead).
 *  - yield and exit are for ULTs (from a pthread: yield is sched_yield, exit
 *    is TSU_ERR_UNSUPPORTED).
 * Waiting yields: inside a ULT, blocking tsunagi calls (tsu_counter_wait,
 * tsu_quiet, blocking collectives, tsu_am_register, tsu_progress with nothing
 * to do, and the C++ futures' wait/get) let the worker run other ULTs while
 * they wait, instead of spinning (tsu_set_wait_hook in tsunagi.h).
 *
 * Thread-local storage: a ULT may move between workers at any yield or
 * blocking call, so the C library's and tsunagi's per-pthread state
 * (errno, tsu_last_error) is only valid until the next such point.  Keys
 * (tsu_ult_key_*) follow the ULT.  A ULT waiting inside a tsunagi call stays
 * on its worker for the whole call.
 */
#ifndef TSUNAGI_ULT_H
#define TSUNAGI_ULT_H

#include <stddef.h>
#include <stdint.h>

#include "tsunagi/tsunagi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* The scheduler                                                              */
/* ------------------------------------------------------------------------- */
enum {
  TSU_ULT_CONFIG_WORKERS = 1u << 0,
  TSU_ULT_CONFIG_STACK_SIZE = 1u << 1,
  TSU_ULT_CONFIG_GUARD = 1u << 2
};

/* Values come from the defaults, then the environment (TSU_ULT_WORKERS,
 * TSU_ULT_STACK_SIZE, TSU_ULT_GUARD), then the fields whose bit is set in
 * field_mask.  Set struct_size to sizeof(tsu_ult_config_t). */
typedef struct tsu_ult_config {
  size_t struct_size;
  uint64_t field_mask;
  uint32_t workers;   /* worker pthreads; 0 = default: the CPUs this process
                         may use divided by the ranks on its node, at least 1 */
  uint32_t reserved;  /* must be 0 */
  size_t stack_size;  /* default stack of a ULT (bytes, rounded up to pages;
                         default 128 KiB); memory is taken as it is touched  */
  int32_t guard;      /* 1: a PROT_NONE page under every stack; an overflow
                         is reported with the thread's name and the process
                         aborts (default: 1 in debug builds, 0 in release)    */
  int32_t reserved2;  /* must be 0 */
} tsu_ult_config_t;

/* Starts the workers.  config may be NULL.  Local: call once per process,
 * from a pthread (not a ULT).  It needs no tsu_init, and works after it.
 * TSU_ERR_ALREADY_INITIALIZED when the scheduler runs already. */
TSU_API tsu_status_t tsu_ult_init(const tsu_ult_config_t *config);

/* Waits until every ULT has finished (joined or detached ones alike), then
 * stops the workers.  From a pthread.  Call it before tsu_finalize when both
 * are used. */
TSU_API tsu_status_t tsu_ult_finalize(void);

/* Number of worker pthreads (0 when the scheduler is not running). */
TSU_API uint32_t tsu_ult_workers(void);

/* ------------------------------------------------------------------------- */
/* Threads                                                                    */
/* ------------------------------------------------------------------------- */
typedef struct tsu_ult_s *tsu_ult_t;         /* a thread's handle            */
typedef void *(*tsu_ult_fn_t)(void *arg);    /* like a pthread's start routine */

enum {
  TSU_ULT_ATTR_STACK_SIZE = 1u << 0,
  TSU_ULT_ATTR_DETACHED = 1u << 1,
  TSU_ULT_ATTR_NAME = 1u << 2
};
#define TSU_ULT_NAME_MAX 23u /* longer names are cut */

/* Thread attributes (like pthread_attr_t, but a plain struct). */
typedef struct tsu_ult_attr {
  size_t struct_size;   /* sizeof(tsu_ult_attr_t)                            */
  uint64_t field_mask;  /* TSU_ULT_ATTR_* bits of the fields that are set     */
  size_t stack_size;    /* bytes; 0 or unset: the scheduler's default         */
  int32_t detached;     /* 1: cannot be joined; its resources go at its end   */
  int32_t reserved;     /* must be 0                                         */
  const char *name;     /* copied; used by stack-overflow reports and dumps   */
} tsu_ult_attr_t;

/* Creates a ULT that runs fn(arg) on one of this rank's workers.  attr may be
 * NULL.  *out (may be NULL for detached threads) is its handle, valid until
 * it is joined, or until it ends when detached.  The stack is taken from a
 * pool when the thread first runs, so threads not yet started cost about
 * 200 bytes each. */
TSU_API tsu_status_t tsu_ult_create(tsu_ult_t *out, const tsu_ult_attr_t *attr, tsu_ult_fn_t fn,
                                    void *arg);

/* Ends the calling ULT with `value` (returning from fn does the same).  Frames
 * of the thread are not unwound: C++ destructors of its locals do not run.
 * Never returns from a ULT; from a pthread: TSU_ERR_UNSUPPORTED. */
TSU_API tsu_status_t tsu_ult_exit(void *value);

/* Waits for `thread` to end and writes its value (value may be NULL); the
 * handle is then gone.  Once per thread; not for detached threads
 * (TSU_ERR_INVALID_ARG); not on itself. */
TSU_API tsu_status_t tsu_ult_join(tsu_ult_t thread, void **value);

/* The thread's resources go when it ends; it cannot be joined any more. */
TSU_API tsu_status_t tsu_ult_detach(tsu_ult_t thread);

/* Lets the worker run other ready ULTs (FIFO); returns at once if there are
 * none.  From a pthread: sched_yield. */
TSU_API tsu_status_t tsu_ult_yield(void);

/* The calling ULT, or NULL on a pthread. */
TSU_API tsu_ult_t tsu_ult_self(void);

/* A per-rank number of the thread (1, 2, ... in creation order), 0 for NULL. */
TSU_API uint64_t tsu_ult_id(tsu_ult_t thread);

/* ------------------------------------------------------------------------- */
/* Synchronization (zero-filled objects are valid: the initializers are {0})  */
/* ------------------------------------------------------------------------- */
/* Mutex: not recursive; unlock by the owner only (not checked). */
typedef struct tsu_ult_mutex { uint64_t opaque[4]; } tsu_ult_mutex_t;
#define TSU_ULT_MUTEX_INITIALIZER {{0, 0, 0, 0}}
TSU_API tsu_status_t tsu_ult_mutex_init(tsu_ult_mutex_t *mutex);
TSU_API tsu_status_t tsu_ult_mutex_destroy(tsu_ult_mutex_t *mutex);
TSU_API tsu_status_t tsu_ult_mutex_lock(tsu_ult_mutex_t *mutex);
/* TSU_OK when taken, TSU_EAGAIN when held by someone else. */
TSU_API tsu_status_t tsu_ult_mutex_trylock(tsu_ult_mutex_t *mutex);
TSU_API tsu_status_t tsu_ult_mutex_unlock(tsu_ult_mutex_t *mutex);

/* Condition variable (no spurious wake-ups are promised either way: wait in a
 * loop on your predicate, as with pthreads). */
typedef struct tsu_ult_cond { uint64_t opaque[4]; } tsu_ult_cond_t;
#define TSU_ULT_COND_INITIALIZER {{0, 0, 0, 0}}
TSU_API tsu_status_t tsu_ult_cond_init(tsu_ult_cond_t *cond);
TSU_API tsu_status_t tsu_ult_cond_destroy(tsu_ult_cond_t *cond);
TSU_API tsu_status_t tsu_ult_cond_wait(tsu_ult_cond_t *cond, tsu_ult_mutex_t *mutex);
TSU_API tsu_status_t tsu_ult_cond_signal(tsu_ult_cond_t *cond);
TSU_API tsu_status_t tsu_ult_cond_broadcast(tsu_ult_cond_t *cond);

/* Barrier of `count` threads (ULTs and pthreads may mix).  wait returns
 * TSU_ULT_BARRIER_SERIAL in exactly one of them per round, TSU_OK in the
 * others. */
typedef struct tsu_ult_barrier { uint64_t opaque[6]; } tsu_ult_barrier_t;
#define TSU_ULT_BARRIER_SERIAL 2
TSU_API tsu_status_t tsu_ult_barrier_init(tsu_ult_barrier_t *barrier, uint32_t count);
TSU_API tsu_status_t tsu_ult_barrier_destroy(tsu_ult_barrier_t *barrier);
TSU_API tsu_status_t tsu_ult_barrier_wait(tsu_ult_barrier_t *barrier);

/* ------------------------------------------------------------------------- */
/* Thread-local keys (each ULT, and each pthread, has its own values)          */
/* ------------------------------------------------------------------------- */
typedef uint32_t tsu_ult_key_t;
#define TSU_ULT_KEYS_MAX 128u
/* destructor (may be NULL) runs at a ULT's end for each non-NULL value, up to
 * 4 rounds, as with pthreads (pthreads' values: not called). */
TSU_API tsu_status_t tsu_ult_key_create(tsu_ult_key_t *key, void (*destructor)(void *));
TSU_API tsu_status_t tsu_ult_key_delete(tsu_ult_key_t key);
TSU_API tsu_status_t tsu_ult_setspecific(tsu_ult_key_t key, const void *value);
/* NULL when unset or for a bad key. */
TSU_API void *tsu_ult_getspecific(tsu_ult_key_t key);

/* ------------------------------------------------------------------------- */
/* Threads on other ranks (seed 003)                                          */
/* ------------------------------------------------------------------------- */
/* A thread started with tsu_ult_spawn runs a function named by an id that
 * every rank registered (never a raw pointer), with its argument and its
 * exit value passed by value (at most TSU_ULT_ARG_MAX / TSU_ULT_VALUE_MAX
 * bytes).  It may run on any rank: the one named, or with TSU_ULT_ANY_RANK
 * the least loaded one, and a rank with nothing to run may take it from a
 * loaded rank before it starts (docs/ult.md, "Load balancing").  Only the
 * creating rank (a handle) and the running rank (the thread) keep its
 * details; the exit value comes back to the creator when the thread ends.
 * Spawn and exit messages to one rank are batched (one active message per
 * rank and pass of the scheduler).
 *
 * With tsunagi initialized (tsu_init before tsu_ult_init), tsu_ult_init,
 * tsu_ult_register and tsu_ult_finalize are collective: every rank calls
 * them, from a pthread.  The layer uses active-message handler ids
 * TSU_ULT_AM_FIRST..TSU_AM_MAX_HANDLER and receives from other ranks with
 * tag TSU_ULT_WATCH_TAG: do not use them yourself. */
#define TSU_ULT_ANY_RANK UINT32_MAX
#define TSU_ULT_ARG_MAX 192u
#define TSU_ULT_VALUE_MAX 192u
#define TSU_ULT_FN_MAX 1023u /* function ids 0 .. TSU_ULT_FN_MAX */
#define TSU_ULT_AM_FIRST 65272u
#define TSU_ULT_WATCH_TAG UINT64_C(0x7473752d756c7421)

/* A function threads can be spawned with: reads arg[0, arg_len), writes its
 * exit value to value[0, *value_len) (*value_len starts at 0; at most
 * TSU_ULT_VALUE_MAX).  Runs in a ULT: it may block, yield, spawn and join. */
typedef void (*tsu_ult_remote_fn_t)(const void *arg, size_t arg_len, void *value,
                                    size_t *value_len);

/* Collective (when tsunagi is initialized): every rank registers the same id
 * for the same function before any rank spawns with it.  fn NULL removes. */
TSU_API tsu_status_t tsu_ult_register(uint32_t fn_id, tsu_ult_remote_fn_t fn);

/* Starts fn_id(arg) on `rank` (this rank included), or on a rank chosen by
 * the balancer with TSU_ULT_ANY_RANK.  attr: name and detached are used
 * (stack_size applies on the running rank too).  *out (may be NULL when
 * detached) is joined with tsu_ult_join_value (or tsu_ult_join, which
 * gives the value NULL).  TSU_ERR_BAD_RANK, TSU_ERR_INVALID_ARG (unknown id,
 * arg too long), TSU_ERR_PEER_LOST (rank known lost). */
TSU_API tsu_status_t tsu_ult_spawn(tsu_ult_t *out, uint32_t rank, uint32_t fn_id, const void *arg,
                                   size_t arg_len, const tsu_ult_attr_t *attr);

/* Joins a spawned thread and copies its exit value (up to cap bytes; *len
 * (may be NULL) gets its full length).  Returns TSU_ERR_PEER_LOST when the
 * rank running it was lost before it ended (never hangs on a lost rank),
 * TSU_ERR_TRUNCATED when cap was too small (the value is cut). */
TSU_API tsu_status_t tsu_ult_join_value(tsu_ult_t thread, void *value, size_t cap, size_t *len);

/* The rank that runs (or ran) a spawned thread, as far as its creator knows
 * (it changes when another rank takes the thread before it starts). */
TSU_API tsu_status_t tsu_ult_rank_of(tsu_ult_t thread, uint32_t *rank);

/* ------------------------------------------------------------------------- */
/* Observability                                                              */
/* ------------------------------------------------------------------------- */
typedef struct tsu_ult_counters_s {
  uint64_t created;   /* ULTs created on this rank                           */
  uint64_t finished;  /* ULTs that ended                                      */
  uint64_t switches;  /* context switches                                     */
  uint64_t stolen;    /* ULTs a worker took from another worker's queue       */
  uint64_t migrated;  /* ULTs started on another rank, or taken by one        */
  uint64_t stacks;    /* stacks mapped (the pool's size)                      */
} tsu_ult_counters_t;
TSU_API tsu_status_t tsu_ult_counters(tsu_ult_counters_t *out);

/* Writes the counters, and one line per live ULT (id, name, state, where it
 * was created) to stderr.  Also printed by tsu_ult_finalize when TSU_STATS=1. */
TSU_API tsu_status_t tsu_ult_dump(void);

#ifdef __cplusplus
}
#endif

#endif /* TSUNAGI_ULT_H */
