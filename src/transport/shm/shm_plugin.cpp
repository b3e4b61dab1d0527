#include "transport/shm/shm_plugin.hpp"

#include <new>

#include "transport/shm/shm_settings.hpp"
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

tsu_status_t settings(const core::GetEnv& getenv, std::vector<core::SettingView>& out,
                      std::string& error) {
  ShmConfig cfg;
  const tsu_status_t st = shm_settings().apply(cfg, getenv, error);
  out = shm_settings().describe(cfg);
  return st;
}

tsu_status_t message_geometry(const core::GetEnv& getenv, MessageGeometry& out,
                              std::string& error) {
  ShmConfig cfg;
  const tsu_status_t st = shm_settings().apply(cfg, getenv, error);
  if (st != TSU_OK) return st;
  out.ring_slots = cfg.ring_slots;
  out.slot_size = cfg.slot_size;
  return TSU_OK;
}

}  // namespace

const NodePlugin kShmPlugin = {"shm", ShmTransport::kSummary, open, settings, message_geometry};

}  // namespace tsu::transport::shm
