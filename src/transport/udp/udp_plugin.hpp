// The udp transport as a network plug-in (transport/network.hpp): its
// settings table (TSU_UDP_*) and its connect step (bind, publish the
// address; peers' addresses are looked up on first contact).
#pragma once

#include "transport/network.hpp"
#include "transport/udp/udp_transport.hpp"

namespace tsu::transport::udp {

extern const NetworkPlugin kUdpPlugin;

// TSU_UDP_* (exposed for unit tests).
const core::SettingsTable<UdpConfig>& udp_settings();

}  // namespace tsu::transport::udp
