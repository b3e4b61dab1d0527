#include "transport/self/self_plugin.hpp"

#include <new>

#include "transport/self/self_transport.hpp"

namespace tsu::transport::self {
namespace {

tsu_status_t open(const NodeSetup& setup, std::unique_ptr<NodeTransport>& out,
                  std::string& error) {
  auto t = std::unique_ptr<SelfTransport>(new (std::nothrow) SelfTransport(*setup.segments));
  if (!t || !t->init_messages(setup.rank, setup.ring_slots, setup.slot_size, setup.doorbell,
                              setup.layer_area, setup.layer_area_size)) {
    error = "cannot allocate the self message queue";
    return TSU_ERR_NO_MEMORY;
  }
  out = std::move(t);
  return TSU_OK;
}

}  // namespace

const NodePlugin kSelfPlugin = {"self", SelfTransport::kSummary, open};

}  // namespace tsu::transport::self
