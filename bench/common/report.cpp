#include "report.hpp"

#include <cmath>
#include <cstdio>

#include "host.hpp"

namespace bench {

bool Reporter::record(const Record& r) const {
  if (!file_.enabled()) return true;
  JsonObject o;
  o.add("impl", "tsunagi")
      .add("benchmark", r.benchmark)
      .add("metric", r.metric)
      .add("op", r.op)
      .add("size", static_cast<uint64_t>(r.size))
      .add("threads", r.threads)
      .add("mode", r.mode)
      .add("transport", r.transport)
      .add("unit", r.unit)
      .add("median", r.summary.median)
      .add("min", r.summary.min)
      .add("max", r.summary.max)
      .add("reps", r.summary.samples);
  for (const auto& [k, v] : r.labels) o.add(k, v);
  if (!r.extra.empty()) {
    JsonObject extra;
    for (const auto& [k, v] : r.extra) extra.add(k, v);
    o.add("extra", extra);
  }
  o.add("duration_ms", opts_.duration_ms)
      .add("pinned", opts_.pin)
      .add("ranks_pinned", opts_.pin_ranks)
      .add("quick", opts_.quick)
      .add("host", host_facts().json())
      .add("time", utc_timestamp());
  return file_.append(o);
}

std::string format_value(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1000 || a == 0) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 100) std::snprintf(buf, sizeof buf, "%.1f", v);
  else if (a >= 10) std::snprintf(buf, sizeof buf, "%.2f", v);
  else std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::string format_summary(const Summary& s) {
  return format_value(s.median) + " [" + format_value(s.min) + "-" + format_value(s.max) + "]";
}

}  // namespace bench
