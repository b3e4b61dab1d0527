// Context switches: Boost.Context's fcontext (no assembly of ours), and the
// annotations ThreadSanitizer and AddressSanitizer need to follow a switch
// of stacks (no-ops in other builds).
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#define TSU_ULT_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TSU_ULT_ASAN 1
#include <sanitizer/common_interface_defs.h>
#endif

namespace tsu::ult {

using Fctx = boost::context::detail::fcontext_t;
using Transfer = boost::context::detail::transfer_t;
using boost::context::detail::jump_fcontext;
using boost::context::detail::make_fcontext;
using boost::context::detail::ontop_fcontext;

// What the sanitizers know of one execution context (a ULT or a worker's
// scheduler loop).  Empty outside sanitizer builds.
struct SanitizerContext {
#if TSU_ULT_TSAN
  void* tsan_fiber = nullptr;
#endif
#if TSU_ULT_ASAN
  void* asan_fake_stack = nullptr;
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
#endif
};

// Call right before jumping from `from` to `to`; `dying`: `from` never resumes.
inline void sanitizer_before_switch([[maybe_unused]] SanitizerContext& from,
                                    [[maybe_unused]] SanitizerContext& to,
                                    [[maybe_unused]] bool dying) noexcept {
#if TSU_ULT_ASAN
  __sanitizer_start_switch_fiber(dying ? nullptr : &from.asan_fake_stack, to.stack_bottom,
                                 to.stack_size);
#endif
#if TSU_ULT_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
}

// Call first thing after landing in `now` (the context that runs again).
inline void sanitizer_after_switch([[maybe_unused]] SanitizerContext& now) noexcept {
#if TSU_ULT_ASAN
  __sanitizer_finish_switch_fiber(now.asan_fake_stack, nullptr, nullptr);
#endif
}

}  // namespace tsu::ult
