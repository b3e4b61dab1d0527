// Reduction kernels of the collectives, on every OpenSHMEM reduction type.
#include "collectives.hpp"

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tsu::shmem {

namespace {

template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the C++ type of `type`.
template <typename F>
decltype(auto) with_type(RType type, F&& f) {
  switch (type) {
    case RType::kChar: return f(Tag<char>{});
    case RType::kSChar: return f(Tag<signed char>{});
    case RType::kShort: return f(Tag<short>{});
    case RType::kInt: return f(Tag<int>{});
    case RType::kLong: return f(Tag<long>{});
    case RType::kLongLong: return f(Tag<long long>{});
    case RType::kPtrdiff: return f(Tag<ptrdiff_t>{});
    case RType::kUChar: return f(Tag<unsigned char>{});
    case RType::kUShort: return f(Tag<unsigned short>{});
    case RType::kUInt: return f(Tag<unsigned int>{});
    case RType::kULong: return f(Tag<unsigned long>{});
    case RType::kULongLong: return f(Tag<unsigned long long>{});
    case RType::kI8: return f(Tag<int8_t>{});
    case RType::kI16: return f(Tag<int16_t>{});
    case RType::kI32: return f(Tag<int32_t>{});
    case RType::kI64: return f(Tag<int64_t>{});
    case RType::kU8: return f(Tag<uint8_t>{});
    case RType::kU16: return f(Tag<uint16_t>{});
    case RType::kU32: return f(Tag<uint32_t>{});
    case RType::kU64: return f(Tag<uint64_t>{});
    case RType::kSize: return f(Tag<size_t>{});
    case RType::kFloat: return f(Tag<float>{});
    case RType::kDouble: return f(Tag<double>{});
    case RType::kLongDouble: return f(Tag<long double>{});
    case RType::kComplexF: return f(Tag<std::complex<float>>{});
    case RType::kComplexD: break;
  }
  return f(Tag<std::complex<double>>{});
}

template <typename T>
constexpr bool kComplex = !std::is_arithmetic_v<T>;

template <typename T, typename F>
void apply(void* acc, const void* in, size_t n, F f) {
  auto* a = static_cast<unsigned char*>(acc);
  const auto* b = static_cast<const unsigned char*>(in);
  for (size_t i = 0; i < n; ++i) {
    T x;
    T y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b + i * sizeof(T), sizeof(T));
    const T r = f(x, y);
    std::memcpy(a + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T>
void reduce_typed(void* acc, const void* in, size_t n, ROp op) {
  if constexpr (std::is_integral_v<T>) {
    // Sums and products wrap (in unsigned arithmetic: no undefined overflow,
    // no promotion of short operands to int).
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    switch (op) {
      case ROp::kAnd: return apply<T>(acc, in, n, [](T x, T y) { return static_cast<T>(x & y); });
      case ROp::kOr: return apply<T>(acc, in, n, [](T x, T y) { return static_cast<T>(x | y); });
      case ROp::kXor: return apply<T>(acc, in, n, [](T x, T y) { return static_cast<T>(x ^ y); });
      case ROp::kMax: return apply<T>(acc, in, n, [](T x, T y) { return x < y ? y : x; });
      case ROp::kMin: return apply<T>(acc, in, n, [](T x, T y) { return y < x ? y : x; });
      case ROp::kSum:
        return apply<T>(acc, in, n, [](T x, T y) {
          return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
        });
      case ROp::kProd:
        return apply<T>(acc, in, n, [](T x, T y) {
          return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
        });
    }
  } else {
    switch (op) {
      case ROp::kSum: return apply<T>(acc, in, n, [](T x, T y) { return x + y; });
      case ROp::kProd: return apply<T>(acc, in, n, [](T x, T y) { return x * y; });
      case ROp::kMax:
        if constexpr (!kComplex<T>) return apply<T>(acc, in, n, [](T x, T y) { return x < y ? y : x; });
        break;
      case ROp::kMin:
        if constexpr (!kComplex<T>) return apply<T>(acc, in, n, [](T x, T y) { return y < x ? y : x; });
        break;
      case ROp::kAnd:
      case ROp::kOr:
      case ROp::kXor: break;  // refused by check_rop
    }
  }
}

template <typename T>
constexpr tsu_dtype_t int_dtype() {
  if constexpr (sizeof(T) == 1) return std::is_signed_v<T> ? TSU_DT_INT8 : TSU_DT_UINT8;
  else if constexpr (sizeof(T) == 2) return std::is_signed_v<T> ? TSU_DT_INT16 : TSU_DT_UINT16;
  else if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? TSU_DT_INT32 : TSU_DT_UINT32;
  else return std::is_signed_v<T> ? TSU_DT_INT64 : TSU_DT_UINT64;
}

}  // namespace

size_t rtype_size(RType type) noexcept {
  return with_type(type, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

void check_rop(RType type, ROp op, const char* fn) noexcept {
  const bool ok = with_type(type, [op](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case ROp::kAnd:
      case ROp::kOr:
      case ROp::kXor: return std::is_integral_v<T>;
      case ROp::kMax:
      case ROp::kMin: return !kComplex<T>;
      case ROp::kSum:
      case ROp::kProd: return true;
    }
    return false;
  });
  if (!ok) fail(fn, "this reduction is not defined on this element type");
}

void reduce_local(void* acc, const void* in, size_t n, RType type, ROp op) noexcept {
  with_type(type, [&](auto tag) { reduce_typed<typename decltype(tag)::type>(acc, in, n, op); });
}

bool tsu_reduce_of(RType type, ROp op, TsuReduce* out) noexcept {
  return with_type(type, [op, out](auto tag) {
    using T = typename decltype(tag)::type;
    out->per_elem = 1;
    switch (op) {
      case ROp::kAnd: out->op = TSU_OP_BAND; break;
      case ROp::kOr: out->op = TSU_OP_BOR; break;
      case ROp::kXor: return false;
      case ROp::kMax: out->op = TSU_OP_MAX; break;
      case ROp::kMin: out->op = TSU_OP_MIN; break;
      case ROp::kSum: out->op = TSU_OP_SUM; break;
      case ROp::kProd: out->op = TSU_OP_PROD; break;
    }
    if constexpr (std::is_integral_v<T>) {
      out->type = int_dtype<T>();
      return true;
    } else if constexpr (std::is_same_v<T, float>) {
      out->type = TSU_DT_FLOAT;
      return true;
    } else if constexpr (std::is_same_v<T, double>) {
      out->type = TSU_DT_DOUBLE;
      return true;
    } else if constexpr (std::is_same_v<T, std::complex<float>> ||
                         std::is_same_v<T, std::complex<double>>) {
      // A complex sum is the sum of its real and imaginary parts.
      out->type = std::is_same_v<T, std::complex<float>> ? TSU_DT_FLOAT : TSU_DT_DOUBLE;
      out->per_elem = 2;
      return op == ROp::kSum;
    } else {
      return false;  // long double
    }
  });
}

size_t mul_size(size_t a, size_t b, const char* fn) noexcept {
  size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail(fn, "the size overflows (%zu * %zu)", a, b);
  return r;
}

}  // namespace tsu::shmem
