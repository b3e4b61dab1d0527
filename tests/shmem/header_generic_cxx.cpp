// Compile-only check of shmem.h's C++ overloads: each generic name called
// once for every type the specification lists for it, with and without a
// context, and the value-returning ones checked for their type.  Built as
// C++11 and C++20 with the project's warnings as errors.
#include <shmem.h>

#include <complex>
#include <type_traits>

namespace {

#define SAME_TYPE(expr, T) \
  static_assert(std::is_same<decltype(expr), T>::value, #expr " is " #T)

template <class T>
void rma(shmem_ctx_t ctx, shmem_team_t team, T* d, const T* s, uint64_t* sig) {
  shmem_put(d, s, 1, 0);
  shmem_put(ctx, d, s, 1, 0);
  shmem_get(d, s, 1, 0);
  shmem_get(ctx, d, s, 1, 0);
  shmem_put_nbi(d, s, 1, 0);
  shmem_put_nbi(ctx, d, s, 1, 0);
  shmem_get_nbi(d, s, 1, 0);
  shmem_get_nbi(ctx, d, s, 1, 0);
  shmem_iput(d, s, 2, 1, 1, 0);
  shmem_iput(ctx, d, s, 2, 1, 1, 0);
  shmem_iget(d, s, 1, 2, 1, 0);
  shmem_iget(ctx, d, s, 1, 2, 1, 0);
  shmem_put_signal(d, s, 1, sig, 1, SHMEM_SIGNAL_SET, 0);
  shmem_put_signal(ctx, d, s, 1, sig, 1, SHMEM_SIGNAL_ADD, 0);
  shmem_put_signal_nbi(d, s, 1, sig, 1, SHMEM_SIGNAL_SET, 0);
  shmem_put_signal_nbi(ctx, d, s, 1, sig, 1, SHMEM_SIGNAL_ADD, 0);
  SAME_TYPE(shmem_g(s, 0), T);
  SAME_TYPE(shmem_g(ctx, s, 0), T);
  T v = shmem_g(s, 0);
  v = shmem_g(ctx, s, 0);
  shmem_p(d, v, 0);
  shmem_p(ctx, d, v, 0);
  (void)shmem_broadcast(team, d, s, 1, 0);
  (void)shmem_collect(team, d, s, 1);
  (void)shmem_fcollect(team, d, s, 1);
  (void)shmem_alltoall(team, d, s, 1);
  (void)shmem_alltoalls(team, d, s, 1, 1, 1);
}

template <class T>
void amo_ext(shmem_ctx_t ctx, T* d, T* f) {
  SAME_TYPE(shmem_atomic_fetch(d, 0), T);
  SAME_TYPE(shmem_atomic_swap(ctx, d, T(1), 0), T);
  T v = shmem_atomic_fetch(d, 0);
  v = shmem_atomic_fetch(ctx, d, 0);
  shmem_atomic_set(d, v, 0);
  shmem_atomic_set(ctx, d, v, 0);
  v = shmem_atomic_swap(d, v, 0);
  v = shmem_atomic_swap(ctx, d, v, 0);
  shmem_atomic_fetch_nbi(f, d, 0);
  shmem_atomic_fetch_nbi(ctx, f, d, 0);
  shmem_atomic_swap_nbi(f, d, v, 0);
  shmem_atomic_swap_nbi(ctx, f, d, v, 0);
}

template <class T>
void amo_std(shmem_ctx_t ctx, T* d, T* f) {
  amo_ext(ctx, d, f);
  T v = 1;
  SAME_TYPE(shmem_atomic_compare_swap(d, v, v, 0), T);
  SAME_TYPE(shmem_atomic_fetch_add(ctx, d, v, 0), T);
  v = shmem_atomic_compare_swap(d, v, v, 0);
  v = shmem_atomic_compare_swap(ctx, d, v, v, 0);
  v = shmem_atomic_fetch_inc(d, 0);
  v = shmem_atomic_fetch_inc(ctx, d, 0);
  shmem_atomic_inc(d, 0);
  shmem_atomic_inc(ctx, d, 0);
  v = shmem_atomic_fetch_add(d, v, 0);
  v = shmem_atomic_fetch_add(ctx, d, v, 0);
  shmem_atomic_add(d, v, 0);
  shmem_atomic_add(ctx, d, v, 0);
  shmem_atomic_compare_swap_nbi(f, d, v, v, 0);
  shmem_atomic_compare_swap_nbi(ctx, f, d, v, v, 0);
  shmem_atomic_fetch_inc_nbi(f, d, 0);
  shmem_atomic_fetch_inc_nbi(ctx, f, d, 0);
  shmem_atomic_fetch_add_nbi(f, d, v, 0);
  shmem_atomic_fetch_add_nbi(ctx, f, d, v, 0);
}

template <class T>
void amo_bit(shmem_ctx_t ctx, T* d, T* f) {
  T v = 1;
  SAME_TYPE(shmem_atomic_fetch_or(d, v, 0), T);
  v = shmem_atomic_fetch_and(d, v, 0);
  v = shmem_atomic_fetch_and(ctx, d, v, 0);
  v = shmem_atomic_fetch_or(d, v, 0);
  v = shmem_atomic_fetch_or(ctx, d, v, 0);
  v = shmem_atomic_fetch_xor(d, v, 0);
  v = shmem_atomic_fetch_xor(ctx, d, v, 0);
  shmem_atomic_and(d, v, 0);
  shmem_atomic_and(ctx, d, v, 0);
  shmem_atomic_or(d, v, 0);
  shmem_atomic_or(ctx, d, v, 0);
  shmem_atomic_xor(d, v, 0);
  shmem_atomic_xor(ctx, d, v, 0);
  shmem_atomic_fetch_and_nbi(f, d, v, 0);
  shmem_atomic_fetch_and_nbi(ctx, f, d, v, 0);
  shmem_atomic_fetch_or_nbi(f, d, v, 0);
  shmem_atomic_fetch_or_nbi(ctx, f, d, v, 0);
  shmem_atomic_fetch_xor_nbi(f, d, v, 0);
  shmem_atomic_fetch_xor_nbi(ctx, f, d, v, 0);
}

template <class T>
size_t sync(T* ivars, T* values, const int* status, size_t* idx) {
  const T one = 1;
  SAME_TYPE(shmem_test_any(ivars, 4, status, SHMEM_CMP_EQ, one), size_t);
  SAME_TYPE(shmem_test_all(ivars, 4, status, SHMEM_CMP_EQ, one), int);
  size_t n = 0;
  shmem_wait_until(ivars, SHMEM_CMP_NE, T(0));
  shmem_wait_until_all(ivars, 4, status, SHMEM_CMP_GE, one);
  n += shmem_wait_until_any(ivars, 4, status, SHMEM_CMP_GT, T(0));
  n += shmem_wait_until_some(ivars, 4, idx, status, SHMEM_CMP_LT, T(9));
  shmem_wait_until_all_vector(ivars, 4, status, SHMEM_CMP_EQ, values);
  n += shmem_wait_until_any_vector(ivars, 4, status, SHMEM_CMP_EQ, values);
  n += shmem_wait_until_some_vector(ivars, 4, idx, status, SHMEM_CMP_EQ, values);
  n += static_cast<size_t>(shmem_test(ivars, SHMEM_CMP_LE, T(3)));
  n += static_cast<size_t>(shmem_test_all(ivars, 4, status, SHMEM_CMP_EQ, one));
  n += shmem_test_any(ivars, 4, nullptr, SHMEM_CMP_EQ, one);
  n += shmem_test_some(ivars, 4, idx, status, SHMEM_CMP_EQ, one);
  n += static_cast<size_t>(shmem_test_all_vector(ivars, 4, status, SHMEM_CMP_EQ, values));
  n += shmem_test_any_vector(ivars, 4, status, SHMEM_CMP_EQ, values);
  n += shmem_test_some_vector(ivars, 4, idx, status, SHMEM_CMP_EQ, values);
  return n;
}

template <class T>
int red_bit(shmem_team_t t, T* d, const T* s) {
  return shmem_and_reduce(t, d, s, 2) + shmem_or_reduce(t, d, s, 2) +
         shmem_xor_reduce(t, d, s, 2);
}
template <class T>
int red_arith(shmem_team_t t, T* d, const T* s) {
  return shmem_sum_reduce(t, d, s, 2) + shmem_prod_reduce(t, d, s, 2);
}
template <class T>
int red_ord(shmem_team_t t, T* d, const T* s) {
  return red_arith(t, d, s) + shmem_max_reduce(t, d, s, 2) + shmem_min_reduce(t, d, s, 2);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
template <class T>
T old_fp(T* d) {
  T v = shmem_fetch(d, 0);
  shmem_set(d, v, 0);
  return shmem_swap(d, v, 0);
}
template <class T>
T old_int(T* d) {
  T v = old_fp(d);
  SAME_TYPE(shmem_fadd(d, v, 0), T);
  v = shmem_cswap(d, v, v, 0);
  v = shmem_finc(d, 0);
  shmem_inc(d, 0);
  v = shmem_fadd(d, v, 0);
  shmem_add(d, v, 0);
  return v;
}
template <class T>
void old_wait(T* ivar) {
  shmem_wait(ivar, T(0));
  volatile T* flag = ivar;  // as programs written for the 1.2 signatures declare them
  shmem_wait(flag, T(0));
  shmem_wait_until(flag, SHMEM_CMP_NE, T(0));
  (void)shmem_test(flag, SHMEM_CMP_EQ, T(1));
}
void sync_forms(shmem_team_t team, long* pSync) {
  (void)shmem_sync(team);
  (void)shmem_team_sync(team);
  shmem_barrier_all();
  shmem_sync_all();
  shmem_sync(0, 0, 2, pSync);
  shmem_barrier(0, 0, 2, pSync);
}
#pragma GCC diagnostic pop

}  // namespace

// Every template above, instantiated for each type the specification lists
// (the fixed-width, size and ptrdiff types reach their C type's overload).
void instantiate_all(shmem_ctx_t ctx, shmem_team_t team, long* pSync);
void instantiate_all(shmem_ctx_t ctx, shmem_team_t team, long* pSync) {
#define RMA(T) rma<T>(ctx, team, nullptr, nullptr, nullptr);
  RMA(float) RMA(double) RMA(long double) RMA(char) RMA(signed char) RMA(short) RMA(int)
  RMA(long) RMA(long long) RMA(unsigned char) RMA(unsigned short) RMA(unsigned int)
  RMA(unsigned long) RMA(unsigned long long) RMA(int8_t) RMA(int16_t) RMA(int32_t)
  RMA(int64_t) RMA(uint8_t) RMA(uint16_t) RMA(uint32_t) RMA(uint64_t) RMA(size_t)
  RMA(ptrdiff_t)
#define AMO_STD(T) amo_std<T>(ctx, nullptr, nullptr);
  AMO_STD(int) AMO_STD(long) AMO_STD(long long) AMO_STD(unsigned int) AMO_STD(unsigned long)
  AMO_STD(unsigned long long) AMO_STD(int32_t) AMO_STD(int64_t) AMO_STD(uint32_t)
  AMO_STD(uint64_t) AMO_STD(size_t) AMO_STD(ptrdiff_t)
  amo_ext<float>(ctx, nullptr, nullptr);
  amo_ext<double>(ctx, nullptr, nullptr);
#define AMO_BIT(T) amo_bit<T>(ctx, nullptr, nullptr);
  AMO_BIT(unsigned int) AMO_BIT(unsigned long) AMO_BIT(unsigned long long) AMO_BIT(int32_t)
  AMO_BIT(int64_t) AMO_BIT(uint32_t) AMO_BIT(uint64_t)
#define SYNC(T) (void)sync<T>(nullptr, nullptr, nullptr, nullptr); old_wait<T>(nullptr);
  SYNC(short) SYNC(int) SYNC(long) SYNC(long long) SYNC(unsigned short) SYNC(unsigned int)
  SYNC(unsigned long) SYNC(unsigned long long) SYNC(int32_t) SYNC(int64_t) SYNC(uint32_t)
  SYNC(uint64_t) SYNC(size_t) SYNC(ptrdiff_t)
#define RED_BIT(T) (void)red_bit<T>(team, nullptr, nullptr);
  RED_BIT(unsigned char) RED_BIT(unsigned short) RED_BIT(unsigned int) RED_BIT(unsigned long)
  RED_BIT(unsigned long long) RED_BIT(int8_t) RED_BIT(int16_t) RED_BIT(int32_t)
  RED_BIT(int64_t) RED_BIT(uint8_t) RED_BIT(uint16_t) RED_BIT(uint32_t) RED_BIT(uint64_t)
  RED_BIT(size_t)
#define RED_ORD(T) (void)red_ord<T>(team, nullptr, nullptr);
  RED_ORD(char) RED_ORD(signed char) RED_ORD(short) RED_ORD(int) RED_ORD(long)
  RED_ORD(long long) RED_ORD(ptrdiff_t) RED_ORD(unsigned char) RED_ORD(unsigned short)
  RED_ORD(unsigned int) RED_ORD(unsigned long) RED_ORD(unsigned long long) RED_ORD(int8_t)
  RED_ORD(int16_t) RED_ORD(int32_t) RED_ORD(int64_t) RED_ORD(uint8_t) RED_ORD(uint16_t)
  RED_ORD(uint32_t) RED_ORD(uint64_t) RED_ORD(size_t) RED_ORD(float) RED_ORD(double)
  RED_ORD(long double)
  (void)red_arith<std::complex<float>>(team, nullptr, nullptr);
  (void)red_arith<std::complex<double>>(team, nullptr, nullptr);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  (void)old_int<int>(nullptr);
  (void)old_int<long>(nullptr);
  (void)old_int<long long>(nullptr);
  (void)old_fp<float>(nullptr);
  (void)old_fp<double>(nullptr);
#pragma GCC diagnostic pop
  sync_forms(team, pSync);
}
