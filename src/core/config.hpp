// Effective configuration: built-in defaults, then TSU_* environment variables,
// then the fields a program set in tsu_config_t.  Every variable has a default
// and a help string (printed by tsu-info).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

struct Config {
  std::size_t segment_size = 64u << 20;  // main segment
  uint32_t ring_size = 1024;             // command ring slots
  tsu_progress_mode_t progress_mode = TSU_PROGRESS_THREAD;
  bool bypass = true;                    // intra-node RMA/atomics run in the caller
  uint32_t spin_us = 20;                 // idle progress thread spins, then sleeps
  bool inline_exec = true;               // issuer starts network commands while the engine sleeps
  int yield_idle = -1;                   // tsu_progress yields when idle: 1, 0, -1 auto
  int log_level = TSU_LOG_WARN;
  bool stats = false;
  std::string node_id;                   // TSU_NODE_ID; empty = host name
  // Messaging (docs/messaging.md).
  uint32_t shm_ring_slots = 256;         // slots of each rank's shared receive ring
  uint32_t shm_slot_size = 8256;         // bytes per ring slot (64 B header + payload)
  std::size_t am_medium_max = 8192;      // largest medium AM payload (<= slot payload)
  std::size_t eager_max = 8192;          // tagged: eager up to this, rendezvous above
  std::size_t sceager_min = 512;         // tagged: single-copy eager from this size up (measured)
  bool sceager = true;                   // tagged: single-copy eager on/off
  uint32_t posted_slots = 64;            // tagged: posted receives visible to senders
  std::size_t coll_large_min = 64u << 10;   // allreduce: reduce-scatter + allgather from here (measured)
  std::size_t coll_direct_min = 64u << 10;  // allreduce on one node: CMA from here when enabled
  bool coll_direct = false;                 // allreduce on one node: CMA shortcut (slower here)
  // udp transport (ranks on other nodes)
  std::string udp_addr;                  // TSU_UDP_ADDR; empty = derived
  uint32_t udp_port = 0;
  uint32_t udp_mtu = 1472;
  uint32_t udp_window = 1024;
  uint32_t udp_queue = 4096;
  std::size_t udp_max_message = 256u << 10;
  uint64_t udp_rto_init_ns = 20'000'000;
  uint64_t udp_rto_min_ns = 10'000'000;
  uint64_t udp_keepalive_ns = 500'000'000;
  uint64_t udp_peer_timeout_ns = 10'000'000'000;
  std::size_t udp_sockbuf = 4u << 20;
  bool udp_gso = true;                   // segmentation offload for sends (TSU_UDP_GSO)
  bool udp_gro = true;                   // coalesced receives (TSU_UDP_GRO)
  bool udp_auth = false;                 // payload authentication (TSU_UDP_AUTH)
  uint32_t udp_cwnd_min = 4;
  std::string udp_impair;                // TSU_UDP_IMPAIR (test facility)
  std::string udp_trace;                 // TSU_UDP_TRACE file prefix
};

// Describes one configuration variable.
struct ConfigVar {
  const char* env;
  const char* default_value;
  const char* help;
};
const std::vector<ConfigVar>& config_vars();

// Reads the environment through `getenv` (injectable for tests).  On a bad
// value returns TSU_ERR_CONFIG with a message naming the variable.
using GetEnv = std::function<const char*(const char*)>;
tsu_status_t config_from_env(Config& cfg, const GetEnv& getenv_fn, std::string& error);

// Applies the fields selected by user->field_mask.
tsu_status_t config_apply_user(Config& cfg, const tsu_config_t* user, std::string& error);

// "name=value" lines of the effective configuration.
std::vector<std::pair<std::string, std::string>> config_describe(const Config& cfg);

// Parsers, exposed for unit tests.
bool parse_size(const char* text, std::size_t& out);  // 4096, 64K, 16M, 1G, 1GiB
bool parse_bool(const char* text, bool& out);         // 1/0, yes/no, on/off, true/false
bool parse_log_level(const char* text, int& out);     // off|error|warn|info|debug|trace|0-5
bool parse_duration(const char* text, uint64_t& ns);  // 500ms, 2s, 100us, 10ns (bare: ms)

}  // namespace tsu::core
