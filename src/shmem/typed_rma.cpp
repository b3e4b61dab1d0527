// The typed, sized and byte RMA entry points of shmem.h (put, get, p, g,
// iput, iget, _nbi, put_signal), each with its shmem_ctx_ form: thin
// wrappers that turn elements into bytes and call rma.cpp.
#include "typed_common.hpp"

namespace sh = tsu::shmem;

// NAME: the name after "shmem_" / "shmem_ctx_"; DT, ST: dest and source
// element types; ELEM: bytes per element; OP: put, get, put_nbi or get_nbi.
#define TSU_XFER(NAME, DT, ST, ELEM, OP)                                                 \
  extern "C" void shmem_##NAME(DT* dest, const ST* source, size_t nelems, int pe) {      \
    constexpr const char* fn = "shmem_" #NAME;                                           \
    sh::check_init(fn);                                                                  \
    sh::OP(sh::default_context(), dest, source, sh::checked_bytes(nelems, ELEM, fn), pe, \
           fn);                                                                          \
  }                                                                                      \
  extern "C" void shmem_ctx_##NAME(shmem_ctx_t ctx, DT* dest, const ST* source,          \
                                   size_t nelems, int pe) {                              \
    constexpr const char* fn = "shmem_ctx_" #NAME;                                       \
    sh::check_init(fn);                                                                  \
    sh::OP(sh::context(ctx, fn), dest, source, sh::checked_bytes(nelems, ELEM, fn), pe,  \
           fn);                                                                          \
  }

// Strided: OP iput or iget.
#define TSU_STRIDED(NAME, DT, ST, ELEM, OP)                                               \
  extern "C" void shmem_##NAME(DT* dest, const ST* source, ptrdiff_t dst, ptrdiff_t sst,  \
                               size_t nelems, int pe) {                                   \
    constexpr const char* fn = "shmem_" #NAME;                                            \
    sh::check_init(fn);                                                                   \
    sh::OP(sh::default_context(), dest, source, dst, sst, nelems, ELEM, pe, fn);          \
  }                                                                                       \
  extern "C" void shmem_ctx_##NAME(shmem_ctx_t ctx, DT* dest, const ST* source,           \
                                   ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
    constexpr const char* fn = "shmem_ctx_" #NAME;                                        \
    sh::check_init(fn);                                                                   \
    sh::OP(sh::context(ctx, fn), dest, source, dst, sst, nelems, ELEM, pe, fn);           \
  }

// Put with signal; NBI true for the _nbi forms.
#define TSU_SIGNAL(NAME, DT, ST, ELEM, NBI)                                                  \
  extern "C" void shmem_##NAME(DT* dest, const ST* source, size_t nelems,                    \
                               uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {    \
    constexpr const char* fn = "shmem_" #NAME;                                               \
    sh::check_init(fn);                                                                      \
    sh::put_signal(sh::default_context(), dest, source, sh::checked_bytes(nelems, ELEM, fn), \
                   sig_addr, signal, sig_op, pe, NBI, fn);                                   \
  }                                                                                          \
  extern "C" void shmem_ctx_##NAME(shmem_ctx_t ctx, DT* dest, const ST* source,              \
                                   size_t nelems, uint64_t* sig_addr, uint64_t signal,       \
                                   int sig_op, int pe) {                                     \
    constexpr const char* fn = "shmem_ctx_" #NAME;                                           \
    sh::check_init(fn);                                                                      \
    sh::put_signal(sh::context(ctx, fn), dest, source, sh::checked_bytes(nelems, ELEM, fn),  \
                   sig_addr, signal, sig_op, pe, NBI, fn);                                   \
  }

// Single elements: p is a one-element put, g a one-element get.
#define TSU_P_G(T, N)                                                            \
  extern "C" void shmem_##N##_p(T* dest, T value, int pe) {                      \
    constexpr const char* fn = "shmem_" #N "_p";                                 \
    sh::check_init(fn);                                                          \
    sh::put(sh::default_context(), dest, &value, sizeof(T), pe, fn);             \
  }                                                                              \
  extern "C" void shmem_ctx_##N##_p(shmem_ctx_t ctx, T* dest, T value, int pe) { \
    constexpr const char* fn = "shmem_ctx_" #N "_p";                             \
    sh::check_init(fn);                                                          \
    sh::put(sh::context(ctx, fn), dest, &value, sizeof(T), pe, fn);              \
  }                                                                              \
  extern "C" T shmem_##N##_g(const T* source, int pe) {                          \
    constexpr const char* fn = "shmem_" #N "_g";                                 \
    sh::check_init(fn);                                                          \
    T value{};                                                                   \
    sh::get(sh::default_context(), &value, source, sizeof(T), pe, fn);           \
    return value;                                                                \
  }                                                                              \
  extern "C" T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T* source, int pe) {     \
    constexpr const char* fn = "shmem_ctx_" #N "_g";                             \
    sh::check_init(fn);                                                          \
    T value{};                                                                   \
    sh::get(sh::context(ctx, fn), &value, source, sizeof(T), pe, fn);            \
    return value;                                                                \
  }

#define TSU_TYPED_RMA(T, N)                             \
  TSU_XFER(N##_put, T, T, sizeof(T), put)               \
  TSU_XFER(N##_get, T, T, sizeof(T), get)               \
  TSU_XFER(N##_put_nbi, T, T, sizeof(T), put_nbi)       \
  TSU_XFER(N##_get_nbi, T, T, sizeof(T), get_nbi)       \
  TSU_STRIDED(N##_iput, T, T, sizeof(T), iput)          \
  TSU_STRIDED(N##_iget, T, T, sizeof(T), iget)          \
  TSU_SIGNAL(N##_put_signal, T, T, sizeof(T), false)    \
  TSU_SIGNAL(N##_put_signal_nbi, T, T, sizeof(T), true) \
  TSU_P_G(T, N)
TSU_SHMEM_RMA_TYPES(TSU_TYPED_RMA)

// Sized forms: BITS-bit elements (128: 16 bytes).
#define TSU_SIZED_RMA(BITS, BYTES)                         \
  TSU_XFER(put##BITS, void, void, BYTES, put)              \
  TSU_XFER(get##BITS, void, void, BYTES, get)              \
  TSU_XFER(put##BITS##_nbi, void, void, BYTES, put_nbi)    \
  TSU_XFER(get##BITS##_nbi, void, void, BYTES, get_nbi)    \
  TSU_STRIDED(iput##BITS, void, void, BYTES, iput)         \
  TSU_STRIDED(iget##BITS, void, void, BYTES, iget)         \
  TSU_SIGNAL(put##BITS##_signal, void, void, BYTES, false) \
  TSU_SIGNAL(put##BITS##_signal_nbi, void, void, BYTES, true)
TSU_SHMEM_SIZES(TSU_SIZED_RMA)

// Byte forms.
TSU_XFER(putmem, void, void, 1, put)
TSU_XFER(getmem, void, void, 1, get)
TSU_XFER(putmem_nbi, void, void, 1, put_nbi)
TSU_XFER(getmem_nbi, void, void, 1, get_nbi)
TSU_SIGNAL(putmem_signal, void, void, 1, false)
TSU_SIGNAL(putmem_signal_nbi, void, void, 1, true)
