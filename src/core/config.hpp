// Effective configuration: built-in defaults, then TSU_* environment variables,
// then the fields a program set in tsu_config_t.  One table (settings.hpp)
// holds every core variable with its field, parser, default and help.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::core {

struct Config {
  std::size_t segment_size = 64u << 20;  // main segment
  uint32_t ring_size = 1024;             // command ring slots
  tsu_progress_mode_t progress_mode = TSU_PROGRESS_THREAD;
  bool bypass = true;                    // intra-node RMA/atomics run in the caller
  // Idle progress thread spins, then sleeps; kSpinAuto: chosen at init
  // (Runtime::create, by Runtime::cpus_per_node_rank).
  static constexpr uint32_t kSpinAuto = UINT32_MAX;
  uint32_t spin_us = kSpinAuto;
  // Consumers of node-local engine requests (thread mode): the progress
  // thread plus progress_threads - 1 lanes (Runtime::lane_of).
  uint32_t progress_threads = 1;
  int yield_idle = -1;                   // tsu_progress yields when idle: 1, 0, -1 auto
  int log_level = TSU_LOG_WARN;
  bool stats = false;
  std::string node_id;                   // TSU_NODE_ID; empty = host name
  std::string net = "udp";               // TSU_NET: the network transport (transport registry)
  // Messaging (docs/messaging.md).
  // (The message ring's geometry is the shm transport's: transport/shm/.)
  std::size_t am_medium_max = 8192;      // largest medium AM payload (<= slot payload)
  std::size_t eager_max = 8192;          // tagged: eager up to this, rendezvous above
  std::size_t sceager_min = 512;         // tagged: single-copy eager from this size up (measured)
  bool sceager = true;                   // tagged: single-copy eager on/off
  uint32_t posted_slots = 64;            // tagged: posted receives visible to senders
  std::size_t coll_large_min = 64u << 10;   // allreduce: reduce-scatter + allgather from here (measured)
  std::size_t coll_stage_max = 1u << 20;    // node teams: staged up to here, CMA above
  uint32_t coll_stage_stream = 2;  // node teams' stage stores: 0 plain, 1 non-temporal, 2 measured
  bool coll_node = true;                    // node teams: collectives through shared memory
  // Last, so the fields above keep their offsets (hot copies of Config sit
  // inside the engine and the runtime).
  std::string trace;  // TSU_TRACE: timeline file pattern (docs/trace.md); empty = off
  // A network transport's settings live in its own table (transport/<name>/).
};

// The core settings (every TSU_* variable that is not a transport's).
const SettingsTable<Config>& config_settings();

// Built-in defaults, then the environment through `getenv` (injectable for
// tests).  On a bad value returns TSU_ERR_CONFIG with a message naming the
// variable.
tsu_status_t config_from_env(Config& cfg, const GetEnv& getenv_fn, std::string& error);

// The message ring's slot (NodePlugin::message_geometry: TSU_SHM_SLOT_SIZE)
// bounds what one message carries: am_medium_max and eager_max are clamped
// to its payload, slot_size - 64.
void clamp_to_slot(Config& cfg, uint32_t slot_size);

// Applies the fields selected by user->field_mask.
tsu_status_t config_apply_user(Config& cfg, const tsu_config_t* user, std::string& error);

}  // namespace tsu::core
