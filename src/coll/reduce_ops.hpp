// Element-wise reduction kernels of the collectives: acc[i] = acc[i] op in[i]
// for every tsu_dtype_t x tsu_op_t pair the API accepts.
#pragma once

#include <cstddef>

#include "tsunagi/tsunagi.h"

namespace tsu::coll {

// Bytes per element; 0 for a value outside tsu_dtype_t.
std::size_t dtype_size(tsu_dtype_t type) noexcept;

// out = a op in, element-wise over `count` elements (any may be unaligned;
// out may be a, else none may overlap).  Bitwise ops on floating types copy a.
void combine_into(tsu_dtype_t type, tsu_op_t op, std::byte* out, const std::byte* a,
                  const std::byte* in, std::size_t count) noexcept;

// acc = acc op in (they must not overlap).
inline void combine(tsu_dtype_t type, tsu_op_t op, std::byte* acc, const std::byte* in,
                    std::size_t count) noexcept {
  combine_into(type, op, acc, acc, in, count);
}

}  // namespace tsu::coll
