// The tcp transport as a network plug-in (transport/network.hpp): its
// settings table (TSU_TCP_*) and its connect step (listen, publish the
// address; peers' addresses are looked up on first contact).
#pragma once

#include "core/settings.hpp"
#include "transport/network.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tsu::transport::tcp {

extern const NetworkPlugin kTcpPlugin;

const core::SettingsTable<TcpConfig>& tcp_settings();

}  // namespace tsu::transport::tcp
