#include "host.hpp"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>

namespace bench {

namespace {

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unknown";
}

int allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", one);
  return buf;
}

JsonObject HostFacts::json() const {
  JsonObject o;
  o.add("cpu", cpu_model).add("cpus", online_cpus).add("kernel", kernel).add("hostname", hostname);
  // Read per record: other work on the machine is the first suspect of an outlier.
  o.add("loadavg_1m", std::stod(load_average()));
  return o;
}

const HostFacts& host_facts() {
  static const HostFacts facts = [] {
    HostFacts f;
    f.cpu_model = read_cpu_model();
    f.online_cpus = allowed_cpus();
    utsname u{};
    if (uname(&u) == 0) {
      f.kernel = u.release;
      f.hostname = u.nodename;
    }
    return f;
  }();
  return facts;
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace bench
