/** @file am.h
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
/** Handler ids are 0 .. TSU_AM_MAX_HANDLER. */
#define TSU_AM_MAX_HANDLER 65279u

/** Identifies the message a handler is running for (valid during the call). */
typedef struct tsu_am_token_s tsu_am_token_t;

/** `payload` is NULL when len is 0.  Medium: the message's own copy (the
 * handler may modify it; gone after return).  Long: the target memory the
 * payload was written to. */
typedef void (*tsu_am_handler_t)(tsu_am_token_t *token, const uint64_t *args, uint32_t nargs,
                                 void *payload, size_t len, void *ctx);

/** Registers a handler.  Collective, blocking (drives progress): every rank
 * registers the same id; returns when every rank has, so no message can find
 * it missing.  fn NULL unregisters.  Not from a handler or callback.
 * @retval TSU_OK               registered on every rank.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_UNSUPPORTED  called from a handler or a completion callback.
 * @retval TSU_ERR_INVALID_ARG  id > TSU_AM_MAX_HANDLER.
 * @retval TSU_ERR_NO_MEMORY    no memory for the handler's entry.
 * @retval TSU_ERR_PEER_LOST    a rank it waits for is lost (the handler is set here).
 * @retval TSU_ERR_UNREACHABLE  no transport reaches a rank it must synchronize with. */
TSU_API tsu_status_t tsu_am_register(uint32_t id, tsu_am_handler_t fn, void *ctx);

/** Largest medium payload (TSU_AM_MEDIUM_MAX, bounded by the message slot).
 * @return bytes; 0 when tsunagi is not initialized. */
TSU_API size_t tsu_am_medium_max(void);

/** The rank that sent the message `token` belongs to.  Needs no initialization
 * check: tokens exist only inside handlers.
 * @retval TSU_OK               *rank written.
 * @retval TSU_ERR_NULL_POINTER token or rank is NULL. */
TSU_API tsu_status_t tsu_am_source(const tsu_am_token_t *token, uint32_t *rank);

/** Sends a short message (arguments only) to handler `id` on rank dst.
 * args may be NULL when nargs is 0; nargs <= TSU_AM_MAX_ARGS.
 * @retval TSU_OK               sent; the callback has run (TSU_OK) before the return.
 * @retval TSU_EAGAIN           the target's message queue is full: nothing was sent,
 *                              retry (not from a handler in a loop).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK     dst >= job size.
 * @retval TSU_ERR_INVALID_ARG  id > TSU_AM_MAX_HANDLER or nargs > TSU_AM_MAX_ARGS.
 * @retval TSU_ERR_NULL_POINTER args is NULL with nargs > 0.
 * @retval TSU_ERR_UNREACHABLE  no transport carries messages to dst.
 * @retval TSU_ERR_PEER_LOST    dst is lost. */
TSU_API tsu_status_t tsu_try_am_short(uint32_t dst, uint32_t id, const uint64_t *args,
                                      uint32_t nargs, tsu_cb_t cb);
/** Sends a medium message: arguments and payload[0, len) (len <=
 * tsu_am_medium_max()), copied out before the call returns.
 * @retval TSU_OK               sent; the callback has run (TSU_OK) before the return.
 * @retval TSU_EAGAIN           the target's message queue is full: nothing was sent,
 *                              retry (not from a handler in a loop).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK     dst >= job size.
 * @retval TSU_ERR_INVALID_ARG  id > TSU_AM_MAX_HANDLER or nargs > TSU_AM_MAX_ARGS,
 *                              or len > tsu_am_medium_max().
 * @retval TSU_ERR_NULL_POINTER args or payload is NULL with nargs or len > 0.
 * @retval TSU_ERR_UNREACHABLE  no transport carries messages to dst.
 * @retval TSU_ERR_PEER_LOST    dst is lost. */
TSU_API tsu_status_t tsu_try_am_medium(uint32_t dst, uint32_t id, const uint64_t *args,
                                       uint32_t nargs, const void *payload, size_t len,
                                       tsu_cb_t cb);
/** Writes payload[0, len) to `dst_addr` (on rank dst: a shared or registered
 * segment), then runs the handler there with a pointer to it.  A bad
 * destination fails at the target: the callback gets the error
 * (TSU_ERR_OUT_OF_BOUNDS, TSU_ERR_BAD_SEGMENT), nothing is written and no
 * handler runs.  Any length the target's segment holds (MiBs included), on
 * any node.
 * @retval TSU_OK               accepted; the callback gets TSU_OK, or
 *                              TSU_ERR_OUT_OF_BOUNDS / TSU_ERR_BAD_SEGMENT (nothing
 *                              written), TSU_ERR_PEER_LOST (another node),
 *                              TSU_ERR_SYSTEM / TSU_ERR_LIMIT (mapping or Cross Memory
 *                              Attach failed).  On the caller's node it has run
 *                              before the return.
 * @retval TSU_EAGAIN           the target's message queue is full: nothing was sent,
 *                              retry (not from a handler in a loop).
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_BAD_RANK     dst >= job size.
 * @retval TSU_ERR_INVALID_ARG  id > TSU_AM_MAX_HANDLER or nargs > TSU_AM_MAX_ARGS,
 *                              or dst_addr.rank != dst.
 * @retval TSU_ERR_NULL_POINTER args or payload is NULL with nargs or len > 0.
 * @retval TSU_ERR_UNREACHABLE  no transport reaches dst, or a node peer's memory is
 *                              not reachable from this process.
 * @retval TSU_ERR_UNSUPPORTED  the node peer's segment cannot be written from here.
 * @retval TSU_ERR_NO_MEMORY    no memory to track the request (another node).
 * @retval TSU_ERR_PEER_LOST    dst is lost. */
TSU_API tsu_status_t tsu_try_am_long(uint32_t dst, uint32_t id, const uint64_t *args,
                                     uint32_t nargs, const void *payload, size_t len,
                                     tsu_gaddr_t dst_addr, tsu_cb_t cb);

/** From a request handler only: sends one short/medium message back to the
 * requester.  Queued inside the layer if the ring is full (never TSU_EAGAIN).
 * @retval TSU_OK               sent or queued.
 * @retval TSU_ERR_NOT_INITIALIZED called before tsu_init or after tsu_finalize.
 * @retval TSU_ERR_NULL_POINTER token is NULL, or args / payload is NULL with nargs /
 *                              len > 0.
 * @retval TSU_ERR_UNSUPPORTED  token is a reply's (replies cannot reply), or the
 *                              message was already replied to.
 * @retval TSU_ERR_INVALID_ARG  id > TSU_AM_MAX_HANDLER, nargs > TSU_AM_MAX_ARGS or
 *                              len > tsu_am_medium_max().
 * @retval TSU_ERR_UNREACHABLE  no transport carries messages to the requester.
 * @retval TSU_ERR_PEER_LOST    the requester is lost. */
TSU_API tsu_status_t tsu_am_reply(tsu_am_token_t *token, uint32_t id, const uint64_t *args,
                                  uint32_t nargs, const void *payload, size_t len);

#ifdef __cplusplus
}
#endif

#endif /**< TSUNAGI_AM_H */
