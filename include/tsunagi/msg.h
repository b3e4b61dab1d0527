/*
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
 * the target's message queue), rendezvous above (the receiver copies straight
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
  uint32_t source;    /* sender's rank                                   */
  int32_t error;      /* TSU_OK, TSU_ERR_TRUNCATED, TSU_ERR_CANCELED or
                         TSU_ERR_PEER_LOST (the sender's node is gone)    */
  uint64_t tag;       /* the message's tag                               */
  size_t length;      /* the message's length (may exceed the buffer)    */
} tsu_msg_status_t;

/* Names a posted receive (for tsu_recv_cancel). */
typedef uint64_t tsu_recv_t;

/* Sends buf[0, len) to `dst` with `tag`.  buf must stay valid and unchanged
 * until the callback.  TSU_EAGAIN when the target's queue is full.  The
 * callback gets TSU_ERR_PEER_LOST if `dst` is lost before it took the data;
 * a send to a rank already lost returns TSU_ERR_PEER_LOST. */
TSU_API tsu_status_t tsu_try_send(uint32_t dst, uint64_t tag, const void *buf, size_t len,
                                  tsu_cb_t cb);

/* Posts a receive of up to `cap` bytes into buf.  status (may be NULL) is
 * written before the callback.  handle (may be NULL) names the receive for
 * tsu_recv_cancel.  buf in a shared segment makes single-copy eager possible.
 * A receive naming a source that is lost (or whose data stops coming because
 * it is lost) completes with TSU_ERR_PEER_LOST, unless a message from it had
 * already arrived whole; TSU_ANY_SOURCE receives stay posted. */
TSU_API tsu_status_t tsu_try_recv(uint32_t src, uint64_t tag, uint64_t mask, void *buf, size_t cap,
                                  tsu_msg_status_t *status, tsu_cb_t cb, tsu_recv_t *handle);

/* Non-blocking probe: TSU_OK and *status if a matching message has arrived and
 * is not yet received, TSU_EAGAIN if none.  Runs one progress pass first. */
TSU_API tsu_status_t tsu_msg_probe(uint32_t src, uint64_t tag, uint64_t mask,
                                   tsu_msg_status_t *status);

/* Cancels a posted receive that has not matched: TSU_OK and its callback runs
 * (before return) with TSU_ERR_CANCELED.  TSU_ERR_INVALID_ARG if it already
 * matched (its callback runs with its real status) or is unknown. */
TSU_API tsu_status_t tsu_recv_cancel(tsu_recv_t handle);

/* This rank's protocol counters (cumulative), for tests and benchmarks. */
typedef struct tsu_msg_counters_s {
  uint64_t eager;         /* sends that went eager through the queue            */
  uint64_t sceager;       /* sends copied straight into a posted receive        */
  uint64_t sceager_busy;  /* single-copy eager tried, posted queue lock busy    */
  uint64_t sceager_miss;  /* single-copy eager tried, no reachable posted match */
  uint64_t rendezvous;    /* sends by rendezvous                                */
  uint64_t unexpected;    /* arrivals that found no posted receive              */
} tsu_msg_counters_t;
TSU_API tsu_status_t tsu_msg_counters(tsu_msg_counters_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TSUNAGI_MSG_H */
