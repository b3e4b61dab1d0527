// Bootstrap: how ranks of one job find each other at init (key-value exchange
// and barrier).  The runtime depends only on this interface; `local/` talks to
// tsurun's service over a Unix socket, `singleton` serves a job of one rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tsunagi/tsunagi.h"

namespace tsu::bootstrap {

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
};

// Chooses from the environment: TSU_BOOTSTRAP=unix:PATH (set by tsurun) gives
// the local client; no TSU_BOOTSTRAP gives a singleton job.  On failure returns
// nullptr with `status` set and the reason in `error`.
std::unique_ptr<Bootstrap> make_from_environment(tsu_status_t& status, std::string& error);

}  // namespace tsu::bootstrap
