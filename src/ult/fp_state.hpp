// The floating-point state across a context switch.
//
// Boost.Context saves MXCSR (and the x87 control word) on every switch and
// loads the other context's saved value: each context keeps its own SSE
// environment, status flags included.  On some x86 cores a switch that
// changes MXCSR's value is slow: on the Intel Xeon of family 6 model 207
// (Emerald Rapids) this project runs on, a jump between two contexts whose
// MXCSR differ costs an order of magnitude more than one between contexts
// whose MXCSR match, and a plain ldmxcsr loop toggling the same two values
// does not (docs/ult.md, "Floating-point state", has the figures).  And
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
//
// The x87 status word holds flags of its own (raised by long double and x87
// code, and by glibc's feraiseexcept for overflow, underflow and inexact);
// fetestexcept reads them OR'ed with MXCSR's.  Boost.Context does not save
// it.  In exact mode we do: each thread's x87 flags are saved in its record
// when it switches away and put back when it is resumed, only where they
// differ from what the CPU holds (fnclex, or fnstenv + fldenv).
// The fast mode leaves them to the worker's pthread, shared by its threads:
// reading them (fnstsw) on every switch would cost about as much as the fast
// mode's stmxcsr (docs/ult.md).
#pragma once

#include <cstdint>

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define TSU_ULT_HAS_MXCSR 1
#endif
#if defined(__x86_64__) || defined(__i386__)
#define TSU_ULT_HAS_X87 1
#endif

namespace tsu::ult {

// What fnstenv writes (the 28-byte protected-mode layout).
struct X87Env {
  uint16_t cw, cw_pad, sw, sw_pad;
  uint32_t rest[5];
};

// The x87 exception flags (IE DE ZE OE UE PE: FE_* values on x86).
constexpr uint8_t kX87Flags = 0x3f;

__attribute__((always_inline)) inline uint8_t x87_read_flags() noexcept {
#if TSU_ULT_HAS_X87
  uint16_t sw;
  asm volatile("fnstsw %0" : "=a"(sw));
  return static_cast<uint8_t>(sw & kX87Flags);
#else
  return 0;
#endif
}

// Makes the CPU's x87 flags `flags` (rare: the caller found them different).
__attribute__((always_inline)) inline void x87_load_flags([[maybe_unused]] uint8_t flags,
                                                          [[maybe_unused]] X87Env& scratch) noexcept {
#if TSU_ULT_HAS_X87
  if (!flags) {
    asm volatile("fnclex");
    return;
  }
  asm volatile("fnstenv %0" : "=m"(scratch));
  // The flags, with no exception pending (ES and B clear); fldenv also puts
  // back the control word, whose exceptions fnstenv masked.
  scratch.sw = static_cast<uint16_t>((scratch.sw & ~0x80ffu) | flags);
  asm volatile("fldenv %0" : : "m"(scratch));
#endif
}

// The MXCSR half, also before make_fcontext (which saves the caller's MXCSR
// as the new context's).
__attribute__((always_inline)) inline void mxcsr_before_switch([[maybe_unused]] bool exact) noexcept {
#if TSU_ULT_HAS_MXCSR
  constexpr unsigned kInexact = 1u << 5;  // MXCSR.PE, the sticky precision flag
  if (exact) return;
  const unsigned m = _mm_getcsr();
  if (!(m & kInexact)) [[unlikely]]
    _mm_setcsr(m | kInexact);
#endif
}

// Call before a switch.  from / to: the x87 flags saved for the leaving and
// the resumed thread (nullptr: the worker's loop, whose flags nobody reads);
// in exact mode the CPU holds the resumed thread's after it.
__attribute__((always_inline)) inline void fp_before_switch(bool exact, uint8_t* from, const uint8_t* to,
                                                            X87Env& scratch) noexcept {
  if (!exact) {
    mxcsr_before_switch(false);
    return;
  }
  const uint8_t now = x87_read_flags();
  if (from) *from = now;
  if (to && *to != now) [[unlikely]]
    x87_load_flags(*to, scratch);
}

// A thread run inline by its joiner (Worker::run_inline) shares no switch
// with it.  In exact mode the joiner's environment is saved before and put
// back after, so what the thread changes ends with it; the fast mode leaves
// it shared (saving it is a noticeable part of a create + join: docs/ult.md,
// *Inline threads*).
struct FpSaved {
  unsigned mxcsr = 0;
  uint16_t x87_cw = 0;
  uint8_t x87_flags = 0;
};
inline FpSaved fp_save_exact() noexcept {
  FpSaved s;
#if TSU_ULT_HAS_MXCSR
  s.mxcsr = _mm_getcsr();
#endif
#if TSU_ULT_HAS_X87
  asm volatile("fnstcw %0" : "=m"(s.x87_cw));
#endif
  s.x87_flags = x87_read_flags();
  return s;
}
// (Restored without comparing: loading an unchanged value is cheaper than
// reading MXCSR to compare; docs/ult.md, *Inline threads*.)
inline void fp_restore_exact([[maybe_unused]] const FpSaved& s, X87Env& scratch) noexcept {
#if TSU_ULT_HAS_MXCSR
  _mm_setcsr(s.mxcsr);
#endif
#if TSU_ULT_HAS_X87
  asm volatile("fldcw %0" : : "m"(s.x87_cw));
#endif
  if (x87_read_flags() != s.x87_flags) x87_load_flags(s.x87_flags, scratch);
}

}  // namespace tsu::ult
