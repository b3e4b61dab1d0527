// What the typed entry points (typed_*.cpp) share: the element-count
// check and the mapping of each C type onto the internal word kinds.
#pragma once

#include "shmem_internal.hpp"

#include <climits>
#include <cstddef>
#include <type_traits>

namespace tsu::shmem {

// nelems elements of elem bytes, in bytes; fail()s when that overflows.
inline size_t checked_bytes(size_t nelems, size_t elem, const char* fn) noexcept {
  size_t bytes = 0;
  if (__builtin_mul_overflow(nelems, elem, &bytes)) [[unlikely]]
    fail(fn, "nelems %zu of %zu-byte elements overflows size_t", nelems, elem);
  return bytes;
}

// The atomic word kind of T, by size and signedness (float and double by
// their own kinds: fetch, set and swap move the bit pattern).
template <class T>
constexpr Word word_of() noexcept {
  if constexpr (std::is_same_v<T, float>) {
    return Word::kF32;
  } else if constexpr (std::is_same_v<T, double>) {
    return Word::kF64;
  } else {
    static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                  "OpenSHMEM atomic types are 32- or 64-bit integers here");
    if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? Word::kI32 : Word::kU32;
    else return std::is_signed_v<T> ? Word::kI64 : Word::kU64;
  }
}

// The comparison kind of the point-to-point synchronization types.
template <class T>
constexpr SyncType sync_of() noexcept {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8),
                "OpenSHMEM sync types are 16-, 32- or 64-bit integers here");
  if constexpr (sizeof(T) == 2) return std::is_signed_v<T> ? SyncType::kI16 : SyncType::kU16;
  else if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? SyncType::kI32 : SyncType::kU32;
  else return std::is_signed_v<T> ? SyncType::kI64 : SyncType::kU64;
}

// The reduction element type of a TYPENAME: RType::TSU_RTYPE(int) is
// RType::kInt (by name: char, signed char and int8_t stay apart as the
// specification lists them).
#define TSU_RTYPE(N) TSU_RTYPE_##N
#define TSU_RTYPE_char kChar
#define TSU_RTYPE_schar kSChar
#define TSU_RTYPE_short kShort
#define TSU_RTYPE_int kInt
#define TSU_RTYPE_long kLong
#define TSU_RTYPE_longlong kLongLong
#define TSU_RTYPE_ptrdiff kPtrdiff
#define TSU_RTYPE_uchar kUChar
#define TSU_RTYPE_ushort kUShort
#define TSU_RTYPE_uint kUInt
#define TSU_RTYPE_ulong kULong
#define TSU_RTYPE_ulonglong kULongLong
#define TSU_RTYPE_int8 kI8
#define TSU_RTYPE_int16 kI16
#define TSU_RTYPE_int32 kI32
#define TSU_RTYPE_int64 kI64
#define TSU_RTYPE_uint8 kU8
#define TSU_RTYPE_uint16 kU16
#define TSU_RTYPE_uint32 kU32
#define TSU_RTYPE_uint64 kU64
#define TSU_RTYPE_size kSize
#define TSU_RTYPE_float kFloat
#define TSU_RTYPE_double kDouble
#define TSU_RTYPE_longdouble kLongDouble
#define TSU_RTYPE_complexf kComplexF
#define TSU_RTYPE_complexd kComplexD

// The ABI facts the lists of shmem.h rely on (LP64: long, size_t and
// ptrdiff_t are 64-bit; int32_t is int and int64_t is long, so the generic
// names need no separate fixed-width entries).
static_assert(sizeof(long) == 8 && sizeof(size_t) == 8 && sizeof(ptrdiff_t) == 8);
static_assert(std::is_same_v<int32_t, int> && std::is_same_v<int64_t, long>);
static_assert(std::is_same_v<int8_t, signed char> && std::is_same_v<int16_t, short>);

}  // namespace tsu::shmem
