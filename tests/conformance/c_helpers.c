/* C callers may pass any int as an enum: the tests use this helper to hand
 * tsunagi op and type values that C++ cannot form without undefined behaviour. */
#include "tsunagi/tsunagi.h"

tsu_status_t mp_try_atomic_raw(tsu_gaddr_t target, int op, int type, const void *operand,
                               const void *compare, void *result, tsu_cb_t cb);

tsu_status_t mp_try_atomic_raw(tsu_gaddr_t target, int op, int type, const void *operand,
                               const void *compare, void *result, tsu_cb_t cb) {
  return tsu_try_atomic(target, (tsu_aop_t)op, (tsu_atype_t)type, operand, compare, result, cb);
}
