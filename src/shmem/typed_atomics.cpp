// The typed atomic entry points of shmem.h, each with its shmem_ctx_ form,
// and the deprecated 1.3 names: thin wrappers that name the word kind of
// the type and call atomics.cpp.
#include "typed_common.hpp"

namespace sh = tsu::shmem;

namespace {

// Operands are not deduced (nullptr where an operation has none).
template <class T>
using Op = std::type_identity_t<T>;

// The one call behind every entry point below.  Operands travel by pointer
// in the word's own type; fetching operations return the old value.
template <class T>
inline T amo(sh::Context* c, T* dest, sh::Amo op, const Op<T>* operand,
             const Op<T>* compare, int pe, const char* fn) noexcept {
  T old{};
  sh::atomic(c, dest, op, sh::word_of<T>(), operand, compare, &old, pe, false, fn);
  return old;
}
template <class T>
inline void amo_nofetch(sh::Context* c, T* dest, sh::Amo op, const Op<T>* operand, int pe,
                        const char* fn) noexcept {
  sh::atomic(c, dest, op, sh::word_of<T>(), operand, nullptr, nullptr, pe, false, fn);
}
// _nbi: the old value lands in *fetch by the context's next quiet.
template <class T>
inline void amo_nbi(sh::Context* c, T* fetch, T* dest, sh::Amo op, const Op<T>* operand,
                    const Op<T>* compare, int pe, const char* fn) noexcept {
  sh::atomic(c, dest, op, sh::word_of<T>(), operand, compare, fetch, pe, true, fn);
}

}  // namespace

// Each entry point twice: B is the name's stem, CTXP the context parameter
// (with its comma), CTX the internal context.  DEF_* get both forms.
#define TSU_CTXP_PLAIN
#define TSU_CTXP_CTX shmem_ctx_t ctx,
#define TSU_CTX_PLAIN sh::default_context()
#define TSU_CTX_CTX sh::context(ctx, fn)
#define TSU_BOTH(M, T, N, ...)                                             \
  M(shmem_##N, "shmem_" #N, TSU_CTXP_PLAIN, TSU_CTX_PLAIN, T, __VA_ARGS__) \
  M(shmem_ctx_##N, "shmem_ctx_" #N, TSU_CTXP_CTX, TSU_CTX_CTX, T, __VA_ARGS__)

// fetch, set, swap and their _nbi: every AMO type.
#define TSU_AMO_EXT(B, S, CTXP, CTX, T, _)                                                  \
  extern "C" T B##_atomic_fetch(CTXP const T* source, int pe) {                             \
    constexpr const char* fn = S "_atomic_fetch";                                           \
    sh::check_init(fn);                                                                     \
    return amo(CTX, const_cast<T*>(source), sh::Amo::kFetch, nullptr, nullptr, pe, fn);     \
  }                                                                                         \
  extern "C" void B##_atomic_set(CTXP T* dest, T value, int pe) {                           \
    constexpr const char* fn = S "_atomic_set";                                             \
    sh::check_init(fn);                                                                     \
    amo_nofetch(CTX, dest, sh::Amo::kSet, &value, pe, fn);                                  \
  }                                                                                         \
  extern "C" T B##_atomic_swap(CTXP T* dest, T value, int pe) {                             \
    constexpr const char* fn = S "_atomic_swap";                                            \
    sh::check_init(fn);                                                                     \
    return amo(CTX, dest, sh::Amo::kSwap, &value, nullptr, pe, fn);                         \
  }                                                                                         \
  extern "C" void B##_atomic_fetch_nbi(CTXP T* fetch, const T* source, int pe) {            \
    constexpr const char* fn = S "_atomic_fetch_nbi";                                       \
    sh::check_init(fn);                                                                     \
    amo_nbi(CTX, fetch, const_cast<T*>(source), sh::Amo::kFetch, nullptr, nullptr, pe, fn); \
  }                                                                                         \
  extern "C" void B##_atomic_swap_nbi(CTXP T* fetch, T* dest, T value, int pe) {            \
    constexpr const char* fn = S "_atomic_swap_nbi";                                        \
    sh::check_init(fn);                                                                     \
    amo_nbi(CTX, fetch, dest, sh::Amo::kSwap, &value, nullptr, pe, fn);                     \
  }

// An operation with one operand: fetching, not, and fetching _nbi.
#define TSU_AMO_OP(B, S, CTXP, CTX, T, OP, KFETCH, KPLAIN)                               \
  extern "C" T B##_atomic_fetch_##OP(CTXP T* dest, T value, int pe) {                    \
    constexpr const char* fn = S "_atomic_fetch_" #OP;                                   \
    sh::check_init(fn);                                                                  \
    return amo(CTX, dest, sh::Amo::KFETCH, &value, nullptr, pe, fn);                     \
  }                                                                                      \
  extern "C" void B##_atomic_##OP(CTXP T* dest, T value, int pe) {                       \
    constexpr const char* fn = S "_atomic_" #OP;                                         \
    sh::check_init(fn);                                                                  \
    amo_nofetch(CTX, dest, sh::Amo::KPLAIN, &value, pe, fn);                             \
  }                                                                                      \
  extern "C" void B##_atomic_fetch_##OP##_nbi(CTXP T* fetch, T* dest, T value, int pe) { \
    constexpr const char* fn = S "_atomic_fetch_" #OP "_nbi";                            \
    sh::check_init(fn);                                                                  \
    amo_nbi(CTX, fetch, dest, sh::Amo::KFETCH, &value, nullptr, pe, fn);                 \
  }

// compare_swap and inc (the operations of the standard types beyond add).
#define TSU_AMO_CSWAP_INC(B, S, CTXP, CTX, T, _)                                       \
  extern "C" T B##_atomic_compare_swap(CTXP T* dest, T cond, T value, int pe) {        \
    constexpr const char* fn = S "_atomic_compare_swap";                               \
    sh::check_init(fn);                                                                \
    return amo(CTX, dest, sh::Amo::kCompareSwap, &value, &cond, pe, fn);               \
  }                                                                                    \
  extern "C" void B##_atomic_compare_swap_nbi(CTXP T* fetch, T* dest, T cond, T value, \
                                              int pe) {                                \
    constexpr const char* fn = S "_atomic_compare_swap_nbi";                           \
    sh::check_init(fn);                                                                \
    amo_nbi(CTX, fetch, dest, sh::Amo::kCompareSwap, &value, &cond, pe, fn);           \
  }                                                                                    \
  extern "C" T B##_atomic_fetch_inc(CTXP T* dest, int pe) {                            \
    constexpr const char* fn = S "_atomic_fetch_inc";                                  \
    sh::check_init(fn);                                                                \
    return amo(CTX, dest, sh::Amo::kFetchInc, nullptr, nullptr, pe, fn);               \
  }                                                                                    \
  extern "C" void B##_atomic_inc(CTXP T* dest, int pe) {                               \
    constexpr const char* fn = S "_atomic_inc";                                        \
    sh::check_init(fn);                                                                \
    amo_nofetch(CTX, dest, sh::Amo::kInc, nullptr, pe, fn);                            \
  }                                                                                    \
  extern "C" void B##_atomic_fetch_inc_nbi(CTXP T* fetch, T* dest, int pe) {           \
    constexpr const char* fn = S "_atomic_fetch_inc_nbi";                              \
    sh::check_init(fn);                                                                \
    amo_nbi(CTX, fetch, dest, sh::Amo::kFetchInc, nullptr, nullptr, pe, fn);           \
  }

#define TSU_TYPED_AMO_EXT(T, N) TSU_BOTH(TSU_AMO_EXT, T, N, ~)
#define TSU_TYPED_AMO_STD(T, N)        \
  TSU_BOTH(TSU_AMO_EXT, T, N, ~)       \
  TSU_BOTH(TSU_AMO_CSWAP_INC, T, N, ~) \
  TSU_BOTH(TSU_AMO_OP, T, N, add, kFetchAdd, kAdd)
#define TSU_TYPED_AMO_BIT(T, N)                    \
  TSU_BOTH(TSU_AMO_OP, T, N, and, kFetchAnd, kAnd) \
  TSU_BOTH(TSU_AMO_OP, T, N, or, kFetchOr, kOr)    \
  TSU_BOTH(TSU_AMO_OP, T, N, xor, kFetchXor, kXor)
TSU_SHMEM_AMO_STD_TYPES(TSU_TYPED_AMO_STD)
TSU_SHMEM_AMO_EXT_TYPES(TSU_TYPED_AMO_EXT)
TSU_SHMEM_AMO_BIT_TYPES(TSU_TYPED_AMO_BIT)

// ---- Deprecated since 1.4 (the 1.3 names, default context) ------------------
#define TSU_OLD_AMO_FP(T, N)                                                            \
  extern "C" T shmem_##N##_fetch(const T* source, int pe) {                             \
    constexpr const char* fn = "shmem_" #N "_fetch";                                    \
    sh::check_init(fn);                                                                 \
    return amo(sh::default_context(), const_cast<T*>(source), sh::Amo::kFetch, nullptr, \
               nullptr, pe, fn);                                                        \
  }                                                                                     \
  extern "C" void shmem_##N##_set(T* dest, T value, int pe) {                           \
    constexpr const char* fn = "shmem_" #N "_set";                                      \
    sh::check_init(fn);                                                                 \
    amo_nofetch(sh::default_context(), dest, sh::Amo::kSet, &value, pe, fn);            \
  }                                                                                     \
  extern "C" T shmem_##N##_swap(T* dest, T value, int pe) {                             \
    constexpr const char* fn = "shmem_" #N "_swap";                                     \
    sh::check_init(fn);                                                                 \
    return amo(sh::default_context(), dest, sh::Amo::kSwap, &value, nullptr, pe, fn);   \
  }
#define TSU_OLD_AMO_INT(T, N)                                                              \
  TSU_OLD_AMO_FP(T, N)                                                                     \
  extern "C" T shmem_##N##_cswap(T* dest, T cond, T value, int pe) {                       \
    constexpr const char* fn = "shmem_" #N "_cswap";                                       \
    sh::check_init(fn);                                                                    \
    return amo(sh::default_context(), dest, sh::Amo::kCompareSwap, &value, &cond, pe, fn); \
  }                                                                                        \
  extern "C" T shmem_##N##_finc(T* dest, int pe) {                                         \
    constexpr const char* fn = "shmem_" #N "_finc";                                        \
    sh::check_init(fn);                                                                    \
    return amo(sh::default_context(), dest, sh::Amo::kFetchInc, nullptr, nullptr, pe, fn); \
  }                                                                                        \
  extern "C" void shmem_##N##_inc(T* dest, int pe) {                                       \
    constexpr const char* fn = "shmem_" #N "_inc";                                         \
    sh::check_init(fn);                                                                    \
    amo_nofetch(sh::default_context(), dest, sh::Amo::kInc, nullptr, pe, fn);              \
  }                                                                                        \
  extern "C" T shmem_##N##_fadd(T* dest, T value, int pe) {                                \
    constexpr const char* fn = "shmem_" #N "_fadd";                                        \
    sh::check_init(fn);                                                                    \
    return amo(sh::default_context(), dest, sh::Amo::kFetchAdd, &value, nullptr, pe, fn);  \
  }                                                                                        \
  extern "C" void shmem_##N##_add(T* dest, T value, int pe) {                              \
    constexpr const char* fn = "shmem_" #N "_add";                                         \
    sh::check_init(fn);                                                                    \
    amo_nofetch(sh::default_context(), dest, sh::Amo::kAdd, &value, pe, fn);               \
  }
TSU_SHMEM_AMO_OLD_INT_TYPES(TSU_OLD_AMO_INT)
TSU_SHMEM_AMO_OLD_FP_TYPES(TSU_OLD_AMO_FP)

extern "C" long shmem_swap(long* dest, long value, int pe) {
  constexpr const char* fn = "shmem_swap";
  sh::check_init(fn);
  return amo(sh::default_context(), dest, sh::Amo::kSwap, &value, nullptr, pe, fn);
}
