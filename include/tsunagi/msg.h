/** @file msg.h
 * tsunagi tagged messages (C11): MPI-like two-sided send/receive with
 * matching on source and tag.  Included by tsunagi.h; compiles on its own.
 *
 * Matching: a receive (src, tag, mask) matches a message from `s` with tag `t`
 * when (src == TSU_ANY_SOURCE || src == s) && ((t ^ tag) & mask) == 0.
 * mask TSU_TAG_EXACT compares every bit; TSU_TAG_ANY (0) matches any tag.
 * A message matches the earliest posted matching receive; a receive matches
 * the earliest arrived matching message.  Non-overtaking: two messages from
 * one thread to one rank that both match a receive are matched in send order.
 *
 * Protocols (docs/messaging.md): eager up to TSU_EAGER_MAX (copied through
 * the target's message queue; to a rank on another node up to
 * TSU_OFI_EAGER_MAX or TSU_UDP_EAGER_MAX, 32 KiB), rendezvous above (the receiver copies straight
 * from the sender's buffer: one copy), and seed 004's single-copy eager: from
 * TSU_SCEAGER_MIN up, a sender that finds the matching receive already posted
 * and its buffer in a shared segment (tsu_segment_alloc or the main segment)
 * copies straight into it, taking the receiver's posted queue with a try-lock
 * and falling back to eager when the lock is busy.
 *
 * Completion: a send's callback runs once its buffer may be reused (eager and
 * single-copy eager: before tsu_try_send returns; rendezvous: when the receiver
 * has copied the data).  A receive's callback runs after the data and
 * *status are written; if the receive matches an already arrived message it
 * completes inside tsu_try_recv.  A message longer than the receive buffer
 * fills the buffer, never writes past it, and completes the receive with
 * TSU_ERR_TRUNCATED (status->length is the message's full length).
 * All tagged requests of the job must be complete before tsu_finalize.
 */
#ifndef TSUNAGI_MSG_H
#define TSUNAGI_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "tsunagi/tsunagi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSU_ANY_SOURCE UINT32_MAX
#define TSU_TAG_EXACT UINT64_MAX
#define TSU_TAG_ANY ((uint64_t)0)

typedef struct tsu_msg_status_s {
  uint32_t source;    /**< sender's rank                                   */
  int32_t error;      /**< TSU_OK, TSU_ERR_TRUNCATED, TSU_ERR_CANCELED or
                         TSU_ERR_PEER_LOST (the sender's node is gone)    */
  uint64_t tag;       /**< the message's tag                               */
  size_t length;      /**< the message's length (may exceed the buffer)    */
} tsu_msg_status_t;

/** Names a posted receive (for tsu_recv_cancel). */
typedef uint64_t tsu_recv_t;

/** Sends buf[0, len) to `dst` with `tag`.  buf must stay valid and unchanged
 * until the callback.  The callback gets TSU_ERR_PEER_LOST if `dst` is lost
 * before it took the data.
 * @retval TSU_OK               accepted (eager and single-copy eager: the callback has
 *                              run before the return; rendezvous: it runs when the
 *                              receiver has copied the data).
 * @retval TSU_EAGAIN           the target's queue is full: nothing was sent, retry.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK     dst >= job size.
 * @retval TSU_ERR_NULL_POINTER buf is NULL with len > 0.
 * @retval TSU_ERR_UNREACHABLE  no transport carries messages to dst.
 * @retval TSU_ERR_NO_MEMORY    no memory for a rendezvous record.
 * @retval TSU_ERR_PEER_LOST    dst is already lost. */
TSU_API tsu_status_t tsu_try_send(uint32_t dst, uint64_t tag, const void *buf, size_t len,
                                  tsu_cb_t cb);

/** Posts a receive of up to `cap` bytes into buf.  status (may be NULL) is
 * written before the callback.  handle (may be NULL) names the receive for
 * tsu_recv_cancel.  buf in a shared segment makes single-copy eager possible.
 * A receive naming a source that is lost (or whose data stops coming because
 * it is lost) completes with TSU_ERR_PEER_LOST, unless a message from it had
 * already arrived whole; TSU_ANY_SOURCE receives stay posted.  Never
 * TSU_EAGAIN: posted receives are not bounded.
 * @retval TSU_OK               posted (or already matched: the callback may have run).
 *                              The callback gets TSU_OK, TSU_ERR_TRUNCATED,
 *                              TSU_ERR_CANCELED or TSU_ERR_PEER_LOST.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER buf is NULL with cap > 0.
 * @retval TSU_ERR_BAD_RANK     src is neither TSU_ANY_SOURCE nor < job size.
 * @retval TSU_ERR_NO_MEMORY    no memory for the receive's record. */
TSU_API tsu_status_t tsu_try_recv(uint32_t src, uint64_t tag, uint64_t mask, void *buf, size_t cap,
                                  tsu_msg_status_t *status, tsu_cb_t cb, tsu_recv_t *handle);

/** Non-blocking probe for a matching message that has arrived and is not yet
 * received.  Runs one progress pass first.
 * @retval TSU_OK               one is waiting: *status describes it.
 * @retval TSU_EAGAIN           none (yet).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER status is NULL.
 * @retval TSU_ERR_BAD_RANK     src is neither TSU_ANY_SOURCE nor < job size. */
TSU_API tsu_status_t tsu_msg_probe(uint32_t src, uint64_t tag, uint64_t mask,
                                   tsu_msg_status_t *status);

/** Cancels a posted receive that has not matched.
 * @retval TSU_OK               canceled: its callback ran (before the return) with
 *                              TSU_ERR_CANCELED.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_INVALID_ARG  it already matched (its callback runs with its real
 *                              status) or the handle is unknown. */
TSU_API tsu_status_t tsu_recv_cancel(tsu_recv_t handle);

/** This rank's protocol counters (cumulative), for tests and benchmarks. */
typedef struct tsu_msg_counters_s {
  uint64_t eager;         /**< sends that went eager through the queue            */
  uint64_t sceager;       /**< sends copied straight into a posted receive        */
  uint64_t sceager_busy;  /**< single-copy eager tried, posted queue lock busy    */
  uint64_t sceager_miss;  /**< single-copy eager tried, no reachable posted match */
  uint64_t rendezvous;    /**< sends by rendezvous                                */
  uint64_t unexpected;    /**< arrivals that found no posted receive              */
} tsu_msg_counters_t;
/** This rank's protocol counters (cumulative), for tests and benchmarks.
 * @retval TSU_OK               *out written.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER out is NULL. */
TSU_API tsu_status_t tsu_msg_counters(tsu_msg_counters_t *out);

#ifdef __cplusplus
}
#endif

#endif /**< TSUNAGI_MSG_H */
