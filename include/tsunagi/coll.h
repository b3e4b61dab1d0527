/** @file coll.h
 * tsunagi collectives and teams (C11).  Included by tsunagi.h; compiles alone.
 *
 * Collectives are non-blocking: tsu_try_* starts one and returns; its callback
 * runs exactly once when this rank's part is done (results written).  They
 * never say TSU_EAGAIN (messages wait in the layer when queues are full).
 * Every member of a team starts the team's collectives in the same order, one
 * thread at a time per team (as in MPI); several may be in flight at once.
 * Buffers must stay valid until the callback.  Algorithms are logarithmic in
 * the team size: dissemination barrier, binomial broadcast/reduce/gather,
 * recursive doubling allreduce (reduce-scatter + allgather by recursive
 * halving/doubling from TSU_COLL_LARGE_MIN bytes), Bruck allgather; alltoall
 * is direct.  Teams whose members share a node run every collective through
 * shared memory instead (flags and data in each rank's layer area, large data
 * staged there or read by Cross Memory Attach; TSU_COLL_NODE=0: messages), and
 * teams spread over nodes run barrier, broadcast, reduce and allreduce
 * hierarchically (node, leaders, node).  A callback's status is TSU_OK, or the error of a failed local
 * step (e.g. cross-memory access refused on the optional direct path).
 * A team of one completes inside the call.
 * When a member of the team is lost (a node gone silent, or a node peer whose
 * process exited: peer-loss detection),
 * its collectives in flight and later ones complete with TSU_ERR_PEER_LOST
 * instead of waiting forever.
 */
#ifndef TSUNAGI_COLL_H
#define TSUNAGI_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "tsunagi/tsunagi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t tsu_team_t;
#define TSU_TEAM_WORLD ((tsu_team_t)0)       /**< every rank of the job          */
#define TSU_TEAM_NULL ((tsu_team_t)UINT32_MAX) /**< "not a member" (split color<0) */

typedef enum {
  TSU_DT_INT8 = 0, TSU_DT_UINT8 = 1, TSU_DT_INT16 = 2, TSU_DT_UINT16 = 3,
  TSU_DT_INT32 = 4, TSU_DT_UINT32 = 5, TSU_DT_INT64 = 6, TSU_DT_UINT64 = 7,
  TSU_DT_FLOAT = 8, TSU_DT_DOUBLE = 9
} tsu_dtype_t;

typedef enum {
  TSU_OP_SUM = 0, TSU_OP_PROD = 1, TSU_OP_MIN = 2, TSU_OP_MAX = 3,
  TSU_OP_BAND = 4, /**< integer types only */
  TSU_OP_BOR = 5   /**< integer types only */
} tsu_op_t;

/** Collective over `parent`, blocking (drives progress; not from a handler or
 * callback): members with the same color >= 0 form a new team, ordered by
 * key, then by parent rank.  color < 0: *out = TSU_TEAM_NULL.
 * @retval TSU_OK               *out written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER out is NULL.
 * @retval TSU_ERR_UNSUPPORTED  called from a handler or a completion callback.
 * @retval TSU_ERR_INVALID_ARG  parent is not a valid team.
 * @retval TSU_ERR_PEER_LOST    a member of parent is lost. */
TSU_API tsu_status_t tsu_team_split(tsu_team_t parent, int32_t color, uint32_t key,
                                    tsu_team_t *out);
/** Local: forgets a team (no collective of it may be in flight).
 * @retval TSU_OK               forgotten.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is TSU_TEAM_WORLD or not a valid team. */
TSU_API tsu_status_t tsu_team_free(tsu_team_t team);
/** The caller's rank in the team.
 * @retval TSU_OK               *rank written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER rank is NULL.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank. */
TSU_API tsu_status_t tsu_team_rank(tsu_team_t team, uint32_t *rank);
/** The number of members of the team.
 * @retval TSU_OK               *size written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER size is NULL.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank. */
TSU_API tsu_status_t tsu_team_size(tsu_team_t team, uint32_t *size);
/** The job rank of the team's member `team_rank`.
 * @retval TSU_OK               *rank written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER rank is NULL.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank.
 * @retval TSU_ERR_BAD_RANK     team_rank >= team size. */
TSU_API tsu_status_t tsu_team_job_rank(tsu_team_t team, uint32_t team_rank, uint32_t *rank);

/** Starts a barrier of the team: the callback runs once every member has
 * entered it.
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank. */
TSU_API tsu_status_t tsu_try_barrier(tsu_team_t team, tsu_cb_t cb);
/** root's buf[0, bytes) to every member's buf.
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank.
 * @retval TSU_ERR_NULL_POINTER buf is NULL with bytes > 0.
 * @retval TSU_ERR_BAD_RANK     root >= team size. */
TSU_API tsu_status_t tsu_try_broadcast(tsu_team_t team, void *buf, size_t bytes, uint32_t root,
                                       tsu_cb_t cb);
/** dst (root only; may equal src) = op over all members' src[0, count).
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank, type or op is
 *                              unknown, or a bitwise op is given a floating type.
 * @retval TSU_ERR_BAD_RANK     root >= team size.
 * @retval TSU_ERR_NULL_POINTER src (or dst at the root) is NULL with count > 0. */
TSU_API tsu_status_t tsu_try_reduce(tsu_team_t team, const void *src, void *dst, size_t count,
                                    tsu_dtype_t type, tsu_op_t op, uint32_t root, tsu_cb_t cb);
/** Every member's dst = op over all members' src (bit-identical everywhere).
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank, type or op is
 *                              unknown, or a bitwise op is given a floating type.
 * @retval TSU_ERR_NULL_POINTER src or dst is NULL with count > 0. */
TSU_API tsu_status_t tsu_try_allreduce(tsu_team_t team, const void *src, void *dst, size_t count,
                                       tsu_dtype_t type, tsu_op_t op, tsu_cb_t cb);
/** root's dst[i*bytes, +bytes) = member i's src[0, bytes).
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank.
 * @retval TSU_ERR_BAD_RANK     root >= team size.
 * @retval TSU_ERR_NULL_POINTER src (or dst at the root) is NULL with bytes > 0. */
TSU_API tsu_status_t tsu_try_gather(tsu_team_t team, const void *src, void *dst, size_t bytes,
                                    uint32_t root, tsu_cb_t cb);
/** Every member's dst[i*bytes, +bytes) = member i's src[0, bytes).
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank.
 * @retval TSU_ERR_NULL_POINTER src or dst is NULL with bytes > 0. */
TSU_API tsu_status_t tsu_try_allgather(tsu_team_t team, const void *src, void *dst, size_t bytes,
                                       tsu_cb_t cb);
/** dst[i*bytes, +bytes) on member j = src[j*bytes, +bytes) of member i.
 * @retval TSU_OK               started; the callback gets TSU_OK, TSU_ERR_PEER_LOST
 *                              (a member is lost) or the error of a failed local step.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  team is not a valid team of this rank.
 * @retval TSU_ERR_NULL_POINTER src or dst is NULL with bytes > 0. */
TSU_API tsu_status_t tsu_try_alltoall(tsu_team_t team, const void *src, void *dst, size_t bytes,
                                      tsu_cb_t cb);

#ifdef __cplusplus
}
#endif

#endif /**< TSUNAGI_COLL_H */
