// tsunagi's atomics as libfabric atomics: which call (plain, fetch,
// compare), datatype and operation execute one (type, op) in the adapter.
//
// Doubles: only add and fetch-add use FI_DOUBLE.  Load, store, swap and CAS
// move the 64 bits as FI_UINT64, because tsunagi's CAS on a double compares
// bits (the CPU path: -0.0 differs from 0.0, a NaN equals itself), where
// FI_CSWAP on FI_DOUBLE would compare values.
#pragma once

#include <rdma/fi_atomic.h>

#include <cstdint>

#include "tsunagi/tsunagi.h"

namespace tsu::transport::ofi {

struct FiAtomic {
  enum Kind : uint8_t { kPlain, kFetch, kCompare } kind = kPlain;
  fi_datatype datatype = FI_UINT64;
  fi_op op = FI_SUM;
};

// False for a (type, op) tsunagi does not offer.
inline bool fi_atomic_of(tsu_aop_t aop, tsu_atype_t type, FiAtomic& out) noexcept {
  const bool bitwise_double = type == TSU_TYPE_DOUBLE && aop != TSU_AOP_ADD &&
                              aop != TSU_AOP_FETCH_ADD;
  switch (type) {
    case TSU_TYPE_INT32: out.datatype = FI_INT32; break;
    case TSU_TYPE_UINT32: out.datatype = FI_UINT32; break;
    case TSU_TYPE_INT64: out.datatype = FI_INT64; break;
    case TSU_TYPE_UINT64: out.datatype = FI_UINT64; break;
    case TSU_TYPE_DOUBLE: out.datatype = bitwise_double ? FI_UINT64 : FI_DOUBLE; break;
    default: return false;
  }
  switch (aop) {
    case TSU_AOP_LOAD: out = {FiAtomic::kFetch, out.datatype, FI_ATOMIC_READ}; break;
    case TSU_AOP_STORE: out = {FiAtomic::kPlain, out.datatype, FI_ATOMIC_WRITE}; break;
    case TSU_AOP_ADD: out = {FiAtomic::kPlain, out.datatype, FI_SUM}; break;
    case TSU_AOP_FETCH_ADD: out = {FiAtomic::kFetch, out.datatype, FI_SUM}; break;
    case TSU_AOP_SWAP: out = {FiAtomic::kFetch, out.datatype, FI_ATOMIC_WRITE}; break;
    case TSU_AOP_CAS: out = {FiAtomic::kCompare, out.datatype, FI_CSWAP}; break;
    case TSU_AOP_FETCH_AND: out = {FiAtomic::kFetch, out.datatype, FI_BAND}; break;
    case TSU_AOP_FETCH_OR: out = {FiAtomic::kFetch, out.datatype, FI_BOR}; break;
    case TSU_AOP_FETCH_XOR: out = {FiAtomic::kFetch, out.datatype, FI_BXOR}; break;
    case TSU_AOP_AND: out = {FiAtomic::kPlain, out.datatype, FI_BAND}; break;
    case TSU_AOP_OR: out = {FiAtomic::kPlain, out.datatype, FI_BOR}; break;
    case TSU_AOP_XOR: out = {FiAtomic::kPlain, out.datatype, FI_BXOR}; break;
    default: return false;
  }
  return true;
}

}  // namespace tsu::transport::ofi
