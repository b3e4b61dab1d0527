// Tagged messages: tsu_try_send, tsu_try_recv, tsu_msg_probe, tsu_recv_cancel.
#include "api/api_common.hpp"
#include "api/layers.hpp"

using namespace tsu;
using namespace tsu::api;

extern "C" {

tsu_status_t tsu_try_send(uint32_t dst, uint64_t tag, const void* buf, size_t len, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_send");
  return layers(*rt).msg.send(dst, tag, buf, len, cb);
}

tsu_status_t tsu_try_recv(uint32_t src, uint64_t tag, uint64_t mask, void* buf, size_t cap,
                          tsu_msg_status_t* status, tsu_cb_t cb, tsu_recv_t* handle) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_recv");
  return layers(*rt).msg.recv(src, tag, mask, buf, cap, status, cb, handle);
}

tsu_status_t tsu_msg_probe(uint32_t src, uint64_t tag, uint64_t mask, tsu_msg_status_t* status) {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized("tsu_msg_probe");
  return layers(*rt).msg.probe(src, tag, mask, status);
}

tsu_status_t tsu_recv_cancel(tsu_recv_t handle) {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized("tsu_recv_cancel");
  return layers(*rt).msg.cancel(handle);
}

tsu_status_t tsu_msg_counters(tsu_msg_counters_t* out) {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized("tsu_msg_counters");
  if (!out) return core::fail(TSU_ERR_NULL_POINTER, "tsu_msg_counters: out is NULL");
  layers(*rt).msg.counters(*out);
  return TSU_OK;
}

}  // extern "C"
