// The transports built into this library.  A new network transport adds its
// folder and one line to network_transports(); nothing else names it.
#include "transport/self/self_transport.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/udp/udp_plugin.hpp"

namespace tsu::transport {

const std::vector<const NetworkPlugin*>& network_transports() {
  static const std::vector<const NetworkPlugin*> all = {
      &udp::kUdpPlugin,
  };
  return all;
}

const NetworkPlugin* find_network_transport(const std::string& name) {
  for (const NetworkPlugin* p : network_transports())
    if (name == p->name) return p;
  return nullptr;
}

const std::vector<TransportSummary>& node_transports() {
  static const std::vector<TransportSummary> all = {
      {"self", SelfTransport::kSummary},
      {"shm", ShmTransport::kSummary},
  };
  return all;
}

}  // namespace tsu::transport
