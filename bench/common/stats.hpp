// Median / min / max over the repetitions of one measurement point.
#pragma once

#include <vector>

namespace bench {

struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  int samples = 0;
};

// Empty input gives an all-zero summary.
Summary summarize(std::vector<double> values);

// Median, mean and 99th percentile of many single samples (latencies of
// individual operations, not repetitions).
struct Tail {
  double median = 0;
  double mean = 0;
  double p99 = 0;
};
Tail tail_of(std::vector<double> samples);

}  // namespace bench
