#include "settings.hpp"

#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tsunagi/tsunagi.h"

namespace tsu::ult {

namespace {
bool parse_size(const char* s, std::size_t& out) noexcept {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s) return false;
  unsigned long long mul = 1;
  if (*end == 'k' || *end == 'K') mul = 1024, ++end;
  else if (*end == 'm' || *end == 'M') mul = 1024 * 1024, ++end;
  if (*end) return false;
  out = static_cast<std::size_t>(v * mul);
  return true;
}

// A spin time in microseconds (0 to 60 s) into `ns`.
bool parse_spin(const char* var, const char* v, uint64_t& ns, const char*& error) noexcept {
  std::size_t us = 0;
  if (!parse_size(v, us) || us > 60'000'000) {
    static thread_local char text[96];
    std::snprintf(text, sizeof text, "%s: expected microseconds (0 to 60000000)", var);
    error = text;
    return false;
  }
  ns = uint64_t{us} * 1000;
  return true;
}

std::string us_text(uint64_t ns) { return std::to_string(ns / 1000); }

std::string time_text(uint64_t ns) {
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace

uint32_t default_workers() noexcept {
  cpu_set_t set;
  uint32_t cpus = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<uint32_t>(CPU_COUNT(&set));
  uint32_t on_node = 1;
  uint32_t me = 0, size = 0, my_node = 0;
  if (tsu_initialized() && tsu_rank(&me) == TSU_OK && tsu_size(&size) == TSU_OK &&
      tsu_node_of(me, &my_node) == TSU_OK) {
    on_node = 0;
    for (uint32_t r = 0; r < size; ++r) {
      uint32_t n = 0;
      if (tsu_node_of(r, &n) == TSU_OK && n == my_node) ++on_node;
    }
  } else if (const char* l = std::getenv("TSU_LOCAL_SIZE")) {
    on_node = static_cast<uint32_t>(std::strtoul(l, nullptr, 10));
  }
  if (on_node == 0) on_node = 1;
  return cpus / on_node > 0 ? cpus / on_node : 1;
}

const SettingsTable<Settings>& scheduler_settings() {
  using S = Settings;
  static const SettingsTable<Settings> table{{
      {"TSU_ULT_WORKERS", "(CPUs / ranks on the node)",
       "worker threads of the ULT scheduler (0: the default: the CPUs this process may use "
       "divided by the ranks on its node, at least 1; at most 4096)",
       [](const char* v, S& s, const char*& error) {
         std::size_t n = 0;
         if (!parse_size(v, n) || n > 4096) {
           error = "TSU_ULT_WORKERS: expected a number of workers (0 = default)";
           return false;
         }
         if (n) s.workers = static_cast<uint32_t>(n);
         return true;
       },
       [](const S& s) { return std::to_string(s.workers); }},
      {"TSU_ULT_STACK_SIZE", "128K", "bytes of each ULT's stack, 16K to 1G (K/M suffixes)",
       [](const char* v, S& s, const char*& error) {
         std::size_t n = 0;
         if (!parse_size(v, n) || n < 16 * 1024 || n > (1ull << 30)) {
           error = "TSU_ULT_STACK_SIZE: expected a size from 16K to 1G";
           return false;
         }
         s.stack_size = n;
         return true;
       },
       [](const S& s) { return std::to_string(s.stack_size); }},
      {"TSU_ULT_SPIN_US", "50",
       "microseconds an idle worker polls for work before it sleeps (0 to 60000000)",
       [](const char* v, S& s, const char*& error) {
         return parse_spin("TSU_ULT_SPIN_US", v, s.spin_ns, error);
       },
       [](const S& s) { return us_text(s.spin_ns); }},
      {"TSU_ULT_REMOTE_SPIN_US", "200",
       "microseconds an idle worker polls instead after it sent a spawn or an exit value to "
       "another rank (0 to 60000000)",
       [](const char* v, S& s, const char*& error) {
         return parse_spin("TSU_ULT_REMOTE_SPIN_US", v, s.remote_spin_ns, error);
       },
       [](const S& s) { return us_text(s.remote_spin_ns); }},
#ifndef NDEBUG
      {"TSU_ULT_GUARD", "1",
#else
      {"TSU_ULT_GUARD", "0",
#endif
       "1: a guard page under each ULT stack, and a stack overflow is reported (default 1 in "
       "debug builds, 0 in release builds)",
       [](const char* v, S& s, const char*& error) {
         if (std::strcmp(v, "0") && std::strcmp(v, "1")) {
           error = "TSU_ULT_GUARD: expected 0 or 1";
           return false;
         }
         s.guard = v[0] == '1';
         return true;
       },
       [](const S& s) { return std::string(s.guard ? "1" : "0"); }},
      {"TSU_ULT_FP_FLAGS", "fast",
       "fast: FE_INEXACT may read as raised in a ULT, x87 flags are the worker's (docs/ult.md); "
       "exact: every floating-point flag is the thread's own",
       [](const char* v, S& s, const char*& error) {
         if (std::strcmp(v, "fast") && std::strcmp(v, "exact")) {
           error = "TSU_ULT_FP_FLAGS: expected fast or exact";
           return false;
         }
         s.fp_exact = v[0] == 'e';
         return true;
       },
       [](const S& s) { return std::string(s.fp_exact ? "exact" : "fast"); }},
  }};
  return table;
}

const SettingsTable<LbSettings>& lb_settings() {
  using L = LbSettings;
  static const SettingsTable<LbSettings> table{{
      {"TSU_ULT_LB", "1", "1: ULTs spawned on \"any\" rank are spread by load and idle ranks steal "
       "work; 0: both off",
       [](const char* v, L& out, const char*& error) {
         if (std::strcmp(v, "0") && std::strcmp(v, "1")) {
           error = "TSU_ULT_LB: expected 0 or 1";
           return false;
         }
         out.enabled = v[0] == '1';
         return true;
       },
       [](const L& l) { return std::string(l.enabled ? "1" : "0"); }},
      {"TSU_ULT_LB_PERIOD", "1ms",
       "period of the load broadcast and of an idle rank's work requests, 1us to 10s (bare "
       "number: seconds)",
       [](const char* v, L& out, const char*& error) {
         char* end = nullptr;
         const double x = std::strtod(v, &end);
         double mul = 1e9;  // seconds by default
         if (!std::strcmp(end, "ns")) mul = 1;
         else if (!std::strcmp(end, "us")) mul = 1e3;
         else if (!std::strcmp(end, "ms")) mul = 1e6;
         else if (*end && std::strcmp(end, "s")) mul = -1;
         if (end == v || mul < 0 || x <= 0 || x * mul < 1000 || x * mul > 10e9) {
           error = "TSU_ULT_LB_PERIOD: expected a time from 1us to 10s (e.g. 500us, 2ms)";
           return false;
         }
         out.period_ns = static_cast<uint64_t>(x * mul);
         return true;
       },
       [](const L& l) { return time_text(l.period_ns); }},
      {"TSU_ULT_LB_THRESHOLD", "4",
       "change of a rank's ULT count worth broadcasting, and the load above which a rank is "
       "asked for work (1 to 1000000)",
       [](const char* v, L& out, const char*& error) {
         char* end = nullptr;
         const unsigned long t = std::strtoul(v, &end, 10);
         if (end == v || *end || t == 0 || t > 1'000'000) {
           error = "TSU_ULT_LB_THRESHOLD: expected a count from 1 to 1000000";
           return false;
         }
         out.threshold = static_cast<uint32_t>(t);
         return true;
       },
       [](const L& l) { return std::to_string(l.threshold); }},
  }};
  return table;
}

bool describe_settings(std::vector<SettingView>& out, const char*& error) {
  Settings s;
  s.workers = default_workers();
  LbSettings lb;
  const bool ok = scheduler_settings().apply(s, error) && lb_settings().apply(lb, error);
  for (const auto& r : scheduler_settings().rows)
    out.push_back({r.env, r.show(s), r.default_text, r.help});
  for (const auto& r : lb_settings().rows)
    out.push_back({r.env, r.show(lb), r.default_text, r.help});
  return ok;
}

}  // namespace tsu::ult
