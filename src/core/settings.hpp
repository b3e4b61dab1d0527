// A module's settings as one table: each row names the environment variable,
// the field it sets, how its text is parsed, its default and its help.  The
// default is text parsed exactly like the environment, so the default that
// tsu-info prints is, by construction, the value the library uses.  A
// default in parentheses ("(host name)", "(off)") means "no value": the
// field keeps its initializer and the module derives it.
//
// Each module owns its table (core/config.cpp for the core settings, a
// transport's folder for its own: NodePlugin::settings and
// NetworkPlugin::settings); tsu-info prints every table, with libtsunagi-ult's
// (src/ult/settings.hpp: that library sees only the public headers, so its
// table is its own) and the bootstrap's launch settings and launcher
// variables (bootstrap/environment.hpp).  tests/tsu_info/settings_listed.sh
// checks that every TSU_* name in src/ and tools/ is listed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

// Whether this build compiles in test-only fault injection (CMake option
// TSU_FAULT_INJECTION, ON in the presets the tests use, OFF in a plain
// configure): the fault variables are read and tested for only when true,
// and they are in no settings table.
#ifndef TSU_FAULT_INJECTION
#define TSU_FAULT_INJECTION 0
#endif
inline constexpr bool kFaultInjection = TSU_FAULT_INJECTION != 0;

// Reads a variable (injectable for tests); nullptr when unset.
using GetEnv = std::function<const char*(const char*)>;

// Parsers shared by every table.
bool parse_size(const char* text, std::size_t& out);  // 4096, 64K, 16M, 1G, 1GiB
bool parse_bool(const char* text, bool& out);         // 1/0, yes/no, on/off, true/false
bool parse_log_level(const char* text, int& out);     // off|error|warn|info|debug|trace|0-5
bool parse_duration(const char* text, uint64_t& ns);  // 500ms, 2s, 100us, 10ns (bare: ms)
bool parse_u64(const char* text, uint64_t& out);      // decimal
std::string duration_text(uint64_t ns);               // 2s, 500ms, 100us, 7ns

// One row, and what tsu-info shows of it.
template <class T>
struct Setting {
  const char* env;
  const char* default_text;
  const char* help;
  const char* expected;  // what a valid value looks like (error messages)
  std::function<bool(const char* text, T& cfg)> parse;
  std::function<std::string(const T& cfg)> show;
};

struct SettingView {
  std::string env, value, default_text, help;
};

template <class T>
struct SettingsTable {
  const char* module;
  std::vector<Setting<T>> rows;
  // After every row: checks between fields ("" when fine) and derived values.
  std::function<std::string(T& cfg)> finish = [](T&) { return std::string(); };

  // Defaults first, then the environment; TSU_ERR_CONFIG names the variable.
  tsu_status_t apply(T& cfg, const GetEnv& getenv, std::string& error) const {
    for (const Setting<T>& s : rows) {
      if (s.default_text[0] != '(' && !s.parse(s.default_text, cfg)) {
        error = std::string("built-in default of ") + s.env + " does not parse";
        return TSU_ERR_CONFIG;
      }
      const char* v = getenv(s.env);
      if (v && !s.parse(v, cfg)) {
        error = std::string(s.env) + "='" + v + "' is invalid: expected " + s.expected;
        return TSU_ERR_CONFIG;
      }
    }
    error = finish(cfg);
    return error.empty() ? TSU_OK : TSU_ERR_CONFIG;
  }
  std::vector<SettingView> describe(const T& cfg) const {
    std::vector<SettingView> out;
    for (const Setting<T>& s : rows) out.push_back({s.env, s.show(cfg), s.default_text, s.help});
    return out;
  }
};

// ---- Rows for plain fields ---------------------------------------------------

template <class T>
Setting<T> size_setting(const char* env, const char* def, const char* help, std::size_t T::*field,
                        std::size_t lo, std::size_t hi, const char* expected) {
  return {env, def, help, expected,
          [=](const char* v, T& c) {
            std::size_t n;
            if (!parse_size(v, n) || n < lo || n > hi) return false;
            c.*field = n;
            return true;
          },
          [=](const T& c) { return std::to_string(c.*field); }};
}

template <class T>
Setting<T> u32_setting(const char* env, const char* def, const char* help, uint32_t T::*field,
                       uint64_t lo, uint64_t hi, bool power_of_two, const char* expected) {
  return {env, def, help, expected,
          [=](const char* v, T& c) {
            uint64_t n;
            if (!parse_u64(v, n) || n < lo || n > hi || (power_of_two && (n & (n - 1))))
              return false;
            c.*field = static_cast<uint32_t>(n);
            return true;
          },
          [=](const T& c) { return std::to_string(c.*field); }};
}

template <class T>
Setting<T> bool_setting(const char* env, const char* def, const char* help, bool T::*field) {
  return {env, def, help, "0 or 1",
          [=](const char* v, T& c) { return parse_bool(v, c.*field); },
          [=](const T& c) { return std::string(c.*field ? "1" : "0"); }};
}

template <class T>
Setting<T> duration_setting(const char* env, const char* def, const char* help,
                            uint64_t T::*field, uint64_t lo_ns) {
  return {env, def, help, "a duration such as 500ms or 2s",
          [=](const char* v, T& c) {
            uint64_t ns;
            if (!parse_duration(v, ns) || ns < lo_ns) return false;
            c.*field = ns;
            return true;
          },
          [=](const T& c) { return duration_text(c.*field); }};
}

// Free text of 1..max_len characters; shown as the default when empty.
template <class T>
Setting<T> text_setting(const char* env, const char* def, const char* help,
                        std::string T::*field, std::size_t max_len, const char* expected) {
  return {env, def, help, expected,
          [=](const char* v, T& c) {
            const std::string s(v);
            if (s.empty() || s.size() > max_len) return false;
            c.*field = s;
            return true;
          },
          [=](const T& c) { return (c.*field).empty() ? std::string(def) : c.*field; }};
}

}  // namespace tsu::core
