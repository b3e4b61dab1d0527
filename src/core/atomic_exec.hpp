// Executes one atomic on a word this process can address.  Every tsunagi
// atomic on a CPU segment ends here — the owner's, a node peer's (on the
// shared mapping) and, with network transports, the target's progress
// thread — so they are all CPU atomics on the same memory and stay atomic
// with each other (seed 002's trap does not arise).  Words of a
// TSU_SEG_NIC_ATOMICS segment never come here: all their atomics are the
// adapter's (Runtime::execute_atomic refuses them).
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

// Validates op/type combinations without touching memory.
inline bool atomic_op_valid(tsu_aop_t op, tsu_atype_t type) noexcept {
  if (static_cast<unsigned>(op) > TSU_AOP_XOR) return false;
  if (static_cast<unsigned>(type) > TSU_TYPE_DOUBLE) return false;
  if (type == TSU_TYPE_DOUBLE) {
    switch (op) {
      case TSU_AOP_FETCH_AND: case TSU_AOP_FETCH_OR: case TSU_AOP_FETCH_XOR:
      case TSU_AOP_AND: case TSU_AOP_OR: case TSU_AOP_XOR: return false;
      default: return true;
    }
  }
  return true;
}

inline bool atomic_op_fetches(tsu_aop_t op) noexcept {
  switch (op) {
    case TSU_AOP_STORE: case TSU_AOP_ADD: case TSU_AOP_AND: case TSU_AOP_OR: case TSU_AOP_XOR:
      return false;
    default: return true;
  }
}
inline bool atomic_op_needs_operand(tsu_aop_t op) noexcept { return op != TSU_AOP_LOAD; }
inline bool atomic_op_needs_compare(tsu_aop_t op) noexcept { return op == TSU_AOP_CAS; }
inline std::size_t atomic_type_size(tsu_atype_t type) noexcept {
  return (type == TSU_TYPE_INT32 || type == TSU_TYPE_UINT32) ? 4 : 8;
}

namespace detail {
template <typename U>
U apply_int(U* word, tsu_aop_t op, U operand, U compare) noexcept {
  std::atomic_ref<U> a(*word);
  constexpr auto o = std::memory_order_seq_cst;
  switch (op) {
    case TSU_AOP_LOAD: return a.load(o);
    case TSU_AOP_STORE: a.store(operand, o); return 0;
    case TSU_AOP_ADD: case TSU_AOP_FETCH_ADD: return a.fetch_add(operand, o);
    case TSU_AOP_SWAP: return a.exchange(operand, o);
    case TSU_AOP_CAS: a.compare_exchange_strong(compare, operand, o); return compare;
    case TSU_AOP_AND: case TSU_AOP_FETCH_AND: return a.fetch_and(operand, o);
    case TSU_AOP_OR: case TSU_AOP_FETCH_OR: return a.fetch_or(operand, o);
    case TSU_AOP_XOR: case TSU_AOP_FETCH_XOR: return a.fetch_xor(operand, o);
  }
  return 0;
}

// 64-bit float operations on the word's bits, so CAS compares bitwise and all
// of them interoperate with each other.
inline uint64_t apply_double(uint64_t* word, tsu_aop_t op, uint64_t operand,
                             uint64_t compare) noexcept {
  std::atomic_ref<uint64_t> a(*word);
  constexpr auto o = std::memory_order_seq_cst;
  if (op == TSU_AOP_ADD || op == TSU_AOP_FETCH_ADD) {
    uint64_t old = a.load(std::memory_order_relaxed);
    const double add = std::bit_cast<double>(operand);
    while (!a.compare_exchange_weak(old, std::bit_cast<uint64_t>(std::bit_cast<double>(old) + add),
                                    o, std::memory_order_relaxed)) {
    }
    return old;
  }
  return apply_int<uint64_t>(word, op, operand, compare);
}
}  // namespace detail

// `word` must be aligned to the type's size (checked by the caller).
// Operands and the result travel as raw 64-bit patterns (low bytes for 32-bit).
inline uint64_t atomic_execute(void* word, tsu_aop_t op, tsu_atype_t type, uint64_t operand,
                               uint64_t compare) noexcept {
  switch (type) {
    case TSU_TYPE_INT32: case TSU_TYPE_UINT32:
      return detail::apply_int<uint32_t>(static_cast<uint32_t*>(word), op,
                                         static_cast<uint32_t>(operand),
                                         static_cast<uint32_t>(compare));
    case TSU_TYPE_INT64: case TSU_TYPE_UINT64:
      return detail::apply_int<uint64_t>(static_cast<uint64_t*>(word), op, operand, compare);
    case TSU_TYPE_DOUBLE:
      return detail::apply_double(static_cast<uint64_t*>(word), op, operand, compare);
  }
  return 0;
}

// Reads a user value of `type` into the 64-bit pattern used above.
inline uint64_t atomic_load_operand(const void* p, tsu_atype_t type) noexcept {
  if (atomic_type_size(type) == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void atomic_store_result(void* p, tsu_atype_t type, uint64_t v) noexcept {
  if (atomic_type_size(type) == 4) {
    const auto w = static_cast<uint32_t>(v);
    std::memcpy(p, &w, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

}  // namespace tsu::core
