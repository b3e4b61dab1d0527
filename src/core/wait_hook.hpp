// The calling thread's wait hook (tsu_set_wait_hook): how a user-level
// thread scheduler makes tsunagi's blocking calls yield instead of spin.
//
// Usage: a blocking wait polls its condition; when a poll found nothing to
// do it calls wait_hook_yield() first and only when that returns false falls
// back to its usual pause (util::Backoff).  The hook runs other user-level
// threads and returns when the waiter should poll again; the waiter stays on
// its pthread for the whole call (the scheduler pins it), so thread-locals
// read before the call stay valid.  Callers must not be in progress context
// (callbacks, handlers): the blocking calls refuse that before they wait.
//
// The park hook (tsu_set_park_hook) extends it: a wait whose completion side
// can wake it (wait_table.hpp) asks the scheduler to park the caller until
// woken instead of resuming it to poll.
#pragma once

#include <cstdint>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

class Waiter;

using WaitHookFn = int (*)(void* ctx);

// This pthread's hook (wait_hook.cpp); read inline by every tsu_progress.
extern thread_local WaitHookFn t_wait_hook;

void set_wait_hook(WaitHookFn fn, void* ctx) noexcept;
inline bool wait_hook_set() noexcept { return t_wait_hook != nullptr; }
// Calls the hook if one is set: true when it ran other work.
bool wait_hook_yield() noexcept;

void set_park_hook(tsu_park_fn_t park, tsu_unpark_fn_t unpark, void* ctx) noexcept;
struct ParkHook {
  tsu_park_fn_t park = nullptr;  // nullptr: none on this pthread
  tsu_unpark_fn_t unpark = nullptr;
  void* ctx = nullptr;
};
ParkHook park_hook() noexcept;

}  // namespace tsu::core
