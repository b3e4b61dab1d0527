#include "transport/shm/shm_settings.hpp"

#include <string>

namespace tsu::transport::shm {

const core::SettingsTable<ShmConfig>& shm_settings() {
  using S = ShmConfig;
  static const core::SettingsTable<ShmConfig> table = [] {
    core::SettingsTable<ShmConfig> t{"shm", {}};
    auto& r = t.rows;
    r.push_back(core::u32_setting<S>("TSU_SHM_RING_SLOTS", "256",
                                     "slots in each rank's shared-memory message ring (power of "
                                     "two)",
                                     &S::ring_slots, 2, 1u << 20, true,
                                     "a power of two between 2 and 1048576"));
    r.push_back({"TSU_SHM_SLOT_SIZE", "8256",
                 "bytes per message-ring slot: 64 B header + payload (multiple of 64)",
                 "a multiple of 64 between 128 and 16M",
                 [](const char* v, S& c) {
                   std::size_t n;
                   if (!core::parse_size(v, n) || n < 128 || n > (1u << 24) || n % 64)
                     return false;
                   c.slot_size = static_cast<uint32_t>(n);
                   return true;
                 },
                 [](const S& c) { return std::to_string(c.slot_size); }});
    return t;
  }();
  return table;
}

}  // namespace tsu::transport::shm
