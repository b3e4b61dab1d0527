// Element-wise reduction kernels of the collectives: acc[i] = acc[i] op in[i]
// for every tsu_dtype_t x tsu_op_t pair the API accepts.
#pragma once

#include <cstddef>

#include "tsunagi/tsunagi.h"

namespace tsu::coll {

// Bytes per element; 0 for a value outside tsu_dtype_t.
std::size_t dtype_size(tsu_dtype_t type) noexcept;

// acc = acc op in, element-wise over `count` elements (either may be
// unaligned; they must not overlap).  Bitwise ops on floating types leave acc.
void combine(tsu_dtype_t type, tsu_op_t op, std::byte* acc, const std::byte* in,
             std::size_t count) noexcept;

}  // namespace tsu::coll
