// Leveled logging to stderr (TSU_LOG).  Levels above TSU_LOG_MAX_LEVEL compile
// out; below it a disabled level costs one relaxed load and a branch.
#pragma once

#include <atomic>

#include "tsunagi/tsunagi.h"

#ifndef TSU_LOG_MAX_LEVEL
#define TSU_LOG_MAX_LEVEL TSU_LOG_DEBUG
#endif

namespace tsu::core {

extern std::atomic<int> g_log_level;

void log_set_rank(long rank) noexcept;
void log_write(int level, const char* file, int line, const char* fmt, ...) noexcept
    __attribute__((format(printf, 4, 5)));

inline bool log_enabled(int level) noexcept {
  return level <= TSU_LOG_MAX_LEVEL && level <= g_log_level.load(std::memory_order_relaxed);
}

}  // namespace tsu::core

#define TSU_LOG_AT(level, ...)                                              \
  do {                                                                      \
    if (::tsu::core::log_enabled(level))                                    \
      ::tsu::core::log_write(level, __FILE__, __LINE__, __VA_ARGS__);       \
  } while (0)

#define TSU_LOG_ERROR(...) TSU_LOG_AT(TSU_LOG_ERROR, __VA_ARGS__)
#define TSU_LOG_WARN(...) TSU_LOG_AT(TSU_LOG_WARN, __VA_ARGS__)
#define TSU_LOG_INFO(...) TSU_LOG_AT(TSU_LOG_INFO, __VA_ARGS__)
#define TSU_LOG_DEBUG(...) TSU_LOG_AT(TSU_LOG_DEBUG, __VA_ARGS__)
