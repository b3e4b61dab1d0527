// What the files defining OfiTransport's members share (ofi_setup.cpp,
// ofi_send.cpp, ofi_completions.cpp, ...): not part of its interface.
#pragma once

#include <cstddef>
#include <string>

namespace tsu::transport::ofi {

// libfabric's text for an error (the library is loaded before any call that
// can fail with one).
std::string fi_text(int rc);

// Records in one buffer start at multiples of 8 (the header's alignment).
constexpr std::size_t record_start(std::size_t at) noexcept { return (at + 7) & ~std::size_t{7}; }

}  // namespace tsu::transport::ofi
