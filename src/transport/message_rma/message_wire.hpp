// What the RMA protocols' messages carry: statuses as 64-bit arguments and a
// header builder (message_rma, its vector requests, ofi's key exchange).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/message.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::transport {

inline uint64_t status_arg(tsu_status_t st) {
  return static_cast<uint64_t>(static_cast<int64_t>(st));
}
inline tsu_status_t arg_status(uint64_t a) {
  return static_cast<tsu_status_t>(static_cast<int64_t>(a));
}

inline core::MessageHeader rma_header(uint16_t handler, uint64_t a0, uint64_t a1, uint64_t a2,
                                      uint64_t a3, std::size_t payload_len) {
  core::MessageHeader h{};
  h.handler = handler;
  h.payload_len = static_cast<uint32_t>(payload_len);
  h.args[0] = a0;
  h.args[1] = a1;
  h.args[2] = a2;
  h.args[3] = a3;
  return h;
}

}  // namespace tsu::transport
