// The ofi transport as a network plug-in (transport/network.hpp): its
// settings table (TSU_OFI_*), its connect step (open the endpoint, publish
// its name, insert the peers'), and the provider report tsu-info prints.
#pragma once

#include "transport/network.hpp"
#include "transport/ofi/ofi_config.hpp"

namespace tsu::transport::ofi {

extern const NetworkPlugin kOfiPlugin;

const core::SettingsTable<OfiConfig>& ofi_settings();

}  // namespace tsu::transport::ofi
