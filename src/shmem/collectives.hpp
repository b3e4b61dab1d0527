// Helpers shared by the team collectives (collectives_team.cpp) and the
// active-set collectives (collectives_set.cpp): reduction element types and
// kernels (collectives_ops.cpp), checked size arithmetic.
#pragma once

#include "shmem_internal.hpp"

#include <cstddef>

namespace tsu::shmem {

size_t rtype_size(RType type) noexcept;
// fail()s when `op` is not defined on `type` (bitwise ops on integers only,
// min/max not on complex numbers).
void check_rop(RType type, ROp op, const char* fn) noexcept;
// acc[i] = acc[i] op in[i], i < n (acc and in hold `type` elements, any
// alignment).  The same code on every PE: the same inputs in the same order
// give bit-identical results.
void reduce_local(void* acc, const void* in, size_t n, RType type, ROp op) noexcept;

// How tsunagi's allreduce computes (type, op): its type, its op and how many
// of its elements make one of ours (complex sum: 2).  false: it cannot.
struct TsuReduce {
  tsu_dtype_t type;
  tsu_op_t op;
  size_t per_elem;
};
bool tsu_reduce_of(RType type, ROp op, TsuReduce* out) noexcept;

// team_broadcast, leaving the root's dest alone (the active-set form's rule).
int team_broadcast_others(Team* t, void* dest, const void* src, size_t bytes, int root,
                          const char* fn) noexcept;

// a * b, fail()ing on size_t overflow.
size_t mul_size(size_t a, size_t b, const char* fn) noexcept;

}  // namespace tsu::shmem
