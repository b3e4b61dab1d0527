// Active messages: tsu_am_register, tsu_try_am_*, tsu_am_reply.
#include "api/api_common.hpp"
#include "api/layers.hpp"

using namespace tsu;
using namespace tsu::api;

namespace tsu::api {
namespace {
void reserve_layer_areas(const core::Config& cfg, uint32_t size, runtime::LayerAreaPlan& plan) {
  plan.reserve(kMsgAreaId, msg::MsgLayer::area_bytes(cfg, size));
  plan.reserve(kCollAreaId, coll::CollLayer::area_bytes());
}

std::unique_ptr<runtime::Extension> make_layers(runtime::Runtime& rt, std::string& error) {
  auto l = std::unique_ptr<Layers>(new (std::nothrow) Layers(rt));
  if (!l) error = "cannot allocate the messaging layers";
  return l;
}
}  // namespace

const runtime::ExtensionFactory kLayersFactory = {reserve_layer_areas, make_layers};

tsu_status_t layers_sync(runtime::Runtime& rt, const char* fn) noexcept {
  const tsu_status_t st = layers(rt).am.sync_all();
  if (st != TSU_OK) return core::fail(st, "%s: synchronizing the ranks failed", fn);
  return TSU_OK;
}
}  // namespace tsu::api

extern "C" {

tsu_status_t tsu_am_register(uint32_t id, tsu_am_handler_t fn, void* ctx) {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized("tsu_am_register");
  if (runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_am_register: collective; not from a handler or callback");
  if (id > TSU_AM_MAX_HANDLER)
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_am_register: id %u > %u", id, TSU_AM_MAX_HANDLER);
  const tsu_status_t st = layers(*rt).am.set_user_handler(id, fn, ctx);
  if (st != TSU_OK) return core::fail(st, "tsu_am_register: cannot register id %u", id);
  return layers_sync(*rt, "tsu_am_register");
}

size_t tsu_am_medium_max(void) {
  Runtime* rt = live_runtime();
  return rt ? layers(*rt).am.medium_max() : 0;
}

tsu_status_t tsu_am_source(const tsu_am_token_t* token, uint32_t* rank) {
  if (!token || !rank) return core::fail(TSU_ERR_NULL_POINTER, "tsu_am_source: NULL argument");
  *rank = token->src;
  return TSU_OK;
}

tsu_status_t tsu_try_am_short(uint32_t dst, uint32_t id, const uint64_t* args, uint32_t nargs,
                              tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_am_short");
  return layers(*rt).am.send_user("tsu_try_am_short", dst, id, args, nargs, nullptr, 0, nullptr,
                                  cb);
}

tsu_status_t tsu_try_am_medium(uint32_t dst, uint32_t id, const uint64_t* args, uint32_t nargs,
                               const void* payload, size_t len, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_am_medium");
  return layers(*rt).am.send_user("tsu_try_am_medium", dst, id, args, nargs, payload, len,
                                  nullptr, cb);
}

tsu_status_t tsu_try_am_long(uint32_t dst, uint32_t id, const uint64_t* args, uint32_t nargs,
                             const void* payload, size_t len, tsu_gaddr_t dst_addr, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_am_long");
  return layers(*rt).am.send_user("tsu_try_am_long", dst, id, args, nargs, payload, len,
                                  &dst_addr, cb);
}

tsu_status_t tsu_am_reply(tsu_am_token_t* token, uint32_t id, const uint64_t* args,
                          uint32_t nargs, const void* payload, size_t len) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_am_reply");
  return layers(*rt).am.reply(token, id, args, nargs, payload, len);
}

}  // extern "C"
