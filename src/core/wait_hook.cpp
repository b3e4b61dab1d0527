#include "core/wait_hook.hpp"

namespace tsu::core {

// Per pthread; written only by the thread itself (set at a worker's start).
thread_local WaitHookFn t_wait_hook = nullptr;

namespace {
thread_local void* t_hook_ctx = nullptr;
thread_local ParkHook t_park;
}  // namespace

void set_wait_hook(WaitHookFn fn, void* ctx) noexcept {
  t_wait_hook = fn;
  t_hook_ctx = fn ? ctx : nullptr;
}

bool wait_hook_yield() noexcept {
  // Read once: the hook may switch stacks, and after it returns this is
  // still the same pthread (see the header), so nothing here is reused.
  WaitHookFn fn = t_wait_hook;
  return fn && fn(t_hook_ctx) != 0;
}

void set_park_hook(tsu_park_fn_t park, tsu_unpark_fn_t unpark, void* ctx) noexcept {
  t_park = park ? ParkHook{park, unpark, ctx} : ParkHook{};
}

ParkHook park_hook() noexcept { return t_park; }

}  // namespace tsu::core
