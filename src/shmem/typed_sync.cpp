// The typed point-to-point synchronization of shmem.h: wait_until and test
// with their _all/_any/_some and _vector forms, and the deprecated waits.
// The single-variable forms call wait.cpp; the set forms are loops over
// test() here.  status[i] != 0 leaves element i out; _any answers SIZE_MAX
// and _some 0 when nothing is left in (OpenSHMEM 1.5, 9.10).
#include "typed_common.hpp"

#include <cstdint>

namespace sh = tsu::shmem;

namespace {

// The comparison values: one for every element (stride 0) or one each.
template <class T>
struct Values {
  const T* v;
  size_t stride;
  const T* at(size_t i) const noexcept { return v + i * stride; }
};

inline bool left_out(const int* status, size_t i) noexcept {
  return status != nullptr && status[i] != 0;
}

template <class T>
void check_set(const T* ivars, size_t nelems, const void* values, const char* fn) noexcept {
  if (nelems != 0 && ivars == nullptr) sh::fail(fn, "ivars is NULL with nelems %zu", nelems);
  if (nelems != 0 && values == nullptr) sh::fail(fn, "cmp_values is NULL");
}

template <class T>
bool holds(T* ivars, size_t i, int cmp, Values<T> values, const char* fn) noexcept {
  return sh::test(ivars + i, cmp, values.at(i), sh::sync_of<T>(), fn);
}

template <class T>
int test_all(T* ivars, size_t nelems, const int* status, int cmp, Values<T> values,
             const char* fn) noexcept {
  check_set(ivars, nelems, values.v, fn);
  for (size_t i = 0; i < nelems; ++i)
    if (!left_out(status, i) && !holds(ivars, i, cmp, values, fn)) return 0;
  return 1;
}

template <class T>
size_t test_any(T* ivars, size_t nelems, const int* status, int cmp, Values<T> values,
                const char* fn) noexcept {
  check_set(ivars, nelems, values.v, fn);
  for (size_t i = 0; i < nelems; ++i)
    if (!left_out(status, i) && holds(ivars, i, cmp, values, fn)) return i;
  return SIZE_MAX;
}

template <class T>
size_t test_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,
                 Values<T> values, const char* fn) noexcept {
  check_set(ivars, nelems, values.v, fn);
  if (nelems != 0 && indices == nullptr) sh::fail(fn, "indices is NULL");
  size_t found = 0;
  for (size_t i = 0; i < nelems; ++i)
    if (!left_out(status, i) && holds(ivars, i, cmp, values, fn)) indices[found++] = i;
  return found;
}

bool any_left_in(size_t nelems, const int* status) noexcept {
  for (size_t i = 0; i < nelems; ++i)
    if (!left_out(status, i)) return true;
  return false;
}

// All of them: each element in turn through wait.cpp's own waiting, so that
// a long wait sleeps as wait_until does.  On return every element has
// satisfied the comparison (each at its own moment, as in every reading of
// the specification: the others may be updated meanwhile).
template <class T>
void wait_all(T* ivars, size_t nelems, const int* status, int cmp, Values<T> values,
              const char* fn) noexcept {
  check_set(ivars, nelems, values.v, fn);
  for (size_t i = 0; i < nelems; ++i)
    if (!left_out(status, i)) sh::wait_until(ivars + i, cmp, values.at(i), sh::sync_of<T>(), fn);
}

template <class T>
size_t wait_any(T* ivars, size_t nelems, const int* status, int cmp, Values<T> values,
                const char* fn) noexcept {
  check_set(ivars, nelems, values.v, fn);
  if (!any_left_in(nelems, status)) return SIZE_MAX;
  unsigned spins = 0;
  for (;;) {
    const size_t i = test_any(ivars, nelems, status, cmp, values, fn);
    if (i != SIZE_MAX) return i;
    sh::wait_pause(&spins);
  }
}

template <class T>
size_t wait_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,
                 Values<T> values, const char* fn) noexcept {
  check_set(ivars, nelems, values.v, fn);
  if (!any_left_in(nelems, status)) return 0;
  unsigned spins = 0;
  for (;;) {
    const size_t n = test_some(ivars, nelems, indices, status, cmp, values, fn);
    if (n != 0) return n;
    sh::wait_pause(&spins);
  }
}

}  // namespace

// SET: the scalar-value form (name, one value) and the _vector one.
#define TSU_SYNC_SET(T, N, R, OP, IMPL)                                              \
  extern "C" R shmem_##N##_##OP(T* ivars, size_t nelems, const int* status, int cmp, \
                                T cmp_value) {                                       \
    constexpr const char* fn = "shmem_" #N "_" #OP;                                  \
    sh::check_init(fn);                                                              \
    return IMPL(ivars, nelems, status, cmp, Values<T>{&cmp_value, 0}, fn);           \
  }                                                                                  \
  extern "C" R shmem_##N##_##OP##_vector(T* ivars, size_t nelems, const int* status, \
                                         int cmp, T* cmp_values) {                   \
    constexpr const char* fn = "shmem_" #N "_" #OP "_vector";                        \
    sh::check_init(fn);                                                              \
    return IMPL(ivars, nelems, status, cmp, Values<T>{cmp_values, 1}, fn);           \
  }
#define TSU_SYNC_SOME(T, N, OP, IMPL)                                                      \
  extern "C" size_t shmem_##N##_##OP(T* ivars, size_t nelems, size_t* indices,             \
                                     const int* status, int cmp, T cmp_value) {            \
    constexpr const char* fn = "shmem_" #N "_" #OP;                                        \
    sh::check_init(fn);                                                                    \
    return IMPL(ivars, nelems, indices, status, cmp, Values<T>{&cmp_value, 0}, fn);        \
  }                                                                                        \
  extern "C" size_t shmem_##N##_##OP##_vector(T* ivars, size_t nelems, size_t* indices,    \
                                              const int* status, int cmp, T* cmp_values) { \
    constexpr const char* fn = "shmem_" #N "_" #OP "_vector";                              \
    sh::check_init(fn);                                                                    \
    return IMPL(ivars, nelems, indices, status, cmp, Values<T>{cmp_values, 1}, fn);        \
  }

#define TSU_TYPED_SYNC(T, N)                                              \
  extern "C" void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value) { \
    constexpr const char* fn = "shmem_" #N "_wait_until";                 \
    sh::check_init(fn);                                                   \
    sh::wait_until(ivar, cmp, &cmp_value, sh::sync_of<T>(), fn);          \
  }                                                                       \
  extern "C" int shmem_##N##_test(T* ivar, int cmp, T cmp_value) {        \
    constexpr const char* fn = "shmem_" #N "_test";                       \
    sh::check_init(fn);                                                   \
    return sh::test(ivar, cmp, &cmp_value, sh::sync_of<T>(), fn) ? 1 : 0; \
  }                                                                       \
  extern "C" void shmem_##N##_wait(T* ivar, T cmp_value) {                \
    constexpr const char* fn = "shmem_" #N "_wait";                       \
    sh::check_init(fn);                                                   \
    sh::wait_until(ivar, SHMEM_CMP_NE, &cmp_value, sh::sync_of<T>(), fn); \
  }                                                                       \
  TSU_SYNC_SET(T, N, void, wait_until_all, wait_all)                      \
  TSU_SYNC_SET(T, N, size_t, wait_until_any, wait_any)                    \
  TSU_SYNC_SOME(T, N, wait_until_some, wait_some)                         \
  TSU_SYNC_SET(T, N, int, test_all, test_all)                             \
  TSU_SYNC_SET(T, N, size_t, test_any, test_any)                          \
  TSU_SYNC_SOME(T, N, test_some, test_some)
TSU_SHMEM_SYNC_TYPES(TSU_TYPED_SYNC)

// The 1.2 untyped forms on long.
extern "C" void shmem_wait_until(long* ivar, int cmp, long cmp_value) {
  constexpr const char* fn = "shmem_wait_until";
  sh::check_init(fn);
  sh::wait_until(ivar, cmp, &cmp_value, sh::sync_of<long>(), fn);
}
extern "C" void shmem_wait(long* ivar, long cmp_value) {
  constexpr const char* fn = "shmem_wait";
  sh::check_init(fn);
  sh::wait_until(ivar, SHMEM_CMP_NE, &cmp_value, sh::sync_of<long>(), fn);
}
