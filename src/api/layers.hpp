// The messaging layers above core, owned by the runtime as its Extension:
// active messages (the send path of the others), tagged messages and
// collectives.  Made at init by make_layers (before the init barrier).
#pragma once

#include <memory>
#include <string>

#include "am/am_layer.hpp"
#include "coll/coll_layer.hpp"
#include "msg/msg_layer.hpp"
#include "core/runtime.hpp"

namespace tsu::api {

struct Layers final : core::Extension {
  explicit Layers(core::Runtime& rt) : am(rt), msg(rt, am), coll(rt, am) {}
  std::size_t poll() noexcept override { return am.poll(); }
  bool idle() const noexcept override { return am.idle(); }

  am::AmLayer am;
  msg::MsgLayer msg;
  coll::CollLayer coll;
};

std::unique_ptr<core::Extension> make_layers(core::Runtime& rt, std::string& error);

// Collective synchronization of the layers' setup calls (handler and team
// registration): returns when every rank has called it; drives progress.
tsu_status_t layers_sync(core::Runtime& rt, const char* fn) noexcept;

inline Layers& layers(core::Runtime& rt) noexcept {
  return *static_cast<Layers*>(rt.extension());
}

}  // namespace tsu::api
