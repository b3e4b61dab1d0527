// The transports built into this library, as libfabric lists its providers.
// A new transport adds its folder and one line here; nothing else names it.
#include "transport/network.hpp"
#include "transport/node.hpp"
#include "transport/ofi/ofi_plugin.hpp"
#include "transport/self/self_plugin.hpp"
#include "transport/shm/shm_plugin.hpp"
#include "transport/tcp/tcp_plugin.hpp"
#include "transport/udp/udp_plugin.hpp"

namespace tsu::transport {

const std::vector<const NetworkPlugin*>& network_transports() {
  static const std::vector<const NetworkPlugin*> all = {
      &udp::kUdpPlugin,
      &ofi::kOfiPlugin,
      &tcp::kTcpPlugin,
  };
  return all;
}

const std::vector<const NodePlugin*>& node_transports() {
  static const std::vector<const NodePlugin*> all = {
      &self::kSelfPlugin,
      &shm::kShmPlugin,
  };
  return all;
}

const NetworkPlugin* find_network_transport(const std::string& name) {
  for (const NetworkPlugin* p : network_transports())
    if (name == p->name) return p;
  return nullptr;
}

const NodePlugin* find_node_transport(const std::string& name) {
  for (const NodePlugin* p : node_transports())
    if (name == p->name) return p;
  return nullptr;
}

tsu_status_t node_message_geometry(const core::GetEnv& getenv, MessageGeometry& out,
                                   std::string& error) {
  for (const NodePlugin* p : node_transports())
    if (p->message_geometry) return p->message_geometry(getenv, out, error);
  error = "no node transport in this build fixes the message geometry (shm is missing)";
  return TSU_ERR_CONFIG;
}

}  // namespace tsu::transport
