// Facts about the machine, recorded with every result.
#pragma once

#include <string>

#include "json.hpp"

namespace bench {

struct HostFacts {
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int online_cpus = 0;    // CPUs this process may run on
  std::string kernel;     // uname -r
  std::string hostname;
  JsonObject json() const;  // with the load average at the time of the call
};

const HostFacts& host_facts();

// The 1-minute load average now, e.g. "0.42".
std::string load_average();

// UTC time as ISO 8601, e.g. "2024-05-01T12:00:00Z".
std::string utc_timestamp();

}  // namespace bench
