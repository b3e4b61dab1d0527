// The runtime's statistics at finalize (TSU_STATS): per-thread counters,
// the progress engine's and lanes', and the transports'.
#include "runtime/runtime.hpp"

#include <cstdio>
#include <cstring>

#include "transport/network.hpp"

namespace tsu::runtime {

using core::Counter;

void Runtime::print_transport_stats() const {
  if (extension_) extension_->print_stats(rank_);
  if (net_) net_->print_stats(stderr);
}

void Runtime::print_stats() const {
  uint64_t totals[static_cast<uint32_t>(Counter::kCount)] = {};
  uint32_t threads = 0;
  threads_.for_each([&](const ThreadContext& tc) {
    ++threads;
    for (uint32_t c = 0; c < static_cast<uint32_t>(Counter::kCount); ++c)
      totals[c] += tc.stats.get(static_cast<Counter>(c));
  });
  char line[1024];
  int n = std::snprintf(line, sizeof line, "tsunagi[%u] stats: threads=%u", rank_, threads);
  for (uint32_t c = 0; c < static_cast<uint32_t>(Counter::kCount); ++c)
    n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), " %s=%llu",
                       counter_name(static_cast<Counter>(c)),
                       static_cast<unsigned long long>(totals[c]));
  const EngineStats& es = engine_->stats();
  std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n),
                " engine_commands=%llu engine_batches=%llu engine_max_batch=%llu "
                "engine_callbacks=%llu engine_sleeps=%llu engine_failed=%llu engine_messages=%llu "
                "engine_inline_runs=%llu",
                static_cast<unsigned long long>(es.commands.load()),
                static_cast<unsigned long long>(es.batches.load()),
                static_cast<unsigned long long>(es.max_batch.load()),
                static_cast<unsigned long long>(es.callbacks.load()),
                static_cast<unsigned long long>(es.sleeps.load()),
                static_cast<unsigned long long>(es.failed.load()),
                static_cast<unsigned long long>(es.messages.load()),
                static_cast<unsigned long long>(es.inline_runs.load()));
  n = static_cast<int>(std::strlen(line));
  if (!lanes_.empty()) {
    uint64_t commands = 0, sleeps = 0;
    for (const auto& lane : lanes_) {
      commands += lane->stats().commands.load();
      sleeps += lane->stats().sleeps.load();
    }
    std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n),
                  " lanes=%zu lane_commands=%llu lane_sleeps=%llu", lanes_.size(),
                  static_cast<unsigned long long>(commands), static_cast<unsigned long long>(sleeps));
  }
  std::fprintf(stderr, "%s\n", line);
}

}  // namespace tsu::runtime
