#include "coll/reduce_ops.hpp"

#include <cstring>
#include <type_traits>

namespace tsu::coll {

namespace {

// The op is chosen once per call, outside the element loop, so that each loop
// is a plain vectorizable kernel (large allreduce spends its time here).
template <typename T, typename F>
void combine_with(std::byte* out, const std::byte* a, const std::byte* in, std::size_t count,
                  F f) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    T x, y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, in + i * sizeof(T), sizeof(T));
    const T r = f(x, y);
    std::memcpy(out + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T>
void combine_typed(tsu_op_t op, std::byte* out, const std::byte* a, const std::byte* in,
                   std::size_t count) noexcept {
  switch (op) {
    case TSU_OP_SUM:
      combine_with<T>(out, a, in, count, [](T x, T y) { return static_cast<T>(x + y); });
      break;
    case TSU_OP_PROD:
      combine_with<T>(out, a, in, count, [](T x, T y) { return static_cast<T>(x * y); });
      break;
    case TSU_OP_MIN:
      combine_with<T>(out, a, in, count, [](T x, T y) { return y < x ? y : x; });
      break;
    case TSU_OP_MAX:
      combine_with<T>(out, a, in, count, [](T x, T y) { return x < y ? y : x; });
      break;
    case TSU_OP_BAND:
      if constexpr (std::is_integral_v<T>)
        combine_with<T>(out, a, in, count, [](T x, T y) { return static_cast<T>(x & y); });
      else if (out != a)
        std::memmove(out, a, count * sizeof(T));
      break;
    case TSU_OP_BOR:
      if constexpr (std::is_integral_v<T>)
        combine_with<T>(out, a, in, count, [](T x, T y) { return static_cast<T>(x | y); });
      else if (out != a)
        std::memmove(out, a, count * sizeof(T));
      break;
  }
}

}  // namespace

std::size_t dtype_size(tsu_dtype_t t) noexcept {
  switch (t) {
    case TSU_DT_INT8: case TSU_DT_UINT8: return 1;
    case TSU_DT_INT16: case TSU_DT_UINT16: return 2;
    case TSU_DT_INT32: case TSU_DT_UINT32: case TSU_DT_FLOAT: return 4;
    case TSU_DT_INT64: case TSU_DT_UINT64: case TSU_DT_DOUBLE: return 8;
  }
  return 0;
}

void combine_into(tsu_dtype_t t, tsu_op_t op, std::byte* out, const std::byte* a,
                  const std::byte* in, std::size_t count) noexcept {
  switch (t) {
    case TSU_DT_INT8: combine_typed<int8_t>(op, out, a, in, count); break;
    case TSU_DT_UINT8: combine_typed<uint8_t>(op, out, a, in, count); break;
    case TSU_DT_INT16: combine_typed<int16_t>(op, out, a, in, count); break;
    case TSU_DT_UINT16: combine_typed<uint16_t>(op, out, a, in, count); break;
    case TSU_DT_INT32: combine_typed<int32_t>(op, out, a, in, count); break;
    case TSU_DT_UINT32: combine_typed<uint32_t>(op, out, a, in, count); break;
    case TSU_DT_INT64: combine_typed<int64_t>(op, out, a, in, count); break;
    case TSU_DT_UINT64: combine_typed<uint64_t>(op, out, a, in, count); break;
    case TSU_DT_FLOAT: combine_typed<float>(op, out, a, in, count); break;
    case TSU_DT_DOUBLE: combine_typed<double>(op, out, a, in, count); break;
  }
}

}  // namespace tsu::coll
