// One measured figure (a point of a benchmark and one of its metrics), and the
// sink that records it as a JSON line with the run settings and host facts.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "json.hpp"
#include "options.hpp"
#include "stats.hpp"

namespace bench {

struct Record {
  std::string benchmark;  // "rma", "bw", "limits"
  std::string metric;     // "latency", "overhead", "rate", "bandwidth", ...
  std::string op;         // "get", "put", "fadd", "memcpy", ...
  std::size_t size = 0;   // bytes per operation (0 where meaningless)
  int threads = 1;        // worker threads of the measuring rank
  std::string mode;       // "bypass", "engine" or "none" (limits)
  std::string transport;  // "shm", "threads", "processes", ...
  std::string unit;       // "ns", "Mmsg/s", "GB/s", ...
  Summary summary;
  std::vector<std::pair<std::string, double>> extra;  // e.g. eagain_fraction
  // Extra string fields at the top level, e.g. {"case","remote-to-remote"},
  // {"target","peer"}, {"interference","put"} (copy and atomic).
  std::vector<std::pair<std::string, std::string>> labels;
};

class Reporter {
 public:
  explicit Reporter(const CommonOptions& opts) : opts_(opts), file_(opts.json_path) {}
  // Writes the JSON line (if --json was given).  False if writing failed.
  bool record(const Record& r) const;

 private:
  const CommonOptions& opts_;
  JsonLinesFile file_;
};

// "123.4" with a magnitude-appropriate precision, for tables.
std::string format_value(double v);
// "median [min-max]".
std::string format_summary(const Summary& s);

}  // namespace bench
