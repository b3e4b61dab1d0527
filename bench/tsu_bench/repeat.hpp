// Runs one measurement: an uncounted warm-up (page faults, caches, the
// progress thread waking up), then `reps` counted repetitions.
#pragma once

#include <optional>
#include <vector>

#include "../common/options.hpp"

namespace bench {

// `measure(duration_ms)` returns one repetition's figure, or nullopt on failure.
template <typename Measure>
std::optional<std::vector<double>> repeat_measurement(const CommonOptions& opts,
                                                      Measure&& measure) {
  const double warmup_ms = opts.duration_ms / 2 > 1 ? opts.duration_ms / 2 : 1;
  if (!measure(warmup_ms)) return std::nullopt;
  std::vector<double> values;
  for (int r = 0; r < opts.reps; ++r) {
    const std::optional<double> v = measure(opts.duration_ms);
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  return values;
}

}  // namespace bench
