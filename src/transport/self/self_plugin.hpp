// The self transport as the registry sees it (transport/node.hpp).
#pragma once

#include "transport/node.hpp"

namespace tsu::transport::self {
extern const NodePlugin kSelfPlugin;
}  // namespace tsu::transport::self
