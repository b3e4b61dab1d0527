// The calling rank itself: its own segment table, plain pointers.
// The smallest transport; the reference for writing a new one.
#pragma once

#include "core/segment_table.hpp"
#include "transport/transport.hpp"

namespace tsu::transport {

class SelfTransport final : public Transport {
 public:
  explicit SelfTransport(const core::SegmentTable& segments) : segments_(segments) {}
  const char* name() const noexcept override { return "self"; }
  uint32_t capabilities() const noexcept override { return kCapMemoryAccess; }
  tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len, Access& out) noexcept override {
    std::byte* p;
    const tsu_status_t st = segments_.translate(addr.seg, addr.offset, len, p);
    if (st == TSU_OK) out = Access{Access::kDirect, p, 0, 0};
    return st;
  }

 private:
  const core::SegmentTable& segments_;
};

}  // namespace tsu::transport
