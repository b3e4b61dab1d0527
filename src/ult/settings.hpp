// libtsunagi-ult's settings: the TSU_ULT_* environment variables, one table
// per structure they set, each row with its default and help (tsu-info
// prints them).  The ULT library sees only the public headers and its own
// folder, so this is its own small table (core's SettingsTable is below the
// public API); its parsers and messages are the library's own.
//
// Test-only fault injection (TSU_ULT_TEST_FAULTS) is no row: it exists only
// in builds with TSU_FAULT_INJECTION (scheduler.cpp, docs/ult.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace tsu::ult {

// Whether this build compiles in test-only fault injection (CMake option
// TSU_FAULT_INJECTION); when false, no fault is read or tested for.
#ifndef TSU_FAULT_INJECTION
#define TSU_FAULT_INJECTION 0
#endif
inline constexpr bool kFaultInjection = TSU_FAULT_INJECTION != 0;

// Test-only fault injection (TSU_ULT_TEST_FAULTS, a comma-separated list of
// the names below; see docs/ult.md).  Read only in builds configured with
// TSU_FAULT_INJECTION=ON; off by default; never set in production.
struct TestFaults {
  // Every push onto a run queue fails as if growing it had run out of memory
  // (the allocation-free fallback of Worker::enqueue takes the thread).
  bool queue_oom = false;
  // A hand-over of threads to another rank (Remote::give_work): its first
  // try to send the spawns to the thief and the notices to their creators
  // finds the queue full (TSU_EAGAIN), as a busy network would.
  bool handover_eagain = false;
  // A hand-over's send to the thief fails as if the thief were lost
  // (TSU_ERR_PEER_LOST), whatever the network says.
  bool handover_lost = false;
};

struct Settings {
  uint32_t workers = 1;
  std::size_t stack_size = 128 * 1024;
  bool guard = false;
  uint64_t spin_ns = 50'000;  // TSU_ULT_SPIN_US: an idle worker polls this long, then sleeps
  // TSU_ULT_REMOTE_SPIN_US: how long, instead, after it sent a spawn or an
  // exit value to another rank (the answer comes a network round trip
  // later: 20-60 us between namespaces here, past spin_ns, and waking a
  // sleeping worker costs as much again on an idle core).
  uint64_t remote_spin_ns = 200'000;
  bool fp_exact = false;      // TSU_ULT_FP_FLAGS=exact: every flag per thread (fp_state.hpp)
  // tsu_yield_when_idle() at init (TSU_YIELD; auto: more threads than CPUs,
  // the workers counted): a worker with nothing to run gives its CPU away.
  bool yield_cpu = false;
  TestFaults faults;          // TSU_ULT_TEST_FAULTS (fault-injection builds, tests only)
};

struct LbSettings {
  uint64_t period_ns = 1'000'000;  // TSU_ULT_LB_PERIOD: load broadcast / work request period
  uint32_t threshold = 4;          // TSU_ULT_LB_THRESHOLD: count change worth sending; load
                                   // above which a rank is asked for work
  bool enabled = true;             // TSU_ULT_LB=0 disables "any" spreading and stealing
};

// One variable.  The default is text parsed like the environment (so the
// default shown is the one used); in parentheses it is derived instead.
template <class T>
struct Setting {
  const char* env;
  const char* default_text;
  const char* help;
  // False and `error` set (a message naming the variable) on a bad value.
  bool (*parse)(const char* text, T& out, const char*& error);
  std::string (*show)(const T& in);
};

template <class T>
struct SettingsTable {
  std::vector<Setting<T>> rows;
  // Defaults, then the environment, row by row; stops at the first bad value.
  bool apply(T& out, const char*& error) const noexcept {
    for (const Setting<T>& s : rows) {
      if (s.default_text[0] != '(' && !s.parse(s.default_text, out, error)) return false;
      if (const char* v = std::getenv(s.env); v && !s.parse(v, out, error)) return false;
    }
    return true;
  }
};

// The scheduler's variables (TSU_ULT_WORKERS, _STACK_SIZE, _SPIN_US,
// _REMOTE_SPIN_US, _GUARD, _FP_FLAGS) and the load balancer's (TSU_ULT_LB,
// _LB_PERIOD, _LB_THRESHOLD).
const SettingsTable<Settings>& scheduler_settings();
const SettingsTable<LbSettings>& lb_settings();

// Workers when TSU_ULT_WORKERS is unset or 0: the CPUs this process may use
// divided by the ranks on its node (tsunagi's view, else TSU_LOCAL_SIZE).
uint32_t default_workers() noexcept;

// What tsu-info prints: every row with its effective value under the
// environment.  False and `error` set when a variable is invalid (the rows
// are still all listed, with the values read up to that one).
struct SettingView {
  std::string env, value, default_text, help;
};
bool describe_settings(std::vector<SettingView>& out, const char*& error);

}  // namespace tsu::ult
