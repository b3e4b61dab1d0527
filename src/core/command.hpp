// A request as it travels through the command ring to the executor.  Put and
// get are copies whose local side names the caller's rank.
#pragma once

#include <cstdint>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

struct ThreadContext;

struct VectorRequest;
struct VectorView;

// kVector: a vector or strided put/get (core/vector_request.hpp); dst names
// its remote rank, `vec` the request, which the executor owns once started.
enum class CommandKind : uint8_t { kCopy, kAtomic, kVector };

// What an executor (or an RMA protocol) answers for a command it started and
// will finish later through the engine's finish(id, status): never a status a
// caller sees.  (The public TSU_EAGAIN means "no room now, retry", which is
// what transports answer when full.)
inline constexpr tsu_status_t kStarted = 0x53545254;  // "STRT"

struct Command {
  tsu_gaddr_t dst;   // copy destination, or atomic target
  tsu_gaddr_t src;   // copy source
  uint64_t len;      // copy length
  uint64_t operand;  // atomic operand / compare as raw bits
  uint64_t compare;
  void* result;      // atomic result (may be null); kVector: the VectorRequest
  tsu_cb_t cb;
  ThreadContext* issuer;
  CommandKind kind;
  uint8_t aop;
  uint8_t atype;
};

}  // namespace tsu::core

namespace tsu::core {
inline VectorRequest* vector_of(const Command& cmd) noexcept {
  return static_cast<VectorRequest*>(cmd.result);
}
}  // namespace tsu::core
