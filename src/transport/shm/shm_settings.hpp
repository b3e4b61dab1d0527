// The shm transport's settings (TSU_SHM_*): the geometry of every rank's
// message ring.  The runtime reads them through NodePlugin::message_geometry
// before the job starts (the self transport's ring has the same geometry, and
// the slot bounds the medium AM and eager sizes: core::clamp_to_slot).
#pragma once

#include <cstdint>

#include "core/settings.hpp"

namespace tsu::transport::shm {

struct ShmConfig {
  uint32_t ring_slots = 256;   // slots of each rank's shared receive ring
  uint32_t slot_size = 8256;   // bytes per ring slot (64 B header + payload)
};

const core::SettingsTable<ShmConfig>& shm_settings();

}  // namespace tsu::transport::shm
