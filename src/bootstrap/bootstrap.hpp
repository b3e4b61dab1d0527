// Bootstrap: how ranks of one job find each other at init (key-value exchange
// and barrier).  The runtime depends only on this interface; `local/` talks to
// tsurun's service over a Unix socket, `pmix/` to the PMIx server of srun or
// mpirun, `singleton` serves a job of one rank.
//
// Keys: a rank publishes only its own keys, and every key ends in ".<rank>"
// of the rank that publishes it ("tsu.rank.3", "tsu.udp.3"): PMIx stores
// values per process, so a get must know whose value it asks for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/auth.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::bootstrap {

// What a rank asked of the bootstrap (TSU_STATS=1 prints it at finalize):
// start-up that scales keeps these flat as the job grows (docs/scaling.md).
struct Traffic {
  uint64_t requests = 0;  // round trips to the service (put, get, barrier, ...)
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
};

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  // Publishes key=value for every rank (keys are unique per job; a rank
  // publishes its own keys, e.g. "rank.3").
  virtual tsu_status_t put(std::string_view key, std::span<const std::byte> value) = 0;
  // Blocks until some rank has published `key`, then returns its value.
  virtual tsu_status_t get(std::string_view key, std::vector<std::byte>& value) = 0;
  // Blocks until every rank has entered the barrier.
  virtual tsu_status_t barrier() = 0;
  // Says this rank is leaving cleanly (after its last barrier).
  virtual tsu_status_t finalize() = 0;
  // The local IPv4 address this rank reaches the bootstrap service from (a
  // TCP bootstrap across hosts), or "" when that says nothing about the
  // network (Unix socket, singleton).  Network transports bind to it.
  virtual std::string reachable_address() const { return {}; }
  // The job's secret (keys the network transports' traffic).  tsurun hands
  // it to each rank out of band (auth::job_secret); a PMIx job gets one drawn
  // by its rank 0 and distributed through PMIx (docs/launchers.md).  nullopt
  // with `error` empty: the job has none.
  virtual std::optional<auth::Secret> job_secret(std::string& error) {
    return auth::job_secret(error);
  }
  // The node of every rank (dense indices, numbered in order of first
  // appearance by rank), when the launcher tells it without an exchange
  // (TSU_PLACEMENT, or PMIx's PMIX_NODEID); false when ranks must publish
  // their node to learn it.
  virtual bool node_layout(std::vector<uint32_t>& node_of) { return placement_from_environment(size(), node_of); }
  virtual Traffic traffic() const { return {}; }

  // TSU_PLACEMENT=block:K (rank / K, as tsurun --ranks-per-node K) or
  // cyclic:H (rank % H, as tsurun --hosts with --round-robin).
  static bool placement_from_environment(uint32_t size, std::vector<uint32_t>& node_of);
};

// The rank that publishes `key` (its ".<rank>" suffix); nullopt if it has none.
std::optional<uint32_t> key_owner(std::string_view key);

// With TSU_STATS=1: one line on stderr with `t` (a bootstrap's finalize).
void print_traffic_if_asked(uint32_t rank, const Traffic& t);

// True when this process was started by a launcher (tsurun or a PMIx one):
// its job ends at tsu_finalize, it cannot start another.
bool started_by_launcher();

// Chooses from the environment: TSU_BOOTSTRAP=unix:PATH or tcp:HOST:PORT
// (set by tsurun) gives the local client; else TSU_BOOTSTRAP=pmix, or the
// variables a PMIx launcher sets (PMIX_NAMESPACE and PMIX_RANK: srun
// --mpi=pmix, mpirun), give the PMIx client; else a singleton job.  On failure returns
// nullptr with `status` set and the reason in `error`.
std::unique_ptr<Bootstrap> make_from_environment(tsu_status_t& status, std::string& error);

}  // namespace tsu::bootstrap
