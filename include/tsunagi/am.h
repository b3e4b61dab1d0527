/*
 * tsunagi active messages (C11).  Included by tsunagi.h; compiles on its own.
 *
 * A handler is a function every rank registers under the same id (collective
 * registration).  A message names a handler, carries up to TSU_AM_MAX_ARGS
 * 64-bit arguments and a payload:
 *   short   arguments only;
 *   medium  a payload of up to tsu_am_medium_max() bytes, copied into the
 *           message and handed to the handler (valid during the call only);
 *   long    a payload written first into the target's memory at a global
 *           address (RMA), then the handler runs with a pointer to it.
 * Delivery is exactly once, in order per (sending thread, target rank).
 *
 * Handlers run in progress context: on the progress thread, or inside
 * tsu_progress() (manual mode).  They must not block: blocking calls
 * (tsu_quiet, tsu_counter_wait, tsu_barrier, futures' get) refuse with
 * TSU_ERR_UNSUPPORTED there.  A handler may issue tsu_try_* requests (which
 * may say TSU_EAGAIN: it must not spin on them) and may send at most one reply
 * with tsu_am_reply (a second one, or a reply from a reply handler, is
 * TSU_ERR_UNSUPPORTED).  Replies never say TSU_EAGAIN: when the ring is full
 * the layer queues them and sends them in order.
 *
 * Sender completion: the callback of a tsu_try_am_* call runs when the
 * payload has been copied out of the caller's buffer (the message is in the
 * target's queue).  Intra-node this is before tsu_try_am_* returns (like
 * bypassed RMA, docs/design-decisions.md).  A long AM to a rank on another
 * node is the exception: its callback runs once the target has written the
 * payload and run the handler (or with the target's error, or with
 * TSU_ERR_PEER_LOST when the target is lost); the caller's buffer is free
 * as soon as tsu_try_am_long returns.
 */
#ifndef TSUNAGI_AM_H
#define TSUNAGI_AM_H

#include <stddef.h>
#include <stdint.h>

#include "tsunagi/tsunagi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSU_AM_MAX_ARGS 4u
/* Handler ids are 0 .. TSU_AM_MAX_HANDLER. */
#define TSU_AM_MAX_HANDLER 65279u

/* Identifies the message a handler is running for (valid during the call). */
typedef struct tsu_am_token_s tsu_am_token_t;

/* `payload` is NULL when len is 0.  Medium: the message's own copy (the
 * handler may modify it; gone after return).  Long: the target memory the
 * payload was written to. */
typedef void (*tsu_am_handler_t)(tsu_am_token_t *token, const uint64_t *args, uint32_t nargs,
                                 void *payload, size_t len, void *ctx);

/* Collective, blocking (drives progress): every rank registers the same id;
 * returns when every rank has, so no message can find it missing.  fn NULL
 * unregisters.  Not from a handler or callback.  TSU_ERR_PEER_LOST (the
 * handler is set here) when a rank it waits for is lost. */
TSU_API tsu_status_t tsu_am_register(uint32_t id, tsu_am_handler_t fn, void *ctx);

/* Largest medium payload (TSU_AM_MEDIUM_MAX, bounded by the message slot). */
TSU_API size_t tsu_am_medium_max(void);

/* The rank that sent the message `token` belongs to. */
TSU_API tsu_status_t tsu_am_source(const tsu_am_token_t *token, uint32_t *rank);

/* args may be NULL when nargs is 0; nargs <= TSU_AM_MAX_ARGS. */
TSU_API tsu_status_t tsu_try_am_short(uint32_t dst, uint32_t id, const uint64_t *args,
                                      uint32_t nargs, tsu_cb_t cb);
TSU_API tsu_status_t tsu_try_am_medium(uint32_t dst, uint32_t id, const uint64_t *args,
                                       uint32_t nargs, const void *payload, size_t len,
                                       tsu_cb_t cb);
/* Writes payload[0, len) to `dst_addr` (on rank dst: a shared or registered
 * segment), then runs the handler there with a pointer to it.  A bad
 * destination fails at the target: the callback gets the error
 * (TSU_ERR_OUT_OF_BOUNDS, TSU_ERR_BAD_SEGMENT), nothing is written and no
 * handler runs.  Any length the target's segment holds (MiBs included), on
 * any node. */
TSU_API tsu_status_t tsu_try_am_long(uint32_t dst, uint32_t id, const uint64_t *args,
                                     uint32_t nargs, const void *payload, size_t len,
                                     tsu_gaddr_t dst_addr, tsu_cb_t cb);

/* From a request handler only: sends one short/medium message back to the
 * requester.  Queued inside the layer if the ring is full (never TSU_EAGAIN). */
TSU_API tsu_status_t tsu_am_reply(tsu_am_token_t *token, uint32_t id, const uint64_t *args,
                                  uint32_t nargs, const void *payload, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TSUNAGI_AM_H */
