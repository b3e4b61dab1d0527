/** @file ult.h
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
 * Functions return tsu_status_t (TSU_OK or an error code) instead of an errno
 * value.  They do not set tsu_last_error(): only an error passed on from a
 * tsunagi call they make (the collectives of tsu_ult_init, tsu_ult_register,
 * tsu_ult_finalize) has a message there.
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
 * tsu_counter_wait, tsu_quiet and the blocking collectives park the ULT until
 * their completion wakes it (tsu_set_park_hook); the others resume it to
 * poll.  A worker whose ULTs are all parked drives progress itself in
 * TSU_PROGRESS_MANUAL, and sleeps until woken with a progress thread.
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
  TSU_ULT_CONFIG_GUARD = 1u << 2,
  TSU_ULT_CONFIG_FP_FLAGS = 1u << 3
};

/* tsu_ult_config_t.fp_flags: what a ULT's floating-point status flags do
 * across a switch (docs/ult.md, "Floating-point state").  Rounding and
 * exception modes are each thread's own either way (but see the inline
 * thread below).  On x86 a flag is held by the SSE unit (MXCSR: double and
 * float arithmetic) or by the x87 unit (its status word: long double and
 * other x87 arithmetic, and glibc's feraiseexcept for FE_OVERFLOW,
 * FE_UNDERFLOW and FE_INEXACT on x86-64); fetestexcept reads both. */
enum {
  /* Default.  Keeps switches fast on cores where a switch that changes MXCSR
   * is slow (some Intel Xeons: ~70 ns, not ~5).  Not each thread's own:
   *  - FE_INEXACT reads as raised in a ULT once it has switched;
   *  - every flag held by the x87 unit belongs to the worker pthread and is
   *    shared by the ULTs that run there (one raises it, the others read it;
   *    a feclearexcept clears it for all of them);
   *  - a thread its joiner runs inline (a ULT creates it and joins it before
   *    it started) shares the joiner's environment: the rounding mode,
   *    exception masks and flags it sets are the joiner's after the join.
   * The other flags held by MXCSR are the thread's own. */
  TSU_ULT_FP_FLAGS_FAST = 0,
  /* Every flag is the thread's own, as with pthreads: FE_INEXACT, the x87
   * unit's flags (saved and restored at each switch), and those of a thread
   * run inline.  A switch costs more: ~70 ns between threads whose MXCSR
   * differs on such Xeons, and reading the x87 flags ~5 ns on AMD EPYC. */
  TSU_ULT_FP_FLAGS_EXACT = 1
};

/* Values come from the defaults, then the environment (TSU_ULT_WORKERS,
 * TSU_ULT_STACK_SIZE, TSU_ULT_GUARD, TSU_ULT_FP_FLAGS), then the fields whose bit is set in
 * field_mask.  Set struct_size to sizeof(tsu_ult_config_t). */
typedef struct tsu_ult_config {
  size_t struct_size;
  uint64_t field_mask;
  uint32_t workers;   /* worker pthreads; 0 = default: the CPUs this process
                         may use divided by the ranks on its node, at least 1.
                         Counted for TSU_YIELD=auto (tsu_set_busy_threads):
                         more than that turns yielding on */
  uint32_t reserved;  /* must be 0 */
  size_t stack_size;  /* default stack of a ULT (bytes, rounded up to pages;
                         default 128 KiB); memory is taken as it is touched  */
  int32_t guard;      /* 1: a PROT_NONE page under every stack (default: 1 in
                         debug builds, 0 in release).  A thread that runs into
                         it gets a report on stderr naming the thread, then the
                         process ends with SIGABRT (abort()).  It catches a
                         stack that grows into it page by page; a single frame
                         larger than a page (a big local array, alloca) can
                         jump over it into other memory, which it cannot
                         catch: give such threads a stack_size that fits, or
                         build with -fstack-clash-protection, which makes the
                         compiler touch large frames page by page.  Without
                         the guard an overflow is not detected at all.        */
  int32_t fp_flags;   /* TSU_ULT_FP_FLAGS_FAST (default) or TSU_ULT_FP_FLAGS_EXACT
                         (this field was `reserved2`, always 0: the default)  */
} tsu_ult_config_t;

/** Starts the workers.  config may be NULL.  Local without tsunagi: call once
 * per process, from a pthread (not a ULT).  It needs no tsu_init, and works
 * after it; then it is collective (see "Threads on other ranks" below).
 * @retval TSU_OK               the workers run.
 * @retval TSU_ERR_ALREADY_INITIALIZED the scheduler runs already (so also from a ULT).
 * @retval TSU_ERR_CONFIG       a TSU_ULT_* variable or a field of `config` is invalid
 *                              (struct_size too small, workers > 4096, stack_size
 *                              outside 16 KiB .. 1 GiB, guard not 0 or 1, fp_flags not
 *                              one of TSU_ULT_FP_FLAGS_*); the reason is
 *                              printed to stderr, not kept in tsu_last_error.
 * @retval TSU_ERR_NO_MEMORY    no memory for the scheduler.
 * @retval (tsu_am_register's)  with tsunagi initialized: an error of registering the
 *                              layer's active-message handlers (TSU_ERR_UNSUPPORTED
 *                              from a handler or callback, TSU_ERR_PEER_LOST,
 *                              TSU_ERR_UNREACHABLE, TSU_ERR_NO_MEMORY); nothing
 *                              started. */
TSU_API tsu_status_t tsu_ult_init(const tsu_ult_config_t *config);

/** Waits until every ULT has finished (joined or detached ones alike), then
 * stops the workers.  From a pthread.  Call it before tsu_finalize when both
 * are used (with tsunagi it is collective and waits until no rank has
 * threads or messages of the layer left).
 * @retval TSU_OK               stopped.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run.
 * @retval TSU_ERR_UNSUPPORTED  called from a ULT.
 * @retval TSU_ERR_PEER_LOST    a rank was lost: the survivors agreed without it
 *                              (every join on it has failed); stopped all the same.
 * @retval TSU_ERR_NOT_INITIALIZED also: tsu_finalize ran before it (the wrong
 *                              order, with any number of ranks).  Until every
 *                              rank has reached tsu_finalize the workers go on
 *                              serving other ranks; then, before tsunagi tears
 *                              down, they stop using it (tsu_add_finalize_hook):
 *                              joins of threads on other ranks that had not ended
 *                              fail with TSU_ERR_NOT_INITIALIZED; this call then
 *                              waits for this rank's threads and stops the
 *                              workers.
 * @retval (the collective's)   with tsunagi initialized: an error of the final
 *                              exchange (e.g. TSU_ERR_UNREACHABLE); the
 *                              scheduler is stopped all the same. */
TSU_API tsu_status_t tsu_ult_finalize(void);

/** Number of worker pthreads.
 * @return the count; 0 when the scheduler is not running. */
TSU_API uint32_t tsu_ult_workers(void);

/* ------------------------------------------------------------------------- */
/* Threads                                                                    */
/* ------------------------------------------------------------------------- */
typedef struct tsu_ult_s *tsu_ult_t;         /* a thread's handle            */
typedef void *(*tsu_ult_fn_t)(void *arg);    /* like a pthread's start routine */

enum {
  TSU_ULT_ATTR_STACK_SIZE = 1u << 0,
  TSU_ULT_ATTR_DETACHED = 1u << 1,
  TSU_ULT_ATTR_NAME = 1u << 2,
  TSU_ULT_ATTR_MIGRATABLE = 1u << 3
};
#define TSU_ULT_NAME_MAX 23u /* longer names are cut */

/* Thread attributes (like pthread_attr_t, but a plain struct). */
typedef struct tsu_ult_attr {
  size_t struct_size;   /* sizeof(tsu_ult_attr_t)                            */
  uint64_t field_mask;  /* TSU_ULT_ATTR_* bits of the fields that are set     */
  size_t stack_size;    /* bytes; 0 or unset: the scheduler's default.  Every
                           stack the thread runs on has at least this many
                           usable bytes, on whichever rank and worker it runs */
  int32_t detached;     /* 1: cannot be joined; its resources go at its end   */
  int32_t migratable;   /* tsu_ult_spawn to a named rank: 1 lets the load
                           balancer move the thread to another rank before it
                           starts; 0 (default) keeps it on that rank.  Threads
                           spawned with TSU_ULT_ANY_RANK may always move;
                           tsu_ult_create's never leave their rank (ignored).
                           (This field was `reserved`, always 0: the default.) */
  const char *name;     /* copied; used by stack-overflow reports and dumps   */
} tsu_ult_attr_t;

/** Creates a ULT that runs fn(arg) on one of this rank's workers.  attr may be
 * NULL.  *out (may be NULL for detached threads; set to NULL for them) is its
 * handle, valid until it is joined, or until it ends when detached.  The
 * stack is taken from a pool when the thread first runs, so threads not yet
 * started cost about 200 bytes each; a thread that gets no stack does not run
 * and its join returns TSU_ERR_NO_MEMORY.
 * @retval TSU_OK               created (it may have run and ended already).
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run.
 * @retval TSU_ERR_NULL_POINTER fn is NULL, or out is NULL for a joinable thread.
 * @retval TSU_ERR_INVALID_ARG  attr->struct_size too small, a stack_size set outside
 *                              4 KiB .. 1 GiB, or detached or migratable (when set)
 *                              not 0 or 1.
 * @retval TSU_ERR_NO_MEMORY    no memory for the thread's record or its queue entry. */
TSU_API tsu_status_t tsu_ult_create(tsu_ult_t *out, const tsu_ult_attr_t *attr, tsu_ult_fn_t fn,
                                    void *arg);

/** Ends the calling ULT with `value` (returning from fn does the same).  Frames
 * of the thread are not unwound: C++ destructors of its locals do not run.
 * Never returns from a ULT.
 * @retval TSU_OK               never: called from a ULT it does not return.
 * @retval TSU_ERR_UNSUPPORTED  called from a pthread (nothing happens). */
TSU_API tsu_status_t tsu_ult_exit(void *value);

/** Waits for `thread` to end and writes its value (value may be NULL); the
 * handle is then gone.  Once per thread (a handle already joined is gone:
 * joining it again is undefined); not for detached threads; not on itself.
 * A thread made by tsu_ult_spawn gives the value NULL (tsu_ult_join_value
 * returns its value).
 * @retval TSU_OK               ended; *value written; the handle is gone.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run.
 * @retval TSU_ERR_NULL_POINTER thread is NULL.
 * @retval TSU_ERR_INVALID_ARG  thread is detached, is being joined by another thread,
 *                              or is the caller; or (a spawned thread) its function
 *                              id is not registered on the rank that ran it: the
 *                              handle is then not freed, and stays valid: release
 *                              it with tsu_ult_detach (a join again says the same).
 * @retval TSU_ERR_NO_MEMORY    the thread never ran (no stack, or the running rank
 *                              could not create it); the handle is gone.
 * @retval TSU_ERR_TRUNCATED    (a spawned thread) its function wrote more than
 *                              TSU_ULT_VALUE_MAX bytes; the handle is gone.
 * @retval TSU_ERR_PEER_LOST    (a spawned thread) the rank running it was lost; the
 *                              handle is gone.
 * @retval TSU_ERR_UNREACHABLE  (a spawned thread) its spawn could not be sent; the
 *                              handle is gone. */
TSU_API tsu_status_t tsu_ult_join(tsu_ult_t thread, void **value);

/** The thread's resources go when it ends (at once if it has ended); it
 * cannot be joined any more and the handle must not be used again.  Also
 * releases a handle whose join returned TSU_ERR_INVALID_ARG because its
 * function id was not registered where it ran.
 * @retval TSU_OK               detached.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run.
 * @retval TSU_ERR_NULL_POINTER thread is NULL.
 * @retval TSU_ERR_INVALID_ARG  thread is detached already or being joined. */
TSU_API tsu_status_t tsu_ult_detach(tsu_ult_t thread);

/** Lets the worker run other ready ULTs (FIFO).  With none, it gives the
 * worker's CPU away (sched_yield) where threads outnumber CPUs
 * (tsu_yield_when_idle at tsu_ult_init, which counts the workers) or another
 * thread has lately taken this worker's CPU, so a loop that waits by
 * yielding lets the thread it waits for run; otherwise it returns at once.
 * From a pthread (also without the scheduler): sched_yield.
 * @retval TSU_OK               always. */
TSU_API tsu_status_t tsu_ult_yield(void);

/** The calling thread's handle.
 * @return the calling ULT, or NULL on a pthread. */
TSU_API tsu_ult_t tsu_ult_self(void);

/** A per-rank number of the thread (1, 2, ... in creation order).
 * @return the number; 0 for NULL. */
TSU_API uint64_t tsu_ult_id(tsu_ult_t thread);

/* ------------------------------------------------------------------------- */
/* Synchronization (zero-filled objects are valid: the initializers are {0})  */
/* ------------------------------------------------------------------------- */
/* Mutex: not recursive; unlock by the owner only (not checked). */
typedef struct tsu_ult_mutex { uint64_t opaque[4]; } tsu_ult_mutex_t;
#define TSU_ULT_MUTEX_INITIALIZER {{0, 0, 0, 0}}
/** Sets a mutex to unlocked (as TSU_ULT_MUTEX_INITIALIZER does).  The
 * synchronization objects need no scheduler.
 * @retval TSU_OK               initialized.
 * @retval TSU_ERR_NULL_POINTER mutex is NULL. */
TSU_API tsu_status_t tsu_ult_mutex_init(tsu_ult_mutex_t *mutex);
/** Checks that a mutex may be discarded (it holds no resources).
 * @retval TSU_OK               it is unlocked.
 * @retval TSU_EAGAIN           it is locked: unlock it first.
 * @retval TSU_ERR_NULL_POINTER mutex is NULL. */
TSU_API tsu_status_t tsu_ult_mutex_destroy(tsu_ult_mutex_t *mutex);
/** Locks, waiting (a ULT yields its worker, a pthread sleeps) while another
 * thread holds it; waiters get it in FIFO order.  Locking it twice from one
 * thread deadlocks.
 * @retval TSU_OK               the caller holds the mutex.
 * @retval TSU_ERR_NULL_POINTER mutex is NULL. */
TSU_API tsu_status_t tsu_ult_mutex_lock(tsu_ult_mutex_t *mutex);
/** Locks if the mutex is free; never waits.
 * @retval TSU_OK               taken.
 * @retval TSU_EAGAIN           held by someone (the caller included).
 * @retval TSU_ERR_NULL_POINTER mutex is NULL. */
TSU_API tsu_status_t tsu_ult_mutex_trylock(tsu_ult_mutex_t *mutex);
/** Unlocks; with waiters, the first one gets the mutex directly.
 * @retval TSU_OK               unlocked (or handed to a waiter).
 * @retval TSU_ERR_NULL_POINTER mutex is NULL.
 * @retval TSU_ERR_INVALID_ARG  the mutex is not locked. */
TSU_API tsu_status_t tsu_ult_mutex_unlock(tsu_ult_mutex_t *mutex);

/* Condition variable (no spurious wake-ups are promised either way: wait in a
 * loop on your predicate, as with pthreads). */
typedef struct tsu_ult_cond { uint64_t opaque[4]; } tsu_ult_cond_t;
#define TSU_ULT_COND_INITIALIZER {{0, 0, 0, 0}}
/** Sets a condition variable to no waiters (as TSU_ULT_COND_INITIALIZER).
 * @retval TSU_OK               initialized.
 * @retval TSU_ERR_NULL_POINTER cond is NULL. */
TSU_API tsu_status_t tsu_ult_cond_init(tsu_ult_cond_t *cond);
/** Checks that a condition variable may be discarded.
 * @retval TSU_OK               nobody waits on it.
 * @retval TSU_EAGAIN           threads wait on it: wake them first.
 * @retval TSU_ERR_NULL_POINTER cond is NULL. */
TSU_API tsu_status_t tsu_ult_cond_destroy(tsu_ult_cond_t *cond);
/** Unlocks `mutex` (which the caller must hold: not checked), waits for a
 * signal or broadcast, and locks `mutex` again before returning.
 * @retval TSU_OK               woken; the caller holds mutex again.
 * @retval TSU_ERR_NULL_POINTER cond or mutex is NULL. */
TSU_API tsu_status_t tsu_ult_cond_wait(tsu_ult_cond_t *cond, tsu_ult_mutex_t *mutex);
/** Wakes the longest waiting thread, if any.
 * @retval TSU_OK               done (also when nobody waited).
 * @retval TSU_ERR_NULL_POINTER cond is NULL. */
TSU_API tsu_status_t tsu_ult_cond_signal(tsu_ult_cond_t *cond);
/** Wakes every waiting thread.
 * @retval TSU_OK               done (also when nobody waited).
 * @retval TSU_ERR_NULL_POINTER cond is NULL. */
TSU_API tsu_status_t tsu_ult_cond_broadcast(tsu_ult_cond_t *cond);

/* Barrier of `count` threads (ULTs and pthreads may mix).  wait returns
 * TSU_ULT_BARRIER_SERIAL in exactly one of them per round, TSU_OK in the
 * others.  A zero-filled barrier must be initialized (count) before use. */
typedef struct tsu_ult_barrier { uint64_t opaque[6]; } tsu_ult_barrier_t;
#define TSU_ULT_BARRIER_SERIAL 2 /**< tsu_ult_barrier_wait's result in one thread per round */
/** Sets up a barrier for `count` threads (no round in progress).
 * @retval TSU_OK               initialized.
 * @retval TSU_ERR_NULL_POINTER barrier is NULL.
 * @retval TSU_ERR_INVALID_ARG  count is 0. */
TSU_API tsu_status_t tsu_ult_barrier_init(tsu_ult_barrier_t *barrier, uint32_t count);
/** Checks that a barrier may be discarded.
 * @retval TSU_OK               no thread waits in it.
 * @retval TSU_EAGAIN           a round is in progress (some threads wait).
 * @retval TSU_ERR_NULL_POINTER barrier is NULL. */
TSU_API tsu_status_t tsu_ult_barrier_destroy(tsu_ult_barrier_t *barrier);
/** Waits until `count` threads have called it in this round, then all go on
 * and the barrier is ready for the next round.
 * @retval TSU_ULT_BARRIER_SERIAL the last thread to arrive (one per round; a positive
 *                              value, not a status code).
 * @retval TSU_OK               the other threads of the round.
 * @retval TSU_ERR_NULL_POINTER barrier is NULL.
 * @retval TSU_ERR_INVALID_ARG  the barrier was never initialized (count 0). */
TSU_API tsu_status_t tsu_ult_barrier_wait(tsu_ult_barrier_t *barrier);

/* ------------------------------------------------------------------------- */
/* Thread-local keys (each ULT, and each pthread, has its own values)          */
/* ------------------------------------------------------------------------- */
typedef uint32_t tsu_ult_key_t;
#define TSU_ULT_KEYS_MAX 128u
/** Creates a key (process-wide, for every ULT and pthread).  destructor (may be
 * NULL) runs at a ULT's end for each non-NULL value, up to 4 rounds, as with
 * pthreads (pthreads' values: not called).  Needs no scheduler.
 * @retval TSU_OK               *key written.
 * @retval TSU_ERR_NULL_POINTER key is NULL.
 * @retval TSU_ERR_LIMIT        TSU_ULT_KEYS_MAX keys exist. */
TSU_API tsu_status_t tsu_ult_key_create(tsu_ult_key_t *key, void (*destructor)(void *));
/** Deletes a key; no destructor runs for its values.  The values threads set
 * for it are gone: a key created later (even with the same number) reads NULL
 * in every thread until that thread sets it.
 * @retval TSU_OK               deleted.
 * @retval TSU_ERR_INVALID_ARG  key >= TSU_ULT_KEYS_MAX, or not a live key. */
TSU_API tsu_status_t tsu_ult_key_delete(tsu_ult_key_t key);
/** Sets the calling thread's (ULT's or pthread's) value for `key`.
 * @retval TSU_OK               set.
 * @retval TSU_ERR_INVALID_ARG  key >= TSU_ULT_KEYS_MAX, or not a live key.
 * @retval TSU_ERR_NO_MEMORY    no memory for the ULT's table of values (its first
 *                              non-NULL value). */
TSU_API tsu_status_t tsu_ult_setspecific(tsu_ult_key_t key, const void *value);
/** The calling thread's value for `key`.
 * @return the value; NULL when unset or for key >= TSU_ULT_KEYS_MAX (a deleted key
 *         still gives the value set before its deletion). */
TSU_API void *tsu_ult_getspecific(tsu_ult_key_t key);

/* ------------------------------------------------------------------------- */
/* Threads on other ranks (seed 003)                                          */
/* ------------------------------------------------------------------------- */
/* A thread started with tsu_ult_spawn runs a function named by an id that
 * every rank registered (never a raw pointer), with its argument and its
 * exit value passed by value (at most TSU_ULT_ARG_MAX / TSU_ULT_VALUE_MAX
 * bytes).  It runs on the rank named, or with TSU_ULT_ANY_RANK on the least
 * loaded one; a rank with nothing to run may take a thread from a loaded rank
 * before it starts, but only one spawned with TSU_ULT_ANY_RANK or with
 * attr->migratable set (docs/ult.md, "Load balancing").  Only the
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

/** Collective (when tsunagi is initialized): every rank registers the same id
 * for the same function before any rank spawns with it.  fn NULL removes.
 * Needs no tsu_ult_init.  The id is set locally before the barrier, also when
 * the barrier fails.
 * @retval TSU_OK               registered (on every rank, when collective).
 * @retval TSU_ERR_INVALID_ARG  fn_id > TSU_ULT_FN_MAX.
 * @retval TSU_ERR_UNSUPPORTED  (collective) called from a completion callback or a
 *                              handler.
 * @retval TSU_ERR_BOOTSTRAP    (collective) the tsu_barrier failed. */
TSU_API tsu_status_t tsu_ult_register(uint32_t fn_id, tsu_ult_remote_fn_t fn);

/** Starts fn_id(arg) on `rank` (this rank included), or on a rank chosen by
 * the balancer with TSU_ULT_ANY_RANK.  A thread spawned to a named rank runs
 * there (tsu_rank() in it is `rank`), unless attr->migratable lets the
 * balancer move it; one spawned with TSU_ULT_ANY_RANK may be moved to an idle
 * rank before it starts.  attr: stack_size (honoured on the running rank,
 * wherever the thread moves), detached, migratable and name (the name is
 * kept on the spawning rank only).  *out (may be NULL when
 * detached) is joined with tsu_ult_join_value (or tsu_ult_join, which
 * gives the value NULL).  Without tsunagi (a job of one rank) an unregistered
 * id is not refused here: the join returns TSU_ERR_INVALID_ARG.
 * @retval TSU_OK               started or queued for its rank (failures to start it
 *                              there reach the join).
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run.
 * @retval TSU_ERR_INVALID_ARG  a bad attr (as tsu_ult_create), fn_id > TSU_ULT_FN_MAX
 *                              or (with tsunagi) not registered here, arg_len >
 *                              TSU_ULT_ARG_MAX, or arg NULL with arg_len > 0.
 * @retval TSU_ERR_NULL_POINTER out is NULL for a joinable thread.
 * @retval TSU_ERR_BAD_RANK     rank >= job size and not TSU_ULT_ANY_RANK.
 * @retval TSU_ERR_PEER_LOST    rank is known to be lost.
 * @retval TSU_ERR_NO_MEMORY    no memory for the thread's record. */
TSU_API tsu_status_t tsu_ult_spawn(tsu_ult_t *out, uint32_t rank, uint32_t fn_id, const void *arg,
                                   size_t arg_len, const tsu_ult_attr_t *attr);

/** Joins a spawned thread and copies its exit value (up to cap bytes; *len
 * (may be NULL) gets its full length).  Never hangs on a lost rank.  As
 * tsu_ult_join otherwise (once per thread, not detached, not itself).
 * @retval TSU_OK               ended; the value copied; the handle is gone.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run.
 * @retval TSU_ERR_NULL_POINTER thread is NULL.
 * @retval TSU_ERR_INVALID_ARG  thread was not made by tsu_ult_spawn (use tsu_ult_join),
 *                              is detached, is being joined, or is the caller; or its
 *                              function id is not registered on the rank that ran
 *                              it: the handle is then not freed and nothing copied
 *                              (release it with tsu_ult_detach).
 * @retval TSU_ERR_TRUNCATED    cap was too small (the value is cut), or the function
 *                              wrote more than TSU_ULT_VALUE_MAX bytes (cut to that);
 *                              the handle is gone.
 * @retval TSU_ERR_PEER_LOST    the rank running it was lost before it ended; the
 *                              handle is gone.
 * @retval TSU_ERR_NOT_INITIALIZED also: tsu_finalize ran before the thread (on another
 *                              rank) had sent its value; the handle is gone.
 * @retval TSU_ERR_UNREACHABLE  its spawn could not be sent to its rank; the handle is
 *                              gone.
 * @retval TSU_ERR_NO_MEMORY    the running rank could not create the thread or give
 *                              it a stack; the handle is gone. */
TSU_API tsu_status_t tsu_ult_join_value(tsu_ult_t thread, void *value, size_t cap, size_t *len);

/** The rank that runs (or ran) a spawned thread, as far as its creator knows
 * (it changes when another rank takes the thread before it starts); this rank
 * for a thread made by tsu_ult_create.
 * @retval TSU_OK               *rank written.
 * @retval TSU_ERR_NULL_POINTER thread or rank is NULL.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run. */
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
/** This rank's counters (sums over its workers).
 * @retval TSU_OK               *out written.
 * @retval TSU_ERR_NULL_POINTER out is NULL.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run (*out is zeroed). */
TSU_API tsu_status_t tsu_ult_counters(tsu_ult_counters_t *out);

/** Writes the counters, and one line per live ULT (id, name, state, where it
 * was created) to stderr.  Also printed by tsu_ult_finalize when TSU_STATS=1.
 * @retval TSU_OK               written.
 * @retval TSU_ERR_NOT_INITIALIZED the scheduler does not run. */
TSU_API tsu_status_t tsu_ult_dump(void);

#ifdef __cplusplus
}
#endif

#endif /* TSUNAGI_ULT_H */
