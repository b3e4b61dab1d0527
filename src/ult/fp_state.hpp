// The floating-point state across a context switch.
//
// Boost.Context saves MXCSR (and the x87 control word) on every switch and
// loads the other context's saved value: each context keeps its own SSE
// environment, status flags included.  On some x86 cores a switch that
// changes MXCSR's value is slow: on the Intel Xeon of family 6 model 207
// (Emerald Rapids) this project runs on, a jump pair between two contexts
// whose MXCSR differ takes 66-82 ns per jump instead of 4-6 ns
// (docs/ult.md, "Floating-point state"; a plain ldmxcsr loop that toggles
// the same two values takes 2 ns, so it is the change inside a switch).  And
// the values differ as soon as one thread has computed in floating point and
// the other has not: nearly every floating-point operation raises the sticky
// inexact flag (FE_INEXACT, MXCSR bit 5), and it stays raised.
//
// So by default a context leaves every switch with the inexact flag raised:
// all saved values then agree unless a thread changed its rounding or
// exception modes, or raised one of the rarer flags (invalid, divide by zero,
// overflow, underflow, denormal), which stay per thread as before.  What is
// given up: inside a ULT, FE_INEXACT reads as raised once the thread has
// switched.  TSU_ULT_FP_FLAGS=exact (tsu_ult_config_t.fp_flags) keeps
// Boost's exact per-thread flags, at the cost above where they differ.
#pragma once

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define TSU_ULT_HAS_MXCSR 1
#endif

namespace tsu::ult {

// Call before a context saves its state (a switch away from it, or
// make_fcontext, which saves the caller's MXCSR as the new context's).
__attribute__((always_inline)) inline void fp_before_switch([[maybe_unused]] bool exact) noexcept {
#if TSU_ULT_HAS_MXCSR
  constexpr unsigned kInexact = 1u << 5;  // MXCSR.PE, the sticky precision flag
  if (exact) return;
  const unsigned m = _mm_getcsr();
  if (!(m & kInexact)) [[unlikely]]
    _mm_setcsr(m | kInexact);
#endif
}

}  // namespace tsu::ult
