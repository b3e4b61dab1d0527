// The seam for node transports: how the runtime opens the transports that
// reach the ranks of this node (today the rank itself, "self", and its node
// peers, "shm").  Each is one folder (transport/<name>/) defining one
// NodePlugin, listed in transport/registry.cpp.  The runtime opens every one
// in registry order and offers each rank of the node to them in that order:
// the first that accepts it (add_peer) is that rank's route.  It holds them
// as NodeTransport*, never by name or concrete type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/control_block.hpp"
#include "core/doorbell.hpp"
#include "core/segment_table.hpp"
#include "core/settings.hpp"
#include "transport/transport.hpp"

namespace tsu::transport {

// What the runtime hands a node transport at init, before this rank's
// bootstrap record is published (peers learn from that record how to reach
// what the transport creates here).
struct NodeSetup {
  uint32_t rank = 0;
  uint32_t size = 0;
  const core::SegmentTable* segments = nullptr;  // this rank's segments
  core::ControlBlock* control = nullptr;         // this rank's control block (shared)
  core::Doorbell doorbell;                       // wakes this rank's engine
  uint32_t ring_slots = 0;                       // message queue geometry
  uint32_t slot_size = 0;                        // (NodePlugin::message_geometry)
  // This rank's layer area (runtime/layer_area.hpp), created by the runtime
  // and published in `control` (layer_area_fd): transports that reach this
  // rank itself hand it out (MemoryAccess::peer_layer_area); those reaching
  // node peers map theirs from their control blocks.
  std::byte* layer_area = nullptr;
  std::size_t layer_area_size = 0;
};

// A rank of this node, from its bootstrap record.
struct NodePeer {
  uint32_t rank = 0;
  int32_t pid = 0;
  int32_t control_fd = 0;  // its control block's descriptor in its own process
};

class NodeTransport : public Transport {
 public:
  // A rank of this node (this rank itself included), once every rank has
  // published its record: TSU_OK when this transport now reaches it,
  // TSU_ERR_UNSUPPORTED when it does not take such ranks (the next transport
  // in registry order is asked), any other error fails init.
  virtual tsu_status_t add_peer(const NodePeer& peer, std::string& error) noexcept = 0;
};

// Every rank's message queues (its receive ring, and self's): slots and
// bytes per slot (64 B header + payload).
struct MessageGeometry {
  uint32_t ring_slots = 0;
  uint32_t slot_size = 0;
};

struct NodePlugin {
  const char* name;     // "self", "shm"
  const char* summary;  // what it is and offers (tsu-info)
  tsu_status_t (*open)(const NodeSetup& setup, std::unique_ptr<NodeTransport>& out,
                       std::string& error);
  // Optional (null: it has none): its settings (transport/<name>/) with their
  // effective values under `getenv` (tsu-info), as NetworkPlugin's.
  tsu_status_t (*settings)(const core::GetEnv& getenv, std::vector<core::SettingView>& out,
                           std::string& error) = nullptr;
  // Optional: the message geometry its settings fix (shm: TSU_SHM_RING_SLOTS,
  // TSU_SHM_SLOT_SIZE).  The runtime reads it at create, before the job
  // starts, and hands it to every node transport in NodeSetup; a bad value
  // is TSU_ERR_CONFIG naming the variable.
  tsu_status_t (*message_geometry)(const core::GetEnv& getenv, MessageGeometry& out,
                                   std::string& error) = nullptr;
};

// The message geometry from the first node transport that fixes one
// (transport/registry.cpp).
tsu_status_t node_message_geometry(const core::GetEnv& getenv, MessageGeometry& out,
                                   std::string& error);

// transport/registry.cpp.
const std::vector<const NodePlugin*>& node_transports();
const NodePlugin* find_node_transport(const std::string& name);

}  // namespace tsu::transport
