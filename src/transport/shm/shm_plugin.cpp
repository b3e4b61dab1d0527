#include "transport/shm/shm_plugin.hpp"

#include <new>

#include "transport/shm/shm_transport.hpp"

namespace tsu::transport::shm {
namespace {

tsu_status_t open(const NodeSetup& setup, std::unique_ptr<NodeTransport>& out,
                  std::string& error) {
  try {
    auto t = std::make_unique<ShmTransport>();
    const tsu_status_t st = t->init(setup.size, setup.rank, setup.control, setup.ring_slots,
                                    setup.slot_size, error);
    if (st != TSU_OK) return st;
    out = std::move(t);
    return TSU_OK;
  } catch (const std::bad_alloc&) {
    error = "out of memory opening the shm transport";
    return TSU_ERR_NO_MEMORY;
  }
}

}  // namespace

const NodePlugin kShmPlugin = {"shm", ShmTransport::kSummary, open};

}  // namespace tsu::transport::shm
