// The seam for network transports: how the runtime finds, configures and
// connects the transport that reaches ranks on other nodes.  A network
// transport is one folder (transport/<name>/) that defines one NetworkPlugin
// and one line in transport/registry.cpp; TSU_NET picks it per job.
#pragma once

#include <cstddef>
#include <cstdio>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "core/settings.hpp"
#include "transport/transport.hpp"

namespace tsu::transport {

// What the runtime hands a network transport at init.
struct NetworkSetup {
  uint32_t rank = 0;
  uint32_t size = 0;
  std::vector<bool> reach;                // ranks on other nodes: the transport reaches these
  bootstrap::Bootstrap* boot = nullptr;   // publishes and looks up addresses (collective use)
  std::span<const std::byte> job_secret;  // keys the job's traffic
  // A 32-byte key for `purpose`, derived from the job secret (keyed hash).
  std::function<std::array<uint8_t, 32>(std::string_view purpose)> derive_key;
  core::GetEnv getenv;                    // reads the transport's own settings
};

struct NetworkPlugin {
  const char* name;     // its TSU_NET value
  const char* summary;  // what it is and offers (tsu-info)
  // Its settings with their effective values under `getenv` (tsu-info).
  tsu_status_t (*settings)(const core::GetEnv& getenv, std::vector<core::SettingView>& out,
                           std::string& error);
  // Opens the transport and connects it to setup.reach.  Every rank of the
  // job with a rank on another node calls it at init (collective through the
  // bootstrap).  Errors come back as a status and a message, never an abort.
  tsu_status_t (*connect)(const NetworkSetup& setup, std::unique_ptr<Transport>& out,
                          std::string& error);
  // Optional: what this machine offers the transport (tsu-info), e.g. the
  // libfabric providers found.  May be null.
  void (*report)(std::FILE* out) = nullptr;
};

// transport/registry.cpp: the transports built in.
const std::vector<const NetworkPlugin*>& network_transports();
const NetworkPlugin* find_network_transport(const std::string& name);

}  // namespace tsu::transport
