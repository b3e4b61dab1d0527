#include "core/log.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace tsu::core {

std::atomic<int> g_log_level{TSU_LOG_WARN};

namespace {
std::atomic<long> g_log_rank{-1};

const char* level_name(int level) {
  switch (level) {
    case TSU_LOG_ERROR: return "error";
    case TSU_LOG_WARN: return "warn";
    case TSU_LOG_INFO: return "info";
    case TSU_LOG_DEBUG: return "debug";
    default: return "trace";
  }
}
}  // namespace

void log_set_rank(long rank) noexcept { g_log_rank.store(rank, std::memory_order_relaxed); }

void log_write(int level, const char* file, int line, const char* fmt, ...) noexcept {
  const int saved_errno = errno;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  // One fprintf per message so lines from different threads do not interleave.
  const long rank = g_log_rank.load(std::memory_order_relaxed);
  if (rank >= 0)
    std::fprintf(stderr, "tsunagi[%ld] %s: %s (%s:%d)\n", rank, level_name(level), msg, base,
                 line);
  else
    std::fprintf(stderr, "tsunagi %s: %s (%s:%d)\n", level_name(level), msg, base, line);
  errno = saved_errno;
}

}  // namespace tsu::core
